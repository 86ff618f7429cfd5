from __future__ import annotations

from pathlib import Path

import pytest

from harnessrl.config import ConfigError, load_config


def test_defaults_validate() -> None:
    cfg = load_config()
    assert cfg.engine.type == "hf"
    assert cfg.verify.code_weight == 0.7


def test_toml_and_dotted_overrides(tmp_path: Path) -> None:
    f = tmp_path / "run.toml"
    f.write_text('[train]\nlr = 3e-6\n[rollout]\nharness = "codex"\n')
    cfg = load_config(f, ["train.lr=1e-5", "rollout.n=8", "engine.model=/ckpt/step10", "proxy.keepalive_s=1"])
    assert cfg.train.lr == 1e-5
    assert cfg.rollout.n == 8
    assert cfg.rollout.harness == "codex"
    assert cfg.engine.model == "/ckpt/step10"
    assert cfg.proxy.keepalive_s == 1.0


def test_unknown_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"train\.lrr"):
        load_config(None, ["train.lrr=1"])


def test_bad_value_is_named() -> None:
    with pytest.raises(ConfigError, match=r"rollout\.n.*not-a-number"):
        load_config(None, ["rollout.n=not-a-number"])


def test_bad_toml_names_file(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("[train\n")
    with pytest.raises(ConfigError, match=r"bad\.toml"):
        load_config(f)


def test_malformed_override() -> None:
    with pytest.raises(ConfigError, match=r"section\.key=value"):
        load_config(None, ["justakey"])


def test_flag_overrides_skip_unset_and_quote_strings() -> None:
    from harnessrl.config import flag_overrides

    flags = {"rollout.n": 4, "engine.model": '/ckpt/a "b"', "tasks.split": None, "rollout.timeout_s": 2.5}
    extra = flag_overrides(flags)
    assert extra == ["rollout.n=4", 'engine.model="/ckpt/a \\"b\\""', "rollout.timeout_s=2.5"]
    cfg = load_config(None, extra)
    assert (cfg.rollout.n, cfg.engine.model, cfg.rollout.timeout_s) == (4, '/ckpt/a "b"', 2.5)
