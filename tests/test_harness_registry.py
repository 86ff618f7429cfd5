"""Every registered harness carries what the runner, the scripted reference engine and the
compatibility script need (adding a harness = one module + one registry line), and harness names
are parsed in one place (`HarnessName`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from harnessrl.chat.format import ChatFormat
from harnessrl.engines.models import load_tokenizer
from harnessrl.harnesses import HARNESSES, get_harness
from harnessrl.harnesses.adapter import TEXT_SHELL, Harness, Installer, Mode, ShellTool
from harnessrl.protocols import SamplingParams
from harnessrl.proxy.dialects import DIALECTS
from harnessrl.types import DIALECT_NAMES, ChatMessage, HarnessError, HarnessName, ToolCall

SRC = Path(__file__).parents[1] / "src" / "harnessrl"
ADAPTERS = [*HARNESSES, "whitebox:00000", "whitebox:01220", "whitebox:02000"]


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_harness_declares_what_the_runner_engine_and_compat_need(name: str) -> None:
    h: Harness = get_harness(name)
    assert h.name == name
    for member in ("ensure_installed", "prepare", "parse", "reference_turns", "reference_engine"):
        assert callable(getattr(h, member)), member
    assert h.installer in typing.get_args(Installer)
    if h.installer in ("npm", "pypi"):  # from a registry: pinned, a shell, modes with a measured default
        pin = f"@{h.version}" if h.installer == "npm" else f"=={h.version}"
        assert h.version and h.package.endswith(pin), (h.package, h.version)
        assert h.shell_tool is not None
        assert h.modes and h.modes[0].options == {} and h.modes[0].first_prompt_tokens
    if h.installer != "none":
        assert h.modes, "the compatibility table runs each mode"
    for mode in h.modes:
        assert mode.dialect in DIALECT_NAMES, mode
        assert mode.note or mode is h.modes[0], "a non-default mode says how it differs"
    turns = h.reference_turns("echo hi")
    assert turns and isinstance(turns[-1], str | ChatMessage)


def test_dialect_names_are_one_list_that_the_proxy_registry_matches() -> None:
    """`types.DialectName` is the only list of dialect names: the proxy registers exactly those (each
    under its own name), and no module of the harness adapters spells a second list."""
    assert list(DIALECTS) == list(DIALECT_NAMES)
    assert [d.name for d in DIALECTS.values()] == list(DIALECT_NAMES)
    spelled = re.compile(r'"anthropic",\s*"openai_chat",\s*"openai_responses"')
    offenders = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if spelled.search(p.read_text())]
    assert offenders == ["types.py"]


def test_reference_turns_use_each_harness_shell_tool() -> None:
    call = {
        n: t.tool_calls[0]
        for n in HARNESSES
        if isinstance(t := get_harness(n).reference_turns("ls")[0], ChatMessage) and t.tool_calls
    }
    assert {n: (c.name, c.arguments) for n, c in call.items()} == {
        "claude-code": ("Bash", {"command": "ls"}),
        "cline": ("run_commands", {"commands": ["ls"]}),
        "codex": ("exec_command", {"cmd": "ls"}),
        "command-code": ("shell_command", {"command": "ls"}),
        "continue": ("Bash", {"command": "ls"}),
        "copilot": ("bash", {"command": "ls", "description": "Run the command"}),
        "droid": ("Execute", {"command": "ls", "summary": "Run the task command"}),
        "gemini-cli": ("run_shell_command", {"command": "ls"}),
        "grok-cli": ("bash", {"command": "ls"}),
        "hermes": ("terminal", {"command": "ls"}),
        "kilo": ("bash", {"command": "ls"}),
        "nanocoder": ("execute_bash", {"command": "ls"}),
        "letta-code": ("Bash", {"command": "ls"}),
        "kimi-cli": ("Shell", {"command": "ls"}),
        "mistral-vibe": ("bash", {"command": "ls"}),
        "openclaw": ("exec", {"command": "ls"}),
        "pi": ("bash", {"command": "ls"}),
        "opencode": ("bash", {"command": "ls", "description": "Run the command"}),
        "qwen-code": ("run_shell_command", {"command": "ls"}),
        "gptme": ("shell", {"command": "ls"}),
        "code-puppy": ("shell", {"command": "ls", "cwd": None, "timeout": 60, "background": False}),
    }
    # mini-swe-agent acts through text: a fenced block, and finishes with its submit command
    assert get_harness("mini-swe-agent").reference_turns("ls")[0] == ChatMessage(
        role="assistant", content="```mswea_bash_command\nls\n```"
    )
    assert get_harness("shell").reference_turns("ls") == ["done"]
    # whitebox: the tool level of the code decides (bash / run / a fenced block)
    assert get_harness("whitebox:00000").shell_tool == ShellTool("bash", "command")
    assert get_harness("whitebox:01000").shell_tool == ShellTool("run", "cmd")
    assert get_harness("whitebox:02000").shell_tool == TEXT_SHELL
    assert TEXT_SHELL.turn("ls -la") == ChatMessage(role="assistant", content="```bash\nls -la\n```")
    assert ShellTool("exec").turn("ls") == ChatMessage(
        role="assistant", tool_calls=[ToolCall(name="exec", arguments={"command": "ls"})]
    )


async def test_reference_engine_plays_the_turns_for_the_matching_prompt() -> None:
    fmt = ChatFormat(load_tokenizer("tiny-qwen3"))
    engine = get_harness("codex").reference_engine(
        fmt, [("task A", ["make a"]), ("task B", ["make b"])], max_context=None
    )
    prompt = fmt.render([ChatMessage(role="user", content="do task B")], [])
    out = await engine.generate(prompt, SamplingParams(max_tokens=200))
    message = fmt.parse(out.output_ids).message()
    assert message.tool_calls == [ToolCall(name="exec_command", arguments={"cmd": "make b"})]


def test_first_prompt_size_check() -> None:
    mode = Mode("openai_chat", 1000)
    assert mode.check_first_prompt(1100) == ""
    assert mode.check_first_prompt(1200) == "first prompt is 1200 tokens, declared 1000: update the Mode"
    assert Mode("openai_chat", None).check_first_prompt(5) == ""


def test_harness_name_is_parsed_in_one_place() -> None:
    assert HarnessName.parse("whitebox:01220") == HarnessName(family="whitebox", arg="01220")
    assert HarnessName.parse("codex") == HarnessName(family="codex")
    assert (
        str(HarnessName.parse("whitebox:01220")) == "whitebox:01220" and str(HarnessName(family="x")) == "x"
    )
    for bad in ("", ":01220", "whitebox:"):
        with pytest.raises(ValueError, match="a harness name is <name> or <family>:<argument>"):
            HarnessName.parse(bad)
    assert HarnessName.arg_of("whitebox:01220", "whitebox") == "01220"
    assert [HarnessName.arg_of(n, "whitebox") for n in ("codex", "whitebox:", "wb:1")] == [None, None, None]
    with pytest.raises(HarnessError, match="unknown harness 'codex:x'"):
        get_harness("codex:x")
    with pytest.raises(HarnessError, match="bad harness name 'whitebox:9'"):
        get_harness("whitebox:9")
    # Nothing outside the registry and HarnessName splits a name by hand.
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if 'startswith("whitebox:")' in (t := p.read_text()) or 'removeprefix("whitebox:")' in t
    ]
    assert offenders == []


def test_no_shell_tool_table_outside_the_adapters() -> None:
    """The shell tool shapes live in the adapters (and the whitebox agent's own table) only."""
    for rel in ("rollout/session.py", "train/sft.py", "harnesses/whitebox/reference.py"):
        text = (SRC / rel).read_text()
        for shape in ('"exec_command"', '("bash", "command")', '("run", "cmd")', '"Bash"'):
            assert shape not in text, (rel, shape)


def hermes_installed(cache: Path) -> tuple[Path, dict[str, str], str]:
    """A harness cache at `cache` where hermes is installed (its marker file); the environment and the
    `harnessrl` command that use it."""
    hermes = get_harness("hermes").install_dir(cache)
    hermes.mkdir(parents=True)
    (hermes / ".installed").touch()
    env = dict(os.environ, HARNESSRL_CACHE=str(cache), PYTHONPATH=str(SRC.parent))
    return hermes, env, str(Path(sys.executable).parent / "harnessrl")


def test_harness_list_finds_every_install_and_is_complete_when_piped(tmp_path: Path) -> None:
    """`harnessrl harness list` asks each adapter for its install folder (hermes' is named after its
    harness, not its PyPI package), prints every cell in full into a pipe, and `--json` a line each."""
    hermes, env, harnessrl = hermes_installed(tmp_path)
    table = subprocess.run(
        [harnessrl, "harness", "list"], capture_output=True, text=True, env=env, check=True
    )
    row = next(line for line in table.stdout.splitlines() if " hermes " in line)
    assert "hermes-agent==0.19.0" in row and str(hermes) in row, table.stdout
    for name, h in HARNESSES.items():
        assert f" {h.package or '-'} " in table.stdout, name
    listed = subprocess.run([harnessrl, "harness", "list", "--json"], capture_output=True, text=True, env=env)
    rows = {r["harness"]: r for r in map(json.loads, listed.stdout.splitlines())}
    assert list(rows) == list(HARNESSES)
    assert rows["hermes"] == {
        "harness": "hermes",
        "package": "hermes-agent==0.19.0",
        "version": "0.19.0",
        "from": "pypi",
        "api": ["openai_chat"],
        "installed": True,
        "folder": str(hermes),
    }
    assert [n for n, r in rows.items() if r["installed"]] == ["hermes", "shell"]


def test_harness_install_prints_each_harness_seconds_and_the_total(tmp_path: Path) -> None:
    """`harnessrl harness install` says how long each harness took and the total (CI's log shows what
    the installs cost); an unknown name is a failed line and exit status 1, the others still run."""
    hermes, env, harnessrl = hermes_installed(tmp_path)
    run = subprocess.run(
        [harnessrl, "harness", "install", "nope", "hermes"], capture_output=True, text=True, env=env
    )
    lines = run.stdout.splitlines()
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.fullmatch(r"nope: unknown harness 'nope'; known: .* \(\d+\.\d s\)", lines[0]), lines
    assert re.fullmatch(rf"hermes: {re.escape(str(hermes))} \(\d+\.\d s\)", lines[1]), lines
    assert re.fullmatch(r"1 of 2 harnesses in \d+\.\d s", lines[2]), lines
