"""Agent CLIs that were examined and could not be made to work here, each with its exact reason.

A harness here must be an unmodified published CLI, installed from a committed npm or PyPI lockfile
(wheels only; install scripts run offline), pointed at the proxy through a custom base URL in one of
its dialects, and run headless in the sandbox with no network but the proxy. Each record names the
package and version that was read and what in it (a file and line, its metadata, a doc, or the
output of a command) rules it out, so the reason can be checked again when a new version appears.
`scripts/harness_compat` prints these as docs/harnesses.md's second table; a name here is never also in
`registry.HARNESSES` (tests/test_harness_compat_table.py checks that). Examined 2026-12-04.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unsupported:
    """One agent CLI that does not run as a harness, and why."""

    name: str
    """What the CLI is called (its command or project name)."""
    package: str
    """The published package and pinned version examined (registry and name)."""
    summary: str
    """The reason in a few words."""
    reason: str
    """The exact, checkable reason: the file and line, metadata, doc or command output that shows it."""


UNSUPPORTED: tuple[Unsupported, ...] = (
    Unsupported(
        "amp",
        "npm @ampcode/cli 0.0.1790142911-g7618fb (the renamed @sourcegraph/amp)",
        "needs an ampcode.com login; no custom model endpoint",
        "`amp -x 'say hi'` with a fresh HOME prints `No API key found. Starting login flow...` and a "
        "https://ampcode.com/auth/cli-login URL, then waits for a pasted code; threads and model routing run "
        "on ampcode.com (`amp model-providers` manages keys stored in the Amp account), and `amp --help` "
        "offers no base-URL option or variable.",
    ),
    Unsupported(
        "auggie",
        "npm @augmentcode/auggie 0.36.0",
        "speaks Augment's private API to an Augment tenant; needs an Augment login",
        "`auggie --print 'say hi'` exits with `No auth provided. Please log in with auggie login or set "
        "the AUGMENT_SESSION_AUTH environment variable`. With AUGMENT_SESSION_AUTH pointing its tenantURL "
        "at a local server it calls POST /get-models, /agents/list-remote-tools and /chat-stream "
        '(augment.mjs: `callApiStream(..., "chat-stream", ...)`): Augment\'s own protocol, not an '
        "OpenAI, Anthropic or Gemini dialect; its BYOK keys (AUGMENT_OPENAI_API_KEY, ...) are sent inside "
        "that request (`bring_your_own_key`) to Augment's backend.",
    ),
    Unsupported(
        "codebuff",
        "npm codebuff 1.0.685",
        "downloads its binary from codebuff.com at run time; Codebuff's backend runs the model",
        "The package is a launcher only: launcher.js:405 asks https://registry.npmjs.org/codebuff/latest "
        "and launcher.js:736-738 downloads the binary from https://codebuff.com/api/releases/download/... "
        "on first run; offline `codebuff --help` prints `Failed to determine latest version`. The agent "
        "talks to Codebuff's server (an account is needed); a custom OpenAI-compatible endpoint is an open "
        "request (CodebuffAI/freebuff#278).",
    ),
    Unsupported(
        "crush",
        "npm @charmland/crush 0.96.1",
        "binary is fetched from github.com by its install script and at run time",
        "The npm package holds no binary: package.json `archives` lists "
        "https://github.com/charmbracelet/crush/releases/download/v0.96.1/crush_0.96.1_Linux_x86_64.tar.gz "
        "(sha256 5411b090...), which lib.js:115-123 `install()` downloads from the postinstall script and "
        "again from `run()` (lib.js:99-100) when missing; install scripts run offline in the sandbox here. "
        "Crush itself would fit (OpenAI-compatible providers in crush.json, `crush run`), given an installer "
        "for a checksummed GitHub release asset.",
    ),
    Unsupported(
        "deepagents-cli",
        "PyPI deepagents-cli 0.3.0",
        "no longer a coding agent: deployment tooling for LangSmith-hosted agents",
        "Its PyPI description: `deepagents-cli is deprecated and no longer maintained. This is the final "
        "release.`; its commands (`deepagents init/deploy/agents/mcp-servers`) manage agents on the "
        "Managed Deep Agents platform and need LANGSMITH_API_KEY. The coding agent moved to "
        "deepagents-code (next entry).",
    ),
    Unsupported(
        "deepagents-code",
        "PyPI deepagents-code 0.2.2 (`dcode`)",
        "needs Python 3.14",
        "Its metadata says Requires-Python `<3.15,>=3.14`; harness venvs are made from /usr/bin/python3 "
        "(`install.HOST_PYTHON`), which is 3.11.2 here, and a 3.13 runtime would not satisfy it either.",
    ),
    Unsupported(
        "open-interpreter",
        "PyPI open-interpreter 0.4.3",
        "two pinned dependencies exist only as sdists",
        "Installs are wheels only (`lockfiles.PIP_STRICT`: --only-binary=:all:, no setup.py runs). "
        "`pip download --only-binary=:all: --python-version 3.11 open-interpreter==0.4.3` fails with "
        "`No matching distribution found for html2text<2025.0.0,>=2024.2.26`: html2text 2024.2.26 is only "
        "html2text-2024.2.26.tar.gz, and its `wget<4.0,>=3.2` is only wget-3.2.zip. The CLI would otherwise "
        "fit (`interpreter --stdin -y --api_base ... --offline --disable_telemetry`).",
    ),
    Unsupported(
        "openhands",
        "PyPI openhands 1.16.0 (the CLI; openhands-ai 1.11.0 is the server)",
        "needs exactly Python 3.12",
        "openhands-1.16.0.dist-info/METADATA:11 `Requires-Python: ==3.12.*` (openhands-sdk and "
        "openhands-tools 1.21.0: >=3.12); harness venvs are made from /usr/bin/python3, 3.11.2 here, and "
        "a 3.13 runtime would not satisfy ==3.12.*. openhands-ai 1.11.0 needs >=3.12,<3.14 and runs its "
        "sandbox through docker==7.1.0. The CLI would otherwise fit: `--headless` with "
        "`--override-with-envs` and LLM_BASE_URL (openhands_cli/stores/agent_store.py:133).",
    ),
    Unsupported(
        "qodercli",
        "npm @qoder-ai/qodercli 1.1.52",
        "needs a Qoder login even for a custom provider",
        "With `providers.local = {type: openai-compatible, baseUrl: http://127.0.0.1:18777/v1, ...}` in "
        "~/.qoder/settings.json, `qodercli -p 'say hi' -m local/m --dangerously-skip-permissions` prints "
        "`Not logged in · Please run /login`, exits 1 and sends nothing to the endpoint. In "
        "bundle/qodercli.js custom providers (BYOK) are gated by the account's server-side `allow_byok` "
        "switch (`normalizeUserStatus`) and stored per user id (`BYOK configuration requires an "
        "authenticated user`); README: login by browser or QODER_PERSONAL_ACCESS_TOKEN only.",
    ),
    Unsupported(
        "swe-agent",
        "PyPI sweagent 0.0.1 (GitHub SWE-agent/SWE-agent 1.x is not published)",
        "not on PyPI since a 2024 Docker-only stub",
        "PyPI's only sweagent release is 0.0.1 (uploaded 2024-04-02): no console script, and "
        "sweagent/environment/swe_env.py:371 `docker.from_env()` runs every task in a Docker container. "
        "SWE-agent 1.x (pyproject.toml `[project.scripts] sweagent`) installs only from a git checkout "
        "(`pip install -e .`), which no npm/PyPI lockfile can pin; its authors' successor, "
        "mini-swe-agent, is a supported harness.",
    ),
    Unsupported(
        "terminus-2",
        "PyPI harbor 0.26.0 (Terminus-2 is harbor.agents.terminus_2)",
        "not a CLI: an agent class driving tmux through Harbor's container environments",
        "Terminus2 (terminus_2.py:194) is a BaseAgent run inside the `harbor` process; it acts only "
        "through a Harbor BaseEnvironment, installing and driving tmux with `environment.exec` "
        "(tmux_session.py:129), and every environment type (models/environment_type.py:4-42: docker, "
        "podman, daytona, e2b, modal, ...) is a container runtime or cloud sandbox, none the local "
        "machine. Running it would mean `harbor run` starting containers inside our sandbox, not a CLI "
        "talking to the proxy; harbor also needs Python >=3.12.",
    ),
    Unsupported(
        "trae-agent",
        "GitHub bytedance/trae-agent (pyproject 0.1.0; not on PyPI or npm)",
        "not published; needs Python 3.12",
        "`pip download trae-agent` finds no versions and https://pypi.org/pypi/trae-agent/json is a 404; "
        "its README installs from a clone (`git clone ...; uv sync`), and pyproject.toml says "
        "requires-python `>=3.12` (harness venvs use /usr/bin/python3, 3.11.2 here).",
    ),
)
"""The CLIs not supported, in name order."""
