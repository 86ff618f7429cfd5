#!/usr/bin/env bash
# Download, on a machine with PyPI, the wheels benchmarks/gpu_check.sh needs on an offline GPU machine
# whose python (3.12) has torch, transformers' dependencies and numpy but not pydantic, orjson or this
# project's transformers: into .whl/ (keep it out of git: `echo /.whl/ >> .git/info/exclude`).
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER=${GPU_PYTHON_VERSION:-3.12}
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  orjson==3.13.0 \
  transformers==5.24.0
ls -la .whl
