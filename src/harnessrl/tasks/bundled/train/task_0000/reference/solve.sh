#!/usr/bin/env bash
printf 'Hello, harness!\n' > hello.txt
