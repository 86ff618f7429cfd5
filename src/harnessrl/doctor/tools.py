"""Programs and packages: the C compiler, Node for npm harnesses, the system python, the sandbox agent
environment, the image tools, iproute2, the [train] packages, the model and the tokenizer."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
from functools import partial

from harnessrl.chat.packaged import smollm2_gguf
from harnessrl.chat.tokenizers import qwen3_tokenizer_dir
from harnessrl.doctor.check import Check, Machine, Outcome, fail, ok, run_program, warn
from harnessrl.images.store import missing_tools
from harnessrl.sandbox.agent_env import agent_env_python, built_from
from harnessrl.sandbox.folders import c_compiler
from harnessrl.sandbox.programs import missing_programs, program_names
from harnessrl.types import EngineError

NODE_MIN = (20, 6)
"""The oldest Node every npm harness on the machine's Node accepts (pi: >=20.6.0; claude-code is a
native binary; openclaw and qwen-code bring a Node 24 of their own)."""
NODE_FIX = (
    "curl -fsSL https://deb.nodesource.com/setup_22.x | sudo -E bash - && sudo apt-get install -y nodejs"
)
"""Debian 12's own nodejs is 18: NodeSource's 22 (with npm)."""
IMAGE_FIX = "sudo apt-get install -y podman buildah skopeo umoci mmdebstrap"
"""What `scripts/setup` installs for task images (skopeo and umoci handle OCI layouts by hand)."""
SETUP = "scripts/setup"
PROGRAMS_FIX = (
    "sudo apt-get install -y git make gcc g++ patch file less zip unzip xz-utils bzip2 zstd curl wget jq "
    "sqlite3 bc ed psmisc time"
)
"""The Debian packages of `sandbox/programs.txt` beyond a base system, python3, perl and Node."""


def compiler(m: Machine) -> Outcome:
    cc = c_compiler(m.path)
    if cc is None:
        return warn("no C compiler (cc, gcc, clang): sandboxes run the python agent (~12 ms slower to start)")
    return ok(f"{cc} builds the native sandbox agent")


def node(m: Machine) -> Outcome:
    exe, npm = shutil.which("node", path=m.path), shutil.which("npm", path=m.path)
    if exe is None or npm is None:
        return warn("node or npm is missing: npm harnesses cannot install or run (whitebox, PyPI ones can)")
    try:
        out = run_program(m, [exe, "--version"]).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return warn(f"{exe} --version: {e}")
    found = re.match(r"v(\d+)\.(\d+)", out)
    need = ".".join(map(str, NODE_MIN))
    if found is None or (int(found[1]), int(found[2])) < NODE_MIN:
        return warn(f"node {out or '(no version)'}: npm harnesses need {need} or later")
    return ok(f"node {out} (>= {need}), {npm}")


def system_python(m: Machine) -> Outcome:
    what = f"{m.system_python} with venv and ensurepip"
    try:
        run = run_program(m, [str(m.system_python), "-c", "import venv, ensurepip"])
    except (OSError, subprocess.SubprocessError) as e:
        return warn(f"no {what} ({e}): PyPI harnesses and the agent environment are built on it")
    if run.returncode != 0:
        return warn(f"no {what}: PyPI harnesses and the agent environment are built on it")
    return ok(what)


def agent_env(m: Machine) -> Outcome:
    env = m.agent_env
    if not agent_env_python(env).exists():
        return warn(f"no agent environment at {env}: agents get the system python3 only (no python, pytest)")
    wanted = m.checkout / "scripts" / "agent_env.txt" if m.checkout is not None else None
    if wanted is not None and wanted.is_file() and not built_from(env, wanted):
        return warn(f"{env} was built from other requirements than {wanted}")
    return ok(f"{env}: python, pytest, numpy, pandas for agents and checkers")


def agent_env_fix(m: Machine) -> str:
    """`scripts/agent_env` builds at `<checkout>/.cache/agent-env` unless told where."""
    if m.checkout is not None and m.agent_env == m.checkout / ".cache" / "agent-env":
        return "scripts/agent_env"
    return f"HARNESSRL_AGENT_ENV={m.agent_env} scripts/agent_env"


def image_tools(m: Machine) -> Outcome:
    missing = missing_tools(path=m.path)
    if missing:
        return warn(f"tasks with images need: {'; '.join(missing)}")
    return ok("podman, buildah and mmdebstrap for task images")


def sandbox_programs(m: Machine) -> Outcome:
    """The listed programs a sandbox shows on PATH (`sandbox/programs.py`) that this host lacks
    (in the standard system folders the sandbox links them from, or in `m.path` when set)."""
    dirs = m.path.split(":") if m.path is not None else None
    missing = missing_programs(dirs)
    if missing:
        shown = ", ".join(missing[:12]) + (f" and {len(missing) - 12} more" if len(missing) > 12 else "")
        return warn(f"{len(missing)} of the sandbox's programs are not on this machine: {shown}")
    return ok(f"all {len(program_names())} programs of a sandbox's PATH (sandbox/programs.txt)")


def iproute2(m: Machine) -> Outcome:
    found = shutil.which("ip", path=m.path)
    return ok(found) if found else warn("no `ip` (iproute2): the two-node Ray simulation (multinode) skips")


def train_packages() -> Outcome:
    try:
        wanted = importlib.metadata.requires("harnessrl") or []
    except importlib.metadata.PackageNotFoundError:
        return fail("harnessrl is not installed in this python: its [train] packages cannot be read")
    names = [m[0] for r in wanted if 'extra == "train"' in r and (m := re.match(r"[A-Za-z0-9_.-]+", r))]
    found, missing = [], []
    for name in names:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        return fail(f"[train] packages missing: {', '.join(missing)}")
    return ok(", ".join(found))


def model_package() -> Outcome:
    try:
        gguf = smollm2_gguf()
    except EngineError as e:
        return fail(f"the default policy's model file: {e}")
    return ok(f"{gguf} ({gguf.stat().st_size / 2**20:.0f} MiB)")


def tokenizer_package() -> Outcome:
    try:
        return ok(str(qwen3_tokenizer_dir()))
    except FileNotFoundError as e:
        return fail(f"the Qwen3 tokenizer: {e}")


def tool_checks(m: Machine) -> list[Check]:
    """Programs and packages, in the order they print (`node` and `python3` run a program)."""
    return [
        Check("python-packages", train_packages, SETUP),
        Check("model-package", model_package, SETUP),
        Check("tokenizer-package", tokenizer_package, SETUP),
        Check("agent-env", partial(agent_env, m), agent_env_fix(m)),
        Check("cc", partial(compiler, m), "sudo apt-get install -y gcc libc6-dev"),
        Check("image-tools", partial(image_tools, m), IMAGE_FIX),
        Check("iproute2", partial(iproute2, m), "sudo apt-get install -y iproute2"),
        Check("sandbox-programs", partial(sandbox_programs, m), PROGRAMS_FIX),
        Check("node", partial(node, m), NODE_FIX, slow=True),
        Check("python3", partial(system_python, m), "sudo apt-get install -y python3-venv", slow=True),
    ]
