"""`HarnessBase`: what every adapter shares, so that an adapter module holds only what is its own
(its pins, its config files, its command line and its output format).

- Install: an adapter declares `installer` and `package` (`version` is read from it; and, for npm,
  `install_scripts` and `pinned_node`; for PyPI, `python` when it needs the Python 3.13 runtime of
  `images/runtime.py`, and `pip_left_out`); its lockfile is `install.LOCKS / name`. `install_dir`
  computes the one install folder (`harnessrl harness list` and the runner ask it too),
  `ensure_installed` installs from the lockfile (`install.npm_install` / `install.python_install`),
  `lock` rewrites the lockfile.
- Paths: `executable(ctx)` (the `command` in the install's bin folder), `launch_path(ctx)` (the
  sandbox's PATH, with the pinned Node first when the harness needs one); `launch_spec(ctx, argv, env)`,
  what `prepare` returns: run in the workspace, colour off.
- Config files: `toml_document`, `mcp_servers_json` / `mcp_settings` (the MCP stdio-server shape;
  `write_mcp_settings` writes it), `context_window` / `max_output` (the sizes it declares), `KEY_ENV`.
- Options: `choices` (option -> allowed values, the first the default) checked by `check_options`
  before any sandbox is made, read with `choice`; `model(ctx)` is the endpoint's model name or the
  adapter's `default_model`.
- The reference sequence the scripted engine plays (`reference_turns`: run the command through the
  shell tool, then finish) and that engine.

Adding a harness = one module with a `HarnessBase` subclass + one line in `registry.HARNESSES`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harnessrl.harnesses import install, lockfiles
from harnessrl.harnesses.adapter import HarnessContext, Installer, LaunchSpec, McpServer, Mode, ShellTool
from harnessrl.images import runtime
from harnessrl.sandbox.programs import PROGRAMS_DIR
from harnessrl.types import ChatMessage, DialectName, HarnessError, ImageError

if TYPE_CHECKING:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.protocols import Engine

CONTEXT_WINDOW = 131072
"""The context window adapters declare to their harness unless option `context_window` says otherwise."""
EMPTY: Mapping[str, Any] = MappingProxyType({})
"""No keys (a read-only default)."""
MAX_OUTPUT = 8192
"""The output cap an adapter that must declare one gives its model, unless option `max_tokens` is set."""
KEY_ENV = "HARNESSRL_API_KEY"
"""The environment variable an adapter hands the endpoint's key in when its harness's config can name
a variable instead of holding the key."""


class HarnessBase:
    """Defaults every adapter shares; subclasses set the class attributes, `prepare` and `parse`."""

    name: str
    package: str = ""
    """Pinned package spec (`@openai/codex@0.171.0`, `mini-swe-agent==2.4.6`); "" = nothing to install."""
    says_version: str | None = None
    """What its binary prints for `--version` when that differs from `version` (a version hard-coded
    in the CLI, as Grok CLI's); None: it prints `version`."""

    @property
    def version(self) -> str:
        """The pinned version: what follows the last `@` (npm) or `==` (PyPI) of `package`."""
        return re.split(r"@|==", self.package)[-1] if self.package else ""

    installer: Installer = "npm"
    command: str = ""
    """Its executable: in `node_modules/.bin` of an npm install, in `bin` of a PyPI venv (not set:
    its `name`, when it has a package)."""
    install_scripts: tuple[str, ...] = ()
    """npm packages whose install scripts it cannot work without (they run in a sandbox); every
    other package's scripts are skipped."""
    pinned_node: bool = False
    """Needs a newer Node than the machine's: `install.NODE_PACKAGE` is locked beside it and put
    first on PATH (for its install scripts and its launch)."""
    python: str | None = None
    """None: a PyPI harness is installed with and runs on the host's python (`install.HOST_PYTHON`);
    "3.13": on the Python runtime (`images/runtime.py`, made once per machine when first needed)."""
    pip_left_out: Mapping[str, str] = MappingProxyType({})
    """Requirements of `package` its lockfile leaves out (name -> why: no wheel of them, so they cannot
    be installed without running their build); every lockfile is installed whole, `--no-deps`."""
    shell_tool: ShellTool | None = None
    """None: the harness's model has no shell of its own (the `shell` harness runs a fixed command)."""
    modes: tuple[Mode, ...] = ()
    shorter_prompt: str = ""
    """How to make this harness's first prompt shorter, when it has a way (`option bare=true`)."""
    finish: str = "done"
    """The final answer of the reference sequence."""
    default_model: str = "policy"
    """The model name it asks for when the endpoint names none (a neutral one unless the harness
    needs a name it knows)."""
    choices: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    """Options that pick one of a few values (`api`): the allowed values, the first the default."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.package and not cls.command:
            cls.command = cls.name

    # ---- install ------------------------------------------------------------------------------

    @property
    def lock_dir(self) -> Path:
        """Its committed lockfile folder."""
        return install.LOCKS / self.name

    @property
    def npm_specs(self) -> tuple[str, ...]:
        """What its npm lockfile pins at the top: the CLI, and the Node it needs."""
        return (*((install.NODE_PACKAGE,) if self.pinned_node else ()), self.package)

    def install_dir(self, cache_root: Path | None = None) -> Path:
        """Where it is installed (module docstring): `<harnesses>/<name>-<version>-<lock digest>`."""
        if self.installer == "none":
            return Path("/usr")
        runtime_tag = runtime.runtime_digest() if self.python else ""
        return install.install_folder(self.name, self.version, self.lock_dir, cache_root, runtime_tag)

    def ensure_installed(self, cache_root: Path | None = None) -> Path:
        """Install from its lockfile once (`install.py`) and return `install_dir`."""
        target = self.install_dir(cache_root)
        if self.installer == "npm":
            prefix = (install.NODE_BIN,) if self.pinned_node else ()
            return install.npm_install(
                self.lock_dir, target, scripts=self.install_scripts, path_prefix=prefix
            )
        if self.installer == "pypi":
            root = self._runtime(cache_root)
            return install.python_install(self.lock_dir, target, runtime=root)
        return target

    def _runtime(self, cache_root: Path | None) -> Path | None:
        """The root of the Python runtime it runs on (made first if needed), None for the host's python."""
        if self.python is None:
            return None
        if self.python != runtime.PYTHON:
            raise HarnessError(
                f"{self.name} needs Python {self.python}; the runtime is Python {runtime.PYTHON}"
            )
        try:
            return runtime.ensure_runtime(cache_root)[0]
        except ImageError as e:
            raise HarnessError(f"{self.name} runs on Python {self.python}, and: {e}") from e

    def is_installed(self, cache_root: Path | None = None) -> bool:
        return self.installer == "none" or install.installed(self.install_dir(cache_root))

    def lock(self) -> Path:
        """Resolve its pinned package again and rewrite its lockfile folder; returns the folder."""
        if self.installer == "npm":
            lockfiles.lock_npm(self.npm_specs, self.lock_dir)
        elif self.installer == "pypi" and self.python:
            on = lockfiles.Interpreter.of_runtime(self._runtime(None) or Path())
            label = f"Python {self.python} (the runtime of images/runtime.py)"
            left_out = dict(self.pip_left_out)
            lockfiles.lock_pypi(self.package, self.lock_dir, on, left_out=left_out, label=label)
        elif self.installer == "pypi":
            lockfiles.lock_pypi(self.package, self.lock_dir, lockfiles.Interpreter(install.HOST_PYTHON))
        return self.lock_dir

    # ---- launch -------------------------------------------------------------------------------

    def entry(self, install_dir: Path) -> Path:
        """Its `command` in the install at `install_dir`: the venv's or node_modules' bin folder."""
        return install_dir / ("bin" if self.installer == "pypi" else "node_modules/.bin") / self.command

    def executable(self, ctx: HarnessContext) -> str:
        """Its `command` in the install, as seen inside the sandbox (`entry`)."""
        return str(self.entry(ctx.install_dir))

    def launch_path(self, ctx: HarnessContext) -> str:
        """PATH for its launch: the sandbox's programs (`sandbox/programs.py`: the same on every
        machine), after the pinned Node when it has one."""
        node = [str(ctx.install_dir / install.NODE_BIN)] if self.pinned_node else []
        return os.pathsep.join([*node, PROGRAMS_DIR])

    def launch_spec(
        self,
        ctx: HarnessContext,
        argv: list[str],
        env: dict[str, str],
        rlimits: dict[str, int | None] | None = None,
    ) -> LaunchSpec:
        """`prepare`'s result: `argv` run in the workspace with `env` and `NO_COLOR=1` (output without
        colour escapes, for `parse`), under `rlimits` when given."""
        return LaunchSpec(argv=argv, env=env | {"NO_COLOR": "1"}, cwd=ctx.workspace, rlimits=rlimits or {})

    def write_mcp_settings(
        self,
        ctx: HarnessContext,
        rel: str,
        *,
        first: Mapping[str, Any] = EMPTY,
        last: Mapping[str, Any] = EMPTY,
    ) -> None:
        """`mcp_settings` of the launch's MCP servers (`first`, `last`: the keys beside each server's),
        written to `rel` under HOME when it has any."""
        if ctx.mcp_servers:
            ctx.write_json(rel, mcp_settings(ctx.mcp_servers, first=first, last=last))

    def model(self, ctx: HarnessContext) -> str:
        """The model name to ask for: the endpoint's, else `default_model`."""
        return ctx.endpoint.model or self.default_model

    def check_options(self, options: Mapping[str, Any]) -> None:
        """ValueError for a `choices` option set to a value not among them."""
        for option, allowed in self.choices.items():
            if option in options and options[option] not in allowed:
                raise ValueError(f"{self.name} {option} must be one of {allowed}, not {options[option]!r}")

    def choice(self, ctx: HarnessContext, option: str) -> str:
        """The value of a `choices` option (its default when not set)."""
        return str(ctx.options.get(option, self.choices[option][0]))

    # ---- the reference sequence ---------------------------------------------------------------

    def final_turns(self) -> list[ChatMessage | str]:
        """How the reference sequence ends: the final answer (a harness that ends on a command overrides)."""
        return [self.finish]

    def reference_turns(self, *commands: str) -> list[ChatMessage | str]:
        """The known-good sequence: each command through the shell tool, then `final_turns()`."""
        if self.shell_tool is None:
            return self.final_turns()
        return [*(self.shell_tool.turn(c) for c in commands), *self.final_turns()]

    def reference_engine(
        self, fmt: ChatFormat, scripts: Sequence[tuple[str, Sequence[str]]], *, max_context: int | None
    ) -> Engine:
        """The scripted engine answering a prompt that contains a script's match (first wins) with the
        `reference_turns` of its commands, one turn per call."""
        from harnessrl.engines.scripted import Script, ScriptedEngine

        if self.shell_tool is None:  # e.g. the shell harness: any call it makes gets the final answer
            return ScriptedEngine(fmt, self.final_turns(), max_context=max_context)
        built = [Script(turns=self.reference_turns(*commands), match=match) for match, commands in scripts]
        return ScriptedEngine(fmt, built, max_context=max_context)


def one_of(**options: tuple[str, ...]) -> Mapping[str, tuple[str, ...]]:
    """`choices` of an adapter: each option's allowed values, the first its default (read-only)."""
    return MappingProxyType(options)


def option_modes(
    option: str, values: Mapping[str, tuple[DialectName, int | None]]
) -> tuple[tuple[Mode, ...], Mapping[str, tuple[str, ...]]]:
    """`modes, choices` of an adapter whose modes differ in one option (`api`, `provider`): each value
    with the dialect it speaks and its first prompt's size; the first value is the default (its mode
    sets no option). Each value is written once."""
    modes = tuple(
        Mode(dialect, tokens, {option: value} if i else {}, f"{option} {value}")
        for i, (value, (dialect, tokens)) in enumerate(values.items())
    )
    return modes, one_of(**{option: tuple(values)})


def context_window(ctx: HarnessContext) -> int:
    """Option `context_window` (tokens), else CONTEXT_WINDOW."""
    return int(ctx.options.get("context_window", CONTEXT_WINDOW))


def max_output(ctx: HarnessContext) -> int:
    """Option `max_tokens`, else MAX_OUTPUT: the output cap an adapter declares for its model."""
    return int(ctx.options.get("max_tokens", MAX_OUTPUT))


def toml_str(value: str) -> str:
    """A TOML basic string (JSON string escaping is a valid subset of TOML's)."""
    return json.dumps(value)


def toml_table(values: Mapping[str, str]) -> str:
    """An inline TOML table of strings: `{ "K" = "v", ... }`."""
    return "{ " + ", ".join(f"{toml_str(k)} = {toml_str(v)}" for k, v in values.items()) + " }"


def toml_value(value: str | bool | int | Sequence[str] | Mapping[str, str]) -> str:
    """A TOML value: a string, boolean, integer, array of strings or inline table of strings."""
    if isinstance(value, str):
        return toml_str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Mapping):
        return toml_table(value)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(map(toml_str, value)) + "]"
    raise TypeError(f"toml_value: no TOML form here for {value!r}")


TomlSection = tuple[str, Mapping[str, Any]]
"""One section of `toml_document`: its header and its keys."""


def toml_document(*sections: TomlSection) -> str:
    """A TOML file of `(header, keys)` sections, a blank line apart: the header as it stands
    (`[table]`, `[[array]]`; "" for the top-level keys), then a `key = value` line per key (TOML
    has no null: a key whose value is None is left out)."""
    blocks = [
        [*([header] if header else []), *(f"{k} = {toml_value(v)}" for k, v in keys.items() if v is not None)]
        for header, keys in sections
    ]
    return "\n\n".join("\n".join(lines) for lines in blocks) + "\n"


def positive_int(value: Any, option: str) -> int:
    """An adapter option that must be a whole number >= 1 (a config value, not harness output)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"harness option {option} must be a whole number >= 1, got {value!r}")
    return value


def mcp_servers_json(
    servers: Sequence[McpServer], *, first: Mapping[str, Any] = EMPTY, last: Mapping[str, Any] = EMPTY
) -> dict[str, dict[str, Any]]:
    """`{name: {command, args, env}}`: the stdio-server shape most harnesses read, with the keys a
    harness wants beside those, `first` before them (`type: stdio`), `last` after (`trust: true`)."""
    return {
        s.name: {**first, "command": s.command[0], "args": s.command[1:], "env": s.env, **last}
        for s in servers
    }


def mcp_settings(
    servers: Sequence[McpServer], *, first: Mapping[str, Any] = EMPTY, last: Mapping[str, Any] = EMPTY
) -> dict[str, Any]:
    """`{"mcpServers": mcp_servers_json(servers, first=, last=)}`: the MCP settings file (or
    `--mcp-config` value) of Claude Code and of the harnesses that took its shape."""
    return {"mcpServers": mcp_servers_json(servers, first=first, last=last)}
