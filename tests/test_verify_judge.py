"""Rubric judge against a real OpenAI-compatible server on 127.0.0.1, and hybrid scoring."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from harnessrl.config import JudgeConfig, VerifyConfig
from harnessrl.types import Checker, RubricRule, Task, TaskFile, VerifierError
from harnessrl.verify import RubricJudge, score_task
from harnessrl.verify.judge import parse_score

# rule name -> the replies the fake judge gives, in order (the last one repeats)
REPLIES: dict[str, list[str]] = {
    "good": ['{"score": 1, "reason": "all there"}'],
    "prose": ['Let me look.\nThe file is decent.\n{"score": 0.5, "reason": "partly"}\nHope this helps!'],
    "bare": ["0.25"],
    "garbage": ["I would rather not say."],
    "offlevel": ['{"score": 0.7}'],
    "flaky": ["hmm", '{"score": 1}'],
    "digest": ['{"score": 1}'],
    "refused": ["HTTP 400"],  # the judge refuses the request (e.g. its evidence is too long)
    "outage": ["HTTP 503"],
}


class FakeJudge:
    """Answers by the rule name found in the prompt; records every request body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        self.auth.append(request.headers.get("authorization"))
        m = re.search(r"Rubric rule `(\w+)`", body["messages"][1]["content"])
        name = m.group(1) if m else "garbage"
        seen = sum(1 for b in self.requests if f"Rubric rule `{name}`" in b["messages"][1]["content"])
        replies = REPLIES[name]
        text = replies[min(seen, len(replies)) - 1]
        if text.startswith("HTTP "):
            return JSONResponse({"error": {"message": "refused"}}, status_code=int(text[5:]))
        return JSONResponse({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})

    def count(self, name: str) -> int:
        return sum(1 for b in self.requests if f"Rubric rule `{name}`" in b["messages"][1]["content"])


@pytest.fixture
def judge_server() -> Iterator[tuple[FakeJudge, str]]:
    fake = FakeJudge()
    app = Starlette(routes=[Route("/v1/chat/completions", fake.chat, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield fake, f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


def rule(name: str, file_path: str | None = "report.md", levels: dict[str, str] | None = None) -> RubricRule:
    scores = levels or {"0": "missing", "0.25": "weak", "0.5": "partial", "1": "complete"}
    return RubricRule(name=name, file_path=file_path, description=f"check {name}", scores=scores)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    (d / "report.md").write_text("# Report\nTotal: 42\n")
    return d


def make_judge(url: str, retries: int = 2) -> RubricJudge:
    return RubricJudge(
        JudgeConfig(base_url=url, model="judge-x", max_retries=retries, api_key_env="HRL_TEST_KEY")
    )


async def test_judge_good_prose_bare_garbage(
    judge_server: tuple[FakeJudge, str], ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = judge_server
    monkeypatch.setenv("HRL_TEST_KEY", "sk-test")
    rules = [rule("good"), rule("prose"), rule("bare"), rule("garbage"), rule("offlevel"), rule("flaky")]
    judge = make_judge(url)
    try:
        result = await judge.score(Task(id="t", prompt="write report.md", rubric=rules), ws)
    finally:
        await judge.aclose()
    assert result.per_rule == {
        "good": 1.0,
        "prose": 0.5,
        "bare": 0.25,
        "garbage": 0.0,
        "offlevel": 0.0,
        "flaky": 1.0,
    }
    assert result.mean == 2.75 / 6
    assert result.errors == {
        "garbage": "unparsable judge answer: 'I would rather not say.' (after 3 attempts)",
        "offlevel": "unparsable judge answer: '{\"score\": 0.7}' (after 3 attempts)",
    }
    assert [fake.count(n) for n in ("good", "prose", "bare", "garbage", "offlevel", "flaky")] == [
        1,
        1,
        1,
        3,
        3,
        2,
    ]
    first = fake.requests[0]
    assert first["model"] == "judge-x" and first["temperature"] == 0.0
    assert "# Report\nTotal: 42" in first["messages"][1]["content"]
    assert set(fake.auth) == {"Bearer sk-test"}


async def test_missing_file_scores_zero_without_asking(judge_server: tuple[FakeJudge, str], ws: Path) -> None:
    fake, url = judge_server
    rules = [rule("good", file_path="nope.md"), rule("good", file_path="../outside.md"), rule("digest", None)]
    rules[1] = rules[1].model_copy(update={"name": "escape"})
    (ws / "data").mkdir()
    (ws / "data" / "x.csv").write_text("a,b\n")
    (ws / "data" / "blob.bin").write_bytes(b"\x00\x01binary")
    rules.append(rule("good", levels={"none": "x", "1": "y"}).model_copy(update={"name": "badlevels"}))
    judge = make_judge(url, retries=0)
    try:
        result = await judge.score(Task(id="t", prompt="p", rubric=rules), ws)
    finally:
        await judge.aclose()
    assert result.per_rule == {"good": 0.0, "escape": 0.0, "digest": 1.0, "badlevels": 0.0}
    assert result.errors == {
        "good": "file 'nope.md' is missing",
        "escape": "path '../outside.md' escapes the task directory",
        "badlevels": "rule levels ['1', 'none'] are not all numbers",
    }
    [only] = fake.requests
    user = only["messages"][1]["content"]
    assert "Files in the workspace:\n- data/blob.bin\n- data/x.csv\n- report.md" in user
    assert "=== data/blob.bin ===" not in user and "=== data/x.csv ===\na,b\n" in user
    assert "=== report.md ===\n# Report\nTotal: 42" in user


async def test_a_file_name_that_is_not_utf8_still_reaches_the_judge(
    judge_server: tuple[FakeJudge, str], ws: Path
) -> None:
    """The agent names its files: `x\\xff` in the digest could not be encoded, every attempt failed
    before sending, and the rollout ended verifier_error of the infrastructure (never trained)."""
    import os

    fake, url = judge_server
    (ws / os.fsdecode(b"x\xff.txt")).write_text("odd\n")
    judge = make_judge(url, retries=0)
    try:
        result = await judge.score(Task(id="t", prompt="p", rubric=[rule("digest", None)]), ws)
    finally:
        await judge.aclose()
    assert (result.per_rule, result.errors) == ({"digest": 1.0}, {})
    [sent] = fake.requests
    assert (
        "- x\\xff.txt" in sent["messages"][1]["content"]
        and "=== x\\xff.txt ===\nodd" in sent["messages"][1]["content"]
    )


async def test_unreachable_judge_is_a_verifier_error(ws: Path) -> None:
    """An outage is not the policy's doing: it raises (the rollout ends verifier_error, never trained)
    instead of scoring the rule 0."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    judge = make_judge(f"http://127.0.0.1:{port}/v1", retries=1)
    try:
        with pytest.raises(
            VerifierError, match=r"rule 'good' of task 't': judge request failed: ConnectError"
        ) as e:
            await judge.score(Task(id="t", prompt="p", rubric=[rule("good")]), ws)
    finally:
        await judge.aclose()
    assert str(e.value).endswith("(after 2 attempts)") and f"127.0.0.1:{port}" in str(e.value)


async def test_a_judge_refusing_the_evidence_scores_the_rule_0_and_an_outage_raises(
    judge_server: tuple[FakeJudge, str], ws: Path
) -> None:
    """The evidence is the agent's files: a judge that refuses the request for its content (400, 413,
    422) scores the rule 0 at once (a way out of a score would otherwise be a file the judge cannot
    take); a judge that keeps failing with a server error is an outage: VerifierError."""
    fake, url = judge_server
    judge = make_judge(url, retries=2)
    try:
        result = await judge.score(Task(id="t", prompt="p", rubric=[rule("refused"), rule("good")]), ws)
        assert result.per_rule == {"refused": 0.0, "good": 1.0}
        assert result.errors == {
            "refused": 'judge request failed: HTTP 400: \'{"error":{"message":"refused"}}\''
        }
        assert fake.count("refused") == 1
        with pytest.raises(VerifierError, match=r"rule 'outage' .* HTTP 503.*\(after 3 attempts\)"):
            await judge.score(Task(id="t", prompt="p", rubric=[rule("outage")]), ws)
    finally:
        await judge.aclose()
    assert fake.count("outage") == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"score": 0.5}', 0.5),
        ('ok {"reason": "x"} then {"score": "1"}', 1.0),
        (" 0.25 \n", 0.25),
        ("I'd say 0.5 overall.", 0.5),
        ("between 0.5 and 1", None),
        ("0.3", None),
        ("", None),
    ],
)
def test_parse_score(text: str, expected: float | None) -> None:
    assert parse_score(text, [0.0, 0.25, 0.5, 1.0]) == expected


CODE_HALF = "def grade(t, w):\n    return {'a': 1.0, 'b': 0.0}\n"


def hybrid_task(kind: str, weights: dict[str, float] | None = None) -> Task:
    checker = Checker(files=[TaskFile(path="reward/check.py", content=CODE_HALF)])
    return Task(
        id="h",
        prompt="p",
        grading_type=kind,  # type: ignore[arg-type]
        checker=checker if kind != "llm_judge" else None,
        rubric=[rule("bare"), rule("good")],  # mean 0.625
        grading_weights=weights or {},
    )


async def _score(task: Task, ws: Path, url: str, cfg: VerifyConfig) -> tuple[float, dict[str, Any]]:
    judge = make_judge(url)
    try:
        s = await score_task(task, ws, cfg, judge=judge)
    finally:
        await judge.aclose()
    return s.reward, s.detail


async def test_hybrid_weights(judge_server: tuple[FakeJudge, str], ws: Path) -> None:
    _, url = judge_server
    cfg = VerifyConfig()
    reward, detail = await _score(hybrid_task("automated"), ws, url, cfg)
    assert (reward, detail["code"]["metrics"], "rubric" in detail) == (0.5, {"a": 1.0, "b": 0.0}, False)
    reward, detail = await _score(hybrid_task("llm_judge"), ws, url, cfg)
    assert (reward, "code" in detail) == (0.625, False)
    reward, detail = await _score(hybrid_task("hybrid"), ws, url, cfg)
    assert reward == pytest.approx(0.7 * 0.5 + 0.3 * 0.625, abs=1e-12)
    assert detail["weights"] == {"automated": 0.7, "llm_judge": 0.3}
    reward, detail = await _score(hybrid_task("hybrid", {"automated": 0.5, "llm_judge": 0.5}), ws, url, cfg)
    assert (reward, detail["weights"]) == (0.5625, {"automated": 0.5, "llm_judge": 0.5})
    cfg = VerifyConfig(code_weight=0.25, rubric_weight=0.75)
    reward, _ = await _score(hybrid_task("hybrid"), ws, url, cfg)
    assert reward == 0.25 * 0.5 + 0.75 * 0.625


async def test_judge_required(ws: Path) -> None:
    with pytest.raises(VerifierError, match="no judge was given"):
        await score_task(hybrid_task("hybrid"), ws, VerifyConfig())


async def test_checker_timeout_from_config(ws: Path) -> None:
    hang = Checker(files=[TaskFile(path="reward/check.py", content="import time\ntime.sleep(60)\n")])
    s = await score_task(Task(id="slow", prompt="p", checker=hang), ws, VerifyConfig(checker_timeout_s=1.0))
    assert (s.reward, s.detail["code"]["error"]) == (0.0, "checker timed out after 1 s")
