#!/usr/bin/env bash
find cache -type f -name '*.tmp' -delete
