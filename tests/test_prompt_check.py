"""A harness's first prompt is recorded per rollout (`<rollout>/prompt.json`) and compared within a run:
a changed tool set or system prompt stops the run with an error naming the harness and the change.
Calls come from the real proxy (scripted engine) on a real port, sent with real tool sets."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessrl.chat.format import ChatFormat
from harnessrl.chat.tokenizers import qwen3_tokenizer
from harnessrl.engines.scripted import ScriptedEngine
from harnessrl.formats import FormatError
from harnessrl.formats.first_prompt import PROMPT_FILE, FirstPrompt, read_first_prompt, write_first_prompt
from harnessrl.proxy.deps import default_deps
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.sessions import SessionStore
from harnessrl.rollout.artifacts import write_artifacts
from harnessrl.rollout.prompt_check import PromptChanged, PromptCheck, first_prompt
from harnessrl.rollout.runner import RolloutJob, run_all
from harnessrl.types import ModelCall, Rollout, Task, TaskEnvironment


def tool(name: str, description: str = "") -> dict[str, Any]:
    params = {"type": "object", "properties": {"command": {"type": "string"}}}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


BASE = [tool("terminal", "run a command"), tool("read_file"), tool("write_file")]
BROWSER = [tool("browser_navigate"), tool("browser_click")]


def body(system: str, tools: list[dict[str, Any]], user: str = "task") -> dict[str, Any]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return {"model": "m", "max_tokens": 4, "messages": messages, "tools": tools}


@pytest.fixture(scope="module")
def record() -> Any:
    """`record(rollout_id, *bodies)`: the calls the real proxy records for those requests."""
    fmt = ChatFormat(qwen3_tokenizer())
    engine = ScriptedEngine(fmt, ["done"], exhausted="repeat_last")
    deps = default_deps(engine, fmt, SessionStore())
    server = ThreadedProxyServer(deps).start()

    def run(rollout_id: str, *bodies: dict[str, Any]) -> list[ModelCall]:
        info = deps.sessions.open(rollout_id)
        for b in bodies:
            assert httpx.post(info.openai_base_url + "/chat/completions", json=b).status_code == 200
        return deps.sessions.calls(rollout_id)

    yield run
    server.stop()


def rollout(rid: str, calls: list[ModelCall], harness: str = "hermes") -> Rollout:
    return Rollout(rollout_id=rid, task_id="t", harness=harness, calls=calls)


def test_the_proxy_records_tool_names_and_the_first_prompt_is_the_main_threads(record: Any) -> None:
    # a side call with its own system prompt comes first; the main thread makes the most of the run
    calls = record("r1", body("title it", []), body("agent", BASE), body("agent", BASE, "more"))
    names = ["terminal", "read_file", "write_file"]
    assert [c.tool_names for c in calls] == [[], names, names]
    prompt = first_prompt(rollout("r1", calls))
    assert prompt is not None
    assert (prompt.harness, prompt.call_index, prompt.tools) == (
        "hermes",
        1,
        ["terminal", "read_file", "write_file"],
    )
    assert (prompt.system_digest, prompt.tools_digest) == (calls[1].system_digest, calls[1].tools_digest)
    assert prompt.prompt_tokens == len(calls[1].prompt_ids)
    assert first_prompt(rollout("r0", [])) is None


def test_a_sub_agent_that_outlasts_its_agent_does_not_change_the_first_prompt(record: Any) -> None:
    """The agent delegates in its first call and the rollout ends while the helper runs (a timeout):
    the helper made more calls, with other tools; the first prompt is still the agent's, so what
    the policy did never stops the run."""
    helper = [tool("terminal", "run a command")]
    calls = record(
        "r2", body("agent", [*BASE, tool("delegate")]), body("helper", helper), body("helper", helper, "x")
    )
    prompt = first_prompt(rollout("r2", calls))
    assert prompt is not None and (prompt.call_index, prompt.tools[-1]) == (0, "delegate")
    agent = [*BASE, tool("delegate")]
    alone = record("r3", body("agent", agent), body("agent", agent, "y"))
    both = [rollout("r3", alone), rollout("r2", calls)]
    assert PromptCheck().observe(both) == both


def test_the_check_fires_on_a_changed_tool_set(record: Any) -> None:
    check = PromptCheck()
    same = [rollout(f"a{i}", record(f"a{i}", body("agent", BASE, f"task {i}"))) for i in range(2)]
    assert check.observe(same) == same  # the task's prompt differs, the harness's does not
    browser = rollout("b", record("b", body("agent", BASE + BROWSER)))
    with pytest.raises(PromptChanged) as e:
        check.observe([browser])
    assert str(e.value).splitlines()[0] == (
        "harness hermes: first prompt changed (rollout b against a0): "
        "tools added: browser_navigate, browser_click"
    )
    fewer = rollout("c", record("c", body("agent v2", BASE[:2])))
    other = rollout("e", record("e", body("other", BASE[:1])), harness="codex")  # its own first prompt
    with pytest.raises(PromptChanged) as e:
        check.observe([fewer, other])
    assert str(e.value).splitlines()[0] == (
        "harness hermes: first prompt changed (rollout c against a0): tools removed: write_file; "
        "the system prompt changed"
    )


def test_the_same_tools_with_other_text_is_a_warning_once(
    record: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A date or the task's files in a system prompt change within a run: logged, the run goes on."""
    check = PromptCheck()
    first = rollout("a", record("f0", body("agent, 2026-12-03", BASE)))
    dated = [rollout(f"d{i}", record(f"f{i}", body("agent, 2026-12-04", BASE))) for i in (1, 2)]
    reworded = rollout("w", record("fw", body("agent, 2026-12-03", [tool("terminal", "run it"), *BASE[1:]])))
    with caplog.at_level(logging.WARNING, logger="harnessrl.rollout.prompt_check"):
        assert check.observe([first, *dated, reworded]) == [first, *dated, reworded]
    assert [r.getMessage() for r in caplog.records] == [
        "harness hermes: first prompt changed (rollout d1 against a): the system prompt changed "
        "(the same tools: a date or the task's files, most likely)",
        "harness hermes: first prompt changed (rollout w against a): the tools' descriptions, schemas "
        "or order changed (the same tools: a date or the task's files, most likely)",
    ]


def test_run_all_checks_each_batch(record: Any) -> None:
    made = {
        "x": rollout("x", record("x", body("agent", BASE))),
        "y": rollout("y", record("y", body("agent", BROWSER))),
    }

    async def run(job: RolloutJob) -> Rollout:
        return made[job.rollout_id]

    task = Task(id="t", prompt="p")
    jobs = [RolloutJob(task, "hermes", rollout_id=r) for r in ("x", "y")]
    check = PromptCheck()
    with pytest.raises(
        PromptChanged,
        match=r"\(rollout y against x\): tools added: browser_navigate, browser_click; tools removed: ter",
    ):
        asyncio.run(run_all(run, jobs, asyncio.Semaphore(2), None, check))


def test_prompt_json_is_written_with_the_artifacts_and_read_back(record: Any, tmp_path: Path) -> None:
    r = rollout("w", record("w", body("agent", BASE)))
    (tmp_path / "ws").mkdir()
    write_artifacts(tmp_path, r, None, tmp_path / "initial", tmp_path / "ws")
    assert read_first_prompt(tmp_path) == first_prompt(r)
    empty = tmp_path / "none"
    empty.mkdir()
    write_artifacts(empty, rollout("n", []), None, tmp_path / "initial", tmp_path / "ws")
    assert not (empty / PROMPT_FILE).exists()


def test_the_reader_names_the_file_on_bad_bytes(tmp_path: Path) -> None:
    prompt = FirstPrompt(
        harness="h", call_index=0, system_digest="s", tools_digest="t", tools=["a"], prompt_tokens=3
    )
    write_first_prompt(tmp_path, prompt)
    text = (tmp_path / PROMPT_FILE).read_bytes()
    for bad, why in [
        (text[: len(text) // 2], "not JSON"),
        (b"\xff" + text, "not UTF-8"),
        (b'{"harness": "h"}', "call_index: Field required"),
        (b"[]", "not a JSON object"),
    ]:
        (tmp_path / PROMPT_FILE).write_bytes(bad)
        with pytest.raises(FormatError, match=why) as e:
            read_first_prompt(tmp_path)
        assert str(e.value).startswith(str(tmp_path / PROMPT_FILE))


def test_each_image_is_compared_on_its_own(record: Any) -> None:
    """A task's image legitimately shows a harness other programs (chromium: Hermes' browser tools),
    so the first prompt is fixed per (harness, system): the host and each image apart."""
    made = {
        "h": rollout("h", record("h", body("agent", BASE))),
        "i": rollout("i", record("i", body("agent", BASE + BROWSER))),
        "i2": rollout("i2", record("i2", body("agent", BASE + BROWSER, "again"))),
        "j": rollout("j", record("j", body("agent", BASE))),
    }

    async def run(job: RolloutJob) -> Rollout:
        return made[job.rollout_id]

    host = Task(id="t", prompt="p")
    chromium = Task(id="u", prompt="p", environment=TaskEnvironment(image="localhost/chromium:1"))
    check = PromptCheck()
    jobs = [RolloutJob(host, "hermes", rollout_id="h"), RolloutJob(chromium, "hermes", rollout_id="i")]
    assert asyncio.run(run_all(run, jobs, asyncio.Semaphore(2), None, check)) == [made["h"], made["i"]]
    again = [RolloutJob(chromium, "hermes", rollout_id="i2"), RolloutJob(chromium, "hermes", rollout_id="j")]
    with pytest.raises(PromptChanged) as e:
        asyncio.run(run_all(run, again, asyncio.Semaphore(2), None, check))
    assert str(e.value).splitlines()[0] == (
        "harness hermes on image localhost/chromium:1: first prompt changed (rollout j against i): "
        "tools removed: browser_navigate, browser_click"
    )
