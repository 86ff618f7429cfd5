#!/usr/bin/env bash
# One-GPU check: trainer tokens/s and MFU for a Qwen3-0.6B-shaped model built from config (random
# weights, no download), tree-packed vs path-by-path, SDPA vs FlexAttention, and the embedded engine's
# generation tokens/s at 1 and 16 concurrent requests, in one table (benchmarks/gpu_check.py), in under
# 6 minutes on one H200. Needs: a python with PyTorch (2.11 CUDA build) and transformers; NO vLLM and
# NO network. Missing pure-Python packages travel as wheels in .whl/ (benchmarks/gpu_wheels.sh makes
# that folder on a machine with PyPI; this script installs it into /tmp/harnessrl-site when present).
#
#   bash benchmarks/gpu_check.sh                        # on the GPU machine
#   bash benchmarks/gpu_check.sh --tiny --device cpu --skip-flex   # dry run of the same code on a CPU
#
# Extra arguments go to gpu_check.py (--leaves, --prefix, --gen-tokens, --peak-tflops, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ -d .whl ] && compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/harnessrl-site .whl/*.whl
  export PYTHONPATH=/tmp/harnessrl-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
missing=$("$PY" - <<'PY'
import importlib.util
print(" ".join(m for m in ("torch", "transformers", "pydantic", "safetensors", "orjson") if importlib.util.find_spec(m) is None))
PY
)
if [ -n "$missing" ]; then
  echo "missing python packages: $missing (carry them as wheels: benchmarks/gpu_wheels.sh)" >&2
  exit 2
fi
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'gpu', torch.cuda.is_available())"
exec timeout 360 "$PY" benchmarks/gpu_check.py "$@"
