"""Every recorded call says which model, tokenizer and weights version produced it, and `harnessrl tree
show` decodes with that tokenizer (refusing one that is not it). Real proxy on a real port, the embedded
engine on the tiny random Qwen3 with the real Qwen3 tokenizer, the real `tree show` command."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import torch
from typer.testing import CliRunner

from harnessrl.chat.format import ChatFormat
from harnessrl.chat.tokenizers import hf_vocab_digest, qwen3_tokenizer, tokenizer_spec
from harnessrl.cli import app
from harnessrl.config import EngineConfig, SamplingConfig
from harnessrl.engines.hf import HFEngine
from harnessrl.proxy.deps import default_deps
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.sessions import SessionStore
from harnessrl.trace.decode import TokenizerMismatch, choose_decoder, load_tokenizer
from harnessrl.types import ModelCall, Rollout

torch.set_num_threads(1)
CHAT = {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}


def test_qwen3_identity_is_the_same_from_transformers_and_tokenizers() -> None:
    tok = qwen3_tokenizer()
    assert tokenizer_spec(tok) == "qwen3"
    assert hf_vocab_digest(tok) == load_tokenizer("qwen3").digest
    assert len(hf_vocab_digest(tok)) == 16


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two calls of one session through the real proxy, a weight update between them; the rollout
    folder they were written to."""
    engine = HFEngine.from_config(EngineConfig(type="hf", model="tiny-qwen3", max_batch=2))
    deps = default_deps(
        engine, ChatFormat(engine.tokenizer), SessionStore(), sampling=SamplingConfig(max_tokens=4)
    )
    server = ThreadedProxyServer(deps).start()
    try:
        info = deps.sessions.open("r1")
        assert httpx.post(info.openai_base_url + "/chat/completions", json=CHAT).status_code == 200
        state = {k: v + 0.01 for k, v in engine.model.state_dict().items() if k.endswith("norm.weight")}
        server.call(engine.update_weights(state))
        again = {**CHAT, "messages": [{"role": "user", "content": "hi again"}]}  # not a retry: new body
        assert httpx.post(info.openai_base_url + "/chat/completions", json=again).status_code == 200
        calls = deps.sessions.calls("r1")
    finally:
        server.stop()
    folder = tmp_path_factory.mktemp("prov") / "r1"
    folder.mkdir()
    (folder / "calls.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in calls))
    (folder / "rollout.json").write_text(Rollout(rollout_id="r1", task_id="t", harness="h").model_dump_json())
    return folder


def _calls(folder: Path) -> list[ModelCall]:
    return [ModelCall.model_validate_json(x) for x in (folder / "calls.jsonl").read_text().splitlines()]


def test_every_call_records_model_tokenizer_and_weights_version(recorded: Path) -> None:
    calls = _calls(recorded)
    digest = load_tokenizer("qwen3").digest
    assert [(c.model_id, c.tokenizer, c.tokenizer_digest, c.weights_version) for c in calls] == [
        ("tiny-qwen3", "qwen3", digest, 0),
        ("tiny-qwen3", "qwen3", digest, 1),
    ]


def test_tree_show_decodes_with_the_recorded_tokenizer(recorded: Path, tmp_path: Path) -> None:
    page = tmp_path / "tree.html"
    res = CliRunner().invoke(app, ["tree", "show", str(recorded), "--html", str(page)])
    assert res.exit_code == 0, res.output
    assert "engine: model tiny-qwen3 · tokenizer qwen3 · weights v0-1" in res.stdout.splitlines()
    lines = res.stdout.splitlines()
    assert lines[5] == "    env   '<|im_start|>user\\nhi'"  # the shared root: both prompts start so
    assert lines[7] == "      env   '<|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n'"
    assert lines[10] == "      env   ' again<|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n'"
    assert "&lt;|im_start|&gt;user\nhi</pre>" in page.read_text()
    ids = CliRunner().invoke(app, ["tree", "show", str(recorded), "--ids"])
    assert ids.exit_code == 0 and ids.stdout.splitlines()[5] == "    env   [151644 872 198 6023]"


def _other_tokenizer(folder: Path) -> Path:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    folder.mkdir()
    Tokenizer(WordLevel({"a": 0, "b": 1, "[UNK]": 2}, unk_token="[UNK]")).save(str(folder / "tokenizer.json"))
    return folder


def test_a_wrong_tokenizer_is_refused_not_decoded(recorded: Path, tmp_path: Path) -> None:
    other = _other_tokenizer(tmp_path / "other")
    res = CliRunner().invoke(app, ["tree", "show", str(recorded), "--tokenizer", str(other)])
    assert res.exit_code == 2
    assert f"error: --tokenizer {other} (vocabulary digest {load_tokenizer(str(other)).digest})" in res.stderr
    assert "is not the tokenizer these ids were made with (qwen3, digest" in res.stderr
    with pytest.raises(TokenizerMismatch):
        choose_decoder(_calls(recorded), str(other))
    assert choose_decoder(_calls(recorded), "qwen3").decoder is not None  # the right one is accepted


def test_old_records_and_unloadable_tokenizers_fall_back_to_ids_with_a_note(tmp_path: Path) -> None:
    call = ModelCall(call_id="c", rollout_id="r", index=0, dialect="x", prompt_ids=[1], output_ids=[2],
                     output_logprobs=[0.0])  # fmt: skip
    old = choose_decoder([call], None)
    assert old.decoder is None
    assert old.notes == ["note: the calls record no tokenizer; showing token ids (pass --tokenizer)"]
    gone = call.model_copy(update={"tokenizer": str(tmp_path / "gone"), "tokenizer_digest": "0" * 16})
    moved = choose_decoder([gone], None)
    assert moved.decoder is None
    assert moved.notes == [
        f"note: recorded tokenizer {tmp_path / 'gone'} cannot be loaded here "
        f"({tmp_path / 'gone'}: no tokenizer.json); showing ids"
    ]
    other = _other_tokenizer(tmp_path / "other")
    changed = choose_decoder([gone.model_copy(update={"tokenizer": str(other)})], None)
    assert changed.decoder is None and "not the recorded 0000000000000000; showing ids" in changed.notes[0]
    assert json.loads(gone.model_dump_json())["weights_version"] is None
