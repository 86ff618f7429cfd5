"""The scripted engine: stateless turn choice, script selection, log-probs, faults, weight updates."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessrl.chat.format import ChatFormat
from harnessrl.chat.tokenizers import qwen3_tokenizer
from harnessrl.engines.scripted import Script, ScriptedEngine, count_subsequence, cut_output
from harnessrl.protocols import Engine, SamplingParams
from harnessrl.types import ChatMessage, EngineError, ToolCall

IM_END = 151645
CALL = ChatMessage(
    role="assistant", tool_calls=[ToolCall(name="Bash", arguments={"command": "printf hi > hello.txt"})]
)
SAMPLING = SamplingParams(stop_token_ids=(IM_END,))


@pytest.fixture(scope="module")
def fmt() -> ChatFormat:
    return ChatFormat(qwen3_tokenizer(), enable_thinking=True)


def m(role: str, content: str = "", **kw: Any) -> ChatMessage:
    return ChatMessage(role=role, content=content, **kw)  # type: ignore[arg-type]


def prompt_after(fmt: ChatFormat, turns: int, task: str = "make hello.txt") -> list[int]:
    """A prompt holding `turns` earlier assistant turns (each a tool call answered by a tool result)."""
    msgs = [m("system", "agent"), m("user", task)]
    for _ in range(turns):
        msgs += [CALL, m("tool", "ok")]
    return fmt.render(msgs, [])


def test_counts_and_cuts() -> None:
    assert count_subsequence([1, 2, 1, 2, 1], [1, 2]) == 2
    assert count_subsequence([1, 1, 1], [1, 1]) == 1
    assert count_subsequence([1], []) == 0
    assert cut_output([5, 6, 7, 8], SamplingParams(stop_token_ids=(6,))) == ([5, 6], "stop")
    assert cut_output([5, 6, 7, 8], SamplingParams(max_tokens=3)) == ([5, 6, 7], "length")
    assert cut_output([5, 6, 7, 8], SamplingParams(max_tokens=3, stop_token_ids=(8,))) == (
        [5, 6, 7],
        "length",
    )
    assert cut_output([5, 6], SamplingParams(max_tokens=2)) == ([5, 6], "stop")


async def test_turn_is_chosen_by_assistant_count_even_concurrently(fmt: ChatFormat) -> None:
    engine = ScriptedEngine(fmt, [CALL, "done"])
    assert isinstance(engine, Engine)
    assert engine.tokenizer is fmt.tokenizer
    prompts = [prompt_after(fmt, k) for k in (1, 0, 1, 0, 0)]
    results = await asyncio.gather(*(engine.generate(p, SAMPLING) for p in prompts))
    call_ids, done_ids = fmt.render_assistant(CALL), fmt.render_assistant(m("assistant", "done"))
    assert [r.output_ids for r in results] == [done_ids, call_ids, done_ids, call_ids, call_ids]
    assert done_ids == [10438, IM_END]
    assert [r.finish_reason for r in results] == ["stop"] * 5
    assert [r.meta["turn"] for r in results] == [1, 0, 1, 0, 0]
    assert results[0].output_logprobs == [0.0, 0.0]
    assert fmt.parse(results[1].output_ids).message() == CALL
    with pytest.raises(EngineError, match="script 0 has 2 turns; the prompt already holds 2"):
        await engine.generate(prompt_after(fmt, 2), SAMPLING)
    repeat = ScriptedEngine(fmt, [CALL, "done"], exhausted="repeat_last")
    assert (await repeat.generate(prompt_after(fmt, 5), SAMPLING)).output_ids == done_ids


async def test_script_selected_by_prompt_substring(fmt: ChatFormat) -> None:
    engine = ScriptedEngine(
        fmt, [Script(["alpha"], match="task A"), Script(["beta", "gamma"], match="task B"), Script(["other"])]
    )
    texts = []
    for task, turns in [("task B", 1), ("task A", 0), ("task B", 0), ("task C", 0)]:
        result = await engine.generate(prompt_after(fmt, turns, task), SAMPLING)
        texts.append(fmt.parse(result.output_ids).text)
    assert texts == ["gamma", "alpha", "beta", "other"]
    only = ScriptedEngine(fmt, [Script(["x"], match="nowhere")])
    with pytest.raises(EngineError, match="no script matches"):
        await only.generate(prompt_after(fmt, 0), SAMPLING)


async def test_max_tokens_cuts_scripted_output(fmt: ChatFormat) -> None:
    engine = ScriptedEngine(fmt, [CALL])
    result = await engine.generate(
        prompt_after(fmt, 0), SamplingParams(max_tokens=3, stop_token_ids=(IM_END,))
    )
    assert (result.output_ids, result.finish_reason) == (fmt.render_assistant(CALL)[:3], "length")


async def test_scorer_log_probs_and_length_check(fmt: ChatFormat) -> None:
    seen: list[tuple[int, int]] = []

    def scorer(prompt_ids: list[int], output_ids: list[int]) -> list[float]:
        seen.append((len(prompt_ids), len(output_ids)))
        return [-0.5 * (i + 1) for i in range(len(output_ids))]

    prompt = prompt_after(fmt, 1)
    result = await ScriptedEngine(fmt, [CALL, "done"], scorer=scorer).generate(prompt, SAMPLING)
    assert result.output_logprobs == [-0.5, -1.0]
    assert seen == [(len(prompt), 2)]
    bad = ScriptedEngine(fmt, ["done"], scorer=lambda p, o: [0.0])
    with pytest.raises(EngineError, match="scorer returned 1 log-probs for 2 ids"):
        await bad.generate(prompt_after(fmt, 0), SAMPLING)


async def test_fault_injection_on_chosen_calls(fmt: ChatFormat) -> None:
    engine = ScriptedEngine(fmt, ["done"], fault_calls={1, 3})
    prompt = prompt_after(fmt, 0)
    outcomes = []
    for _ in range(5):
        try:
            outcomes.append((await engine.generate(prompt, SAMPLING)).meta["call"])
        except EngineError as exc:
            outcomes.append(str(exc))
    assert outcomes == [0, "injected fault on call 1", 2, "injected fault on call 3", 4]
    assert engine.calls == 5
    await engine.update_weights({"anything": 1})  # no model: a no-op
    await engine.close()


async def test_model_log_probs_are_teacher_forced_and_follow_weight_updates(fmt: ChatFormat) -> None:
    import torch

    from harnessrl.engines.models import teacher_force_logprobs, tiny_qwen3

    model, _ = tiny_qwen3()
    engine = ScriptedEngine(fmt, [CALL, "done"], model=model)
    prompt = prompt_after(fmt, 1)
    hot = SamplingParams(temperature=0.7, stop_token_ids=(IM_END,))
    result = await engine.generate(prompt, hot)
    expected = teacher_force_logprobs(model, prompt, result.output_ids, 0.7)
    assert result.output_logprobs == expected
    assert all(x < 0 for x in expected)
    zeroed = {
        name: torch.zeros_like(p) for name, p in model.named_parameters() if name.endswith("norm.weight")
    }
    await engine.update_weights(zeroed)
    assert all(float(p.detach().abs().sum()) == 0.0 for n, p in model.named_parameters() if n in zeroed)
    after = (await engine.generate(prompt, hot)).output_logprobs
    assert after != expected
    with pytest.raises(EngineError, match="unexpected weight names"):
        await engine.update_weights({"no.such.weight": torch.zeros(1)})


async def test_update_weights_waits_for_calls_being_scored(fmt: ChatFormat) -> None:
    import threading

    import torch

    release = threading.Event()
    order: list[str] = []

    def slow_scorer(prompt_ids: list[int], output_ids: list[int]) -> list[float]:
        release.wait(timeout=10)
        order.append("scored")
        return [0.0] * len(output_ids)

    model = torch.nn.Linear(2, 2)
    engine = ScriptedEngine(fmt, ["done"], scorer=slow_scorer, model=model)
    gen = asyncio.create_task(engine.generate(prompt_after(fmt, 0), SAMPLING))
    await asyncio.sleep(0.05)
    update = asyncio.create_task(engine.update_weights({"bias": torch.tensor([3.0, 4.0])}))
    await asyncio.sleep(0.05)
    assert not update.done() and order == []
    release.set()
    await asyncio.gather(gen, update)
    order.append("updated")
    assert order == ["scored", "updated"]
    assert model.bias.tolist() == [3.0, 4.0]
