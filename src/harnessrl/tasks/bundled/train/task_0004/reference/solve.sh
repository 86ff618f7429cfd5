#!/usr/bin/env bash
printf '{"name": "demo", "port": 8080, "debug": false}\n' > config.json
