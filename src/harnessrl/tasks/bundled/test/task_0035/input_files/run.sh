#!/usr/bin/env bash
echo "starting worker"
