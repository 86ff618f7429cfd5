"""The white-box harness end to end: real bubblewrap sandboxes, the live proxy, real checkers, the
reference engine emitting each task's reference commands in whatever format a configuration needs.

Every configuration solves the bundled warmup task (a seeded sample of 12 by default, all 243 under
`slow`); captured requests show that each factor's three levels change what the model sees; malformed
output becomes an observation; compaction calls are classified by `trace/` and not trained."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from harnessrl.chat.format import ChatFormat
from harnessrl.config import Config
from harnessrl.engines.models import load_tokenizer
from harnessrl.engines.scripted import Script, ScriptedEngine
from harnessrl.harnesses.whitebox.agent import context, workflow
from harnessrl.harnesses.whitebox.reference import ReferenceEngine
from harnessrl.protocols import Engine
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.session import RolloutStack, reference_command
from harnessrl.scaling import all_codes, harness_name
from harnessrl.tasks import load_tasks
from harnessrl.trace import trace_rollout
from harnessrl.types import ChatMessage, ModelCall, Rollout, RolloutStatus, Task, ToolCall

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

SAMPLE = sorted(random.Random(13).sample(all_codes(), 12))
FMT = ChatFormat(load_tokenizer("tiny-qwen3"))


def warmup_task() -> Task:
    return next(t for t in load_tasks("bundled", split="train").tasks if t.id == "task_0000")


async def run_jobs(tmp: Path, engine: Engine, jobs: list[RolloutJob]) -> list[Rollout]:
    cfg = Config()
    cfg.engine.type, cfg.engine.model = "scripted", "tiny-qwen3"
    cfg.rollout.out_dir, cfg.rollout.timeout_s, cfg.rollout.concurrency = str(tmp), 120, 4
    async with RolloutStack.from_config(cfg, [j.task for j in jobs], engine=engine) as stack:
        assert stack.runner is not None
        return await stack.runner.run_many(jobs)


def prompts(r: Rollout) -> list[str]:
    return [str(FMT.tokenizer.decode(c.prompt_ids, skip_special_tokens=False)) for c in r.calls]


@pytest.mark.parametrize(
    "code", [pytest.param(c, marks=() if c in SAMPLE else pytest.mark.slow) for c in all_codes()]
)
async def test_configuration_solves_warmup_task(code: str, tmp_path: Path) -> None:
    task = warmup_task()
    engine = ReferenceEngine(FMT, [(task.prompt, [reference_command(task)])])
    (r,) = await run_jobs(tmp_path, engine, [RolloutJob(task, harness_name(code), "r")])
    assert r.status is RolloutStatus.OK, r.status_reason
    assert r.reward == 1.0 and r.calls and r.group_id == f"task_0000/whitebox:{code}"
    assert (tmp_path / "r" / "workspace" / "hello.txt").read_text() == "Hello, harness!\n"


STEPS = ["ls", "seq 1 1000", "REFERENCE", "cat hello.txt"]
OPTIONS = {"window_turns": 2, "compact_tokens": 900, "observation_bytes": 400}


def vary(factor: int) -> list[str]:
    return ["".join(str(level) if i == factor else "0" for i in range(5)) for level in range(3)]


@pytest.fixture(scope="module")
def factor_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rollout]:
    """One four-step rollout per configuration that differs from 00000 in one factor (11 in all)."""
    import asyncio

    task = warmup_task()
    steps = [reference_command(task) if s == "REFERENCE" else s for s in STEPS]
    codes = sorted({c for f in range(5) for c in vary(f)})
    jobs = [RolloutJob(task, harness_name(c), f"r{c}", options=dict(OPTIONS)) for c in codes]
    engine = ReferenceEngine(FMT, [(task.prompt, steps)])
    rollouts = asyncio.run(run_jobs(tmp_path_factory.mktemp("factors"), engine, jobs))
    return {c: r for c, r in zip(codes, rollouts, strict=True)}


def test_every_factor_run_solves_the_task(factor_runs: dict[str, Rollout]) -> None:
    for code, r in factor_runs.items():
        assert r.status is RolloutStatus.OK and r.reward == 1.0, (code, r.status_reason)


def test_system_prompt_levels(factor_runs: dict[str, Rollout]) -> None:
    runs = [factor_runs[c] for c in vary(0)]
    assert len({r.calls[0].system_digest for r in runs}) == 3
    first = [prompts(r)[0] for r in runs]
    assert "Conventions:" in first[1] and "Checklist" in first[2]
    assert "Conventions:" not in first[0] and "Checklist" not in first[0]


def test_tool_interface_levels(factor_runs: dict[str, Rollout]) -> None:
    bash, files, fenced = (factor_runs[c] for c in vary(1))
    assert len({r.calls[0].tools_digest for r in (bash, files, fenced)}) == 3
    assert [t.name for t in bash.calls[0].tool_calls] == ["bash"]
    assert [t.name for t in files.calls[0].tool_calls] == ["run"]
    assert '"name": "edit_file"' in prompts(files)[0] and '"name": "edit_file"' not in prompts(bash)[0]
    assert not fenced.calls[0].tool_calls and fenced.calls[0].text.startswith("```bash\n")
    assert "<tools>" not in prompts(fenced)[0] and "Observation:\n" in prompts(fenced)[1]


def test_observation_levels(factor_runs: dict[str, Rollout]) -> None:
    raw, cut, js = (prompts(factor_runs[c])[2] for c in vary(2))  # the prompt after `seq 1 1000`
    assert "\n999\n1000\n" in raw and "[exit code" not in raw and "elided" not in raw
    assert "bytes elided ...]" in cut and "\n1000\n\n[exit code 0]" in cut and "\n500\n" not in cut
    assert '"exit_code": 0' in js and '"elapsed_s":' in js and '"stderr": ""' in js


def test_context_levels(factor_runs: dict[str, Rollout]) -> None:
    full, window, compact = (factor_runs[c] for c in vary(3))
    assert all("ref-step-1" in p for p in prompts(full)[1:])  # everything kept
    assert not any("compaction_request" in c.tags for c in full.calls + window.calls)
    late = prompts(window)[-1]
    assert "ref-step-4" in late and "ref-step-1;" not in late  # dropped turns are not in the request
    assert warmup_task().prompt in late  # the task always stays
    tagged = [c for c in compact.calls if "compaction_request" in c.tags]
    assert tagged and context.COMPACT_PROMPT in prompts(compact)[compact.calls.index(tagged[0])]
    after = prompts(compact)[compact.calls.index(tagged[0]) + 1]
    assert context.RESUME.strip() in after and "ref-step-1;" not in after


def test_workflow_levels(factor_runs: dict[str, Rollout]) -> None:
    react, plan, verify = (factor_runs[c] for c in vary(4))
    text = ["\n".join(prompts(r)) for r in (react, plan, verify)]
    assert workflow.PLAN_PROMPT not in text[0] and workflow.VERIFY_PROMPT not in text[0]
    assert plan.calls[0].text.startswith("1. ") and not plan.calls[0].tool_calls
    assert workflow.PLAN_GO in prompts(plan)[1] and len(plan.calls) == len(react.calls) + 1
    assert workflow.VERIFY_PROMPT in text[2] and len(verify.calls) == len(react.calls) + 2
    assert any("ref-verify" in str(t.arguments) for c in verify.calls for t in c.tool_calls)


def test_compaction_calls_are_classified_and_not_trained(factor_runs: dict[str, Rollout]) -> None:
    r = factor_runs["00020"]
    tree = trace_rollout(r)
    kinds = [c.kind for c in tree.calls]
    assert "compaction_request" in kinds and "compacted" in kinds and kinds[0] == "main"
    for c in tree.calls:
        if c.kind in ("compaction_request", "compacted"):
            assert not c.kept and c.reason == "compaction", c
    kept = {c.call_id for c in tree.calls if c.kept}
    assert kept and all(c.kind == "main" for c in tree.calls if c.call_id in kept)


def _bad_then_good(fenced: bool, command: str) -> list[ChatMessage | str]:
    good: ChatMessage | str = (
        f"```bash\n{command}\n```"
        if fenced
        else ChatMessage(role="assistant", tool_calls=[ToolCall(name="bash", arguments={"command": command})])
    )
    if fenced:
        return ["```bash\nls", "", "```bash\nls\n```\n```sh\npwd\n```", good, "done"]
    bad_tool = ChatMessage(role="assistant", tool_calls=[ToolCall(name="nope", arguments={"x": "1"})])
    no_arg = ChatMessage(role="assistant", tool_calls=[ToolCall(name="bash", arguments={"cmd": "ls"})])
    return [bad_tool, "", no_arg, good, "done"]


async def test_malformed_output_gets_an_observation_not_a_crash(tmp_path: Path) -> None:
    task = warmup_task()
    fenced_task = task.model_copy(update={"id": "fenced", "prompt": task.prompt + " (fenced)"})
    ref = reference_command(task)
    engine = ScriptedEngine(
        FMT,
        [
            Script(turns=_bad_then_good(True, ref), match=fenced_task.prompt),
            Script(turns=_bad_then_good(False, ref), match=task.prompt),
        ],
    )
    jobs = [RolloutJob(task, "whitebox:00000", "native"), RolloutJob(fenced_task, "whitebox:02000", "fenced")]
    native, fenced = await run_jobs(tmp_path, engine, jobs)
    for r in (native, fenced):
        assert r.status is RolloutStatus.OK and r.reward == 1.0, r.status_reason
    seen = prompts(native)[-1]
    assert "unknown tool 'nope'" in seen and "Your last reply was empty" in seen
    assert "'bash' is missing the argument(s) command" in seen
    seen = prompts(fenced)[-1]
    assert "no complete ```bash block found" in seen and "found 2 ```bash blocks" in seen
    assert "Your last reply was empty" in seen


def test_unknown_code_is_a_harness_error() -> None:
    from harnessrl.harnesses import get_harness
    from harnessrl.types import HarnessError

    assert get_harness("whitebox:01220").name == "whitebox:01220"
    with pytest.raises(HarnessError, match="five digits"):
        get_harness("whitebox:0123")


def _calls_ok(calls: list[ModelCall]) -> bool:
    return all(c.output_ids and len(c.output_logprobs) == len(c.output_ids) for c in calls)


@pytest.mark.slow
async def test_smollm2_drives_configurations(tmp_path: Path) -> None:
    """The real embedded SmolLM2-135M through three configurations: ok, calls captured, trees built."""
    from harnessrl.config import EngineConfig, SamplingConfig
    from harnessrl.engines import build_engine

    task = warmup_task()
    engine = build_engine(EngineConfig(type="hf", model="default", max_batch=4,
                                       sampling=SamplingConfig(temperature=0.6, max_tokens=96)))  # fmt: skip
    opts: dict[str, Any] = {"max_steps": 6, "max_tokens": 96, "command_timeout_s": 20}
    codes = ["00000", "12102", "21012"]
    jobs = [RolloutJob(task, harness_name(c), f"r{c}", options=opts) for c in codes]
    cfg = Config()
    cfg.engine.model = "default"
    cfg.rollout.out_dir, cfg.rollout.timeout_s = str(tmp_path), 600
    async with RolloutStack.from_config(cfg, [task], engine=engine) as stack:
        assert stack.runner is not None
        rollouts = await stack.runner.run_many(jobs)
    for r in rollouts:
        assert r.status is RolloutStatus.OK, (r.harness, r.status_reason)
        assert r.calls and _calls_ok(r.calls) and r.calls[0].render == "rendered"
        tree = trace_rollout(r)
        assert tree.nodes and tree.stats["calls"] == len(r.calls)


async def test_command_timeout_and_step_limit_belong_to_the_harness(tmp_path: Path) -> None:
    task = warmup_task()
    looping = task.model_copy(update={"id": "loop", "prompt": task.prompt + " (loop)"})

    def bash(command: str) -> ChatMessage:
        return ChatMessage(
            role="assistant", tool_calls=[ToolCall(name="bash", arguments={"command": command})]
        )

    engine = ScriptedEngine(
        FMT,
        [
            Script(turns=[bash("ls")], match=looping.prompt),
            Script(turns=[bash("sleep 100"), "done"], match=task.prompt),
        ],
        exhausted="repeat_last",
    )
    jobs = [
        RolloutJob(task, "whitebox:00000", "slow", options={"command_timeout_s": 1}),
        RolloutJob(looping, "whitebox:00000", "loop", options={"max_steps": 3}),
    ]
    slow, loop = await run_jobs(tmp_path, engine, jobs)
    assert slow.status is RolloutStatus.OK and "[command timed out after 1 s]" in prompts(slow)[-1]
    assert loop.status is RolloutStatus.HARNESS_ERROR and "step limit of 3 reached" in loop.status_reason
    assert len(loop.calls) == 3


async def test_reference_commands_run_once_in_every_training_configuration(tmp_path: Path) -> None:
    """Task_0001 appends a line, so a reference command sent twice costs reward (0.8). Under a sliding
    window (context level 1) the last command's turn is dropped once the final answer and the
    verification came after it, and the engine used to send command 1 again (whitebox:12012). All
    18 training configurations (every level of every factor, every pair of levels twice), and the
    window's narrowest setting under the plan and verify workflows."""
    from harnessrl.scaling.designs import design_codes

    task = next(t for t in load_tasks("bundled", split="train").tasks if t.id == "task_0001")
    command = reference_command(task)
    jobs = [RolloutJob(task, harness_name(c), f"r{c}") for c in design_codes("oa-18")]
    narrow = {"window_turns": 1}
    jobs += [RolloutJob(task, harness_name(c), f"w{c}", options=dict(narrow)) for c in ("00011", "20112")]
    engine = ReferenceEngine(FMT, [(task.prompt, [command])])
    rollouts = await run_jobs(tmp_path, engine, jobs)
    assert len(rollouts) == 20
    for job, r in zip(jobs, rollouts, strict=True):
        sent = [c for c in r.calls if command in c.text + "".join(str(t.arguments) for t in c.tool_calls)]
        assert (r.status, r.reward, len(sent)) == (RolloutStatus.OK, 1.0, 1), (job.harness, r.status_reason)
        todo = (tmp_path / job.rollout_id / "workspace" / "notes" / "todo.txt").read_text()
        assert todo.splitlines()[-2:] == ["- renew library card", "- buy coffee filters"], job.harness


async def test_delegate_runs_a_subagent_with_its_own_context(tmp_path: Path) -> None:
    """`subagents`: the bash and file-tool interfaces offer `delegate`; the reference engine hands the
    first command to it, a helper (its own system prompt, the task as its only message) runs it and
    reports, and the report comes back as the tool result. The fenced level has no tools: no
    `delegate`, the command runs in the main thread."""
    task = next(t for t in load_tasks("bundled", split="train").tasks if t.id == "task_0001")
    command = reference_command(task)
    jobs = [
        RolloutJob(task, harness_name(c), f"r{c}", options={"subagents": True})
        for c in ("00000", "01000", "02000")
    ]
    bash, files, fenced = await run_jobs(tmp_path, ReferenceEngine(FMT, [(task.prompt, [command])]), jobs)
    for r in (bash, files):
        assert (r.status, r.reward) == (RolloutStatus.OK, 1.0), r.status_reason
        assert [t.name for t in r.calls[0].tool_calls] == ["delegate"]
        helper = prompts(r)[1]
        assert "You are a helper agent" in helper and task.prompt not in helper and command in helper
        assert "Report: I ran the command" in prompts(r)[3]  # the helper's answer, in the main thread
        assert [s.kind for s in trace_rollout(r).segments] == ["main", "subagent"]
    assert (fenced.status, fenced.reward) == (RolloutStatus.OK, 1.0)
    assert "delegate" not in prompts(fenced)[0]


async def test_multi_step_task_demonstration_delegates_and_compacts(tmp_path: Path) -> None:
    """The credit experiment's demonstrations (configs/credit.toml): a generated multi-step task
    through whitebox:00020 with `delegate` and a 200-token window. The reference engine hands step 1
    to a helper, the context then outgrows the window before every later main step, and each summary
    carries how far the run got, so steps 2 and 3 follow it: main, helper, then a summary before each
    of the three main calls after the delegation (step 2, step 3, the final answer)."""
    from harnessrl.rollout.session import reference_steps
    from harnessrl.tasks.generate import generate

    generate(["log_triage", "config_update"], 1, 0, tmp_path / "tasks")
    tasks = sorted(load_tasks(tmp_path / "tasks").tasks, key=lambda t: t.id)
    engine = ReferenceEngine(FMT, [(t.prompt, reference_steps(t)) for t in tasks])
    options = {"subagents": True, "compact_tokens": 200, "subagent_steps": 3, "max_steps": 6}
    jobs = [RolloutJob(t, "whitebox:00020", t.id, options=dict(options)) for t in tasks]
    for r in await run_jobs(tmp_path / "runs", engine, jobs):
        assert (r.status, r.reward) == (RolloutStatus.OK, 1.0), r.status_reason
        kinds = [s.kind for s in trace_rollout(r).segments]
        assert kinds == ["main", "subagent", "compaction", "main", "compaction", "main", "compaction", "main"]
        summaries = [p.rsplit("<|im_start|>assistant", 1)[0] for p in prompts(r)]
        assert sum(context.COMPACT_PROMPT in p for p in summaries) == 3


def test_every_request_is_fresh_so_the_proxy_never_replays_it() -> None:
    """The white-box client never retries: it says so on every request (`x-stainless-retry-count:
    0`), and the proxy samples again for a request identical to an earlier one (tests/
    test_proxy_server.py) instead of replaying it (a compaction loop on one sample)."""
    import http.server
    import threading

    from harnessrl.harnesses.whitebox.agent.client import Client

    seen: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("x-stainless-retry-count"))
            self.rfile.read(int(self.headers["content-length"]))
            body = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n'
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = Client(f"http://127.0.0.1:{server.server_address[1]}", "k", "m", 8, 10.0)
        messages = [{"role": "user", "content": "same"}]
        assert [client.chat(messages, None).text for _ in range(2)] == ["hi", "hi"]
    finally:
        server.shutdown()
    assert seen == ["0", "0"]
