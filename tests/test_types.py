from __future__ import annotations

import subprocess
import sys

import pytest

from harnessrl.types import ModelCall, Rollout, RolloutStatus, TaskFile, safe_relpath


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/../../b", "..", "C:/x", ""])
def test_safe_relpath_rejects_escapes(bad: str) -> None:
    with pytest.raises(ValueError):
        safe_relpath(bad)
    with pytest.raises(ValueError):
        TaskFile(path=bad, content="")


def test_safe_relpath_normalises() -> None:
    assert safe_relpath("a/./b//c") == "a/b/c"
    assert safe_relpath("a/x/../b") == "a/b"


def test_rollout_roundtrip_and_label() -> None:
    call = ModelCall(
        call_id="c0",
        rollout_id="r0",
        index=0,
        dialect="anthropic",
        prompt_ids=[1, 2, 3],
        output_ids=[4, 5],
        output_logprobs=[-0.5, -0.25],
    )
    r = Rollout(
        rollout_id="r0",
        task_id="t",
        harness="codex",
        calls=[call],
        status=RolloutStatus.FILTERED,
        status_reason="over_branching",
    )
    assert r.status_label == "filtered:over_branching"
    back = Rollout.model_validate_json(r.model_dump_json())
    assert back == r


def test_types_import_no_torch() -> None:
    code = "import sys, harnessrl.types, harnessrl.config, harnessrl.protocols; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
