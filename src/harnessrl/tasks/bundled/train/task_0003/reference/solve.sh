#!/usr/bin/env bash
mkdir -p project/src project/tests && touch project/src/__init__.py project/tests/__init__.py && printf '# project\n' > project/README.md
