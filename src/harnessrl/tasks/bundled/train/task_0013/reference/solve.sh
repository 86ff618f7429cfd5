#!/usr/bin/env bash
set -euo pipefail
sed -i 's/^__version__ = "0.8.1"/__version__ = "0.9.0"/' src/weatherkit/version.py
sed -i 's/^version = "0.8.1"/version = "0.9.0"/' pyproject.toml
sed -i 's/weatherkit==0.8.1/weatherkit==0.9.0/' README.md
