from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

import harnessrl
from harnessrl.config import Config, ConfigError, load_config


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


def _documented(cls: type[BaseModel]) -> dict[str, bool]:
    """Field name -> whether a string literal follows its annotation in the class body."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(body, ast.ClassDef)
    out = {}
    for stmt, after in zip(body.body, [*body.body[1:], None], strict=True):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out[stmt.target.id] = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
    return out


def _sections(cls: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    """Every model reachable from `cls` through its fields and its bases (the bundles `Config` joins)."""
    seen[f"{cls.__module__}.{cls.__qualname__}"] = cls
    for base in cls.__mro__[1:]:
        if issubclass(base, BaseModel) and base is not BaseModel and base not in seen.values():
            _sections(base, seen)
    for field in cls.model_fields.values():
        for t in [field.annotation, *getattr(field.annotation, "__args__", ())]:
            if isinstance(t, type) and issubclass(t, BaseModel) and t not in seen.values():
                _sections(t, seen)
    return seen


def test_every_config_field_has_a_docstring() -> None:
    sections = _sections(Config, {})
    assert len(sections) == 33  # 24 sections, 7 bundles of them, their base `Section` and Config
    missing = [
        f"{name}.{f}" for name, cls in sections.items() for f, ok in _documented(cls).items() if not ok
    ]
    assert missing == []
    declared = {f for cls in sections.values() for f in _documented(cls)}
    assert set(Config.model_fields) <= declared
    # 204 section fields and 15 bundle fields (`train` in both TrainSections and EvalSections)
    assert sum(len(_documented(cls)) for cls in sections.values()) == 221


def test_library_bundles_are_what_config_joins() -> None:
    """Each library entry point takes its package's bundle of sections; `Config` is every one of them."""
    from harnessrl.config import (
        AblationSections,
        EvalSections,
        QuickstartSections,
        RolloutSections,
        RunSections,
        TrainSections,
        TransferSections,
    )

    cfg = load_config(None, ["train.lr=3e-6", "eval.runs=2"])
    bundles = [RolloutSections, TrainSections, EvalSections, RunSections]
    bundles += [QuickstartSections, AblationSections, TransferSections]
    assert all(isinstance(cfg, b) for b in bundles)
    assert list(RolloutSections.model_fields) == ["engine", "proxy", "sandbox", "rollout", "verify"]
    assert set(TrainSections.model_fields) - set(RolloutSections.model_fields) == {
        "train", "trace", "sft", "tracking"
    }  # fmt: skip
    assert set(EvalSections.model_fields) - set(RolloutSections.model_fields) == {"tasks", "train", "eval"}
    assert set(Config.model_fields) == set(RunSections.model_fields) | {"quickstart", "ablation", "transfer"}
    alone = TrainSections.model_validate({"train": {"lr": 3e-6}})
    assert alone.train.lr == cfg.train.lr == 3e-6


def test_no_import_cycle_between_top_level_modules() -> None:
    """issue 36: with harnessrl's children (packages and modules) as nodes, the import graph has no
    cycle (`harnessrl.config` imported every package's sections and seven packages imported it back);
    and no import-linter contract ignores an import."""
    import tomllib

    import grimp

    graph = grimp.build_graph("harnessrl", cache_dir=None)
    top = {m: ".".join(m.split(".")[:2]) for m in graph.modules}
    edges: dict[str, set[str]] = {}
    for m in graph.modules:
        for imported in graph.find_modules_directly_imported_by(m):
            if top[m] != top[imported] and top[imported] != "harnessrl":
                edges.setdefault(top[m], set()).add(top[imported])

    def reaches(a: str, b: str) -> bool:
        seen, todo = {a}, [a]
        while todo:
            for n in edges.get(todo.pop(), ()):
                if n == b:
                    return True
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return False

    assert len(edges) >= 20
    assert [(a, b) for a in edges for b in edges[a] if reaches(b, a)] == []
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    assert [c["id"] for c in contracts if c.get("ignore_imports")] == []


def test_section_modules_are_leaves() -> None:
    """Each package's config.py imports only pydantic, typing and other section modules, so that
    harnessrl.config (and a library's bundle of sections) can assemble them without importing what
    they configure."""
    root = Path(harnessrl.__file__).parent
    modules = sorted(root.glob("*/config.py"))
    assert len(modules) == 13
    allowed = {"__future__", "typing", "pydantic", "harnessrl.config_section"}
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in names:
                    ok = name in allowed or (name.startswith("harnessrl.") and name.endswith(".config"))
                    assert ok, f"{path}: imports {name}"


def test_config_imports_first_in_a_fresh_interpreter() -> None:
    """Importing harnessrl.config before anything else must not re-enter it through a package."""
    code = "import harnessrl.config as c; print(len(c.Config.model_fields))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "14\n"
