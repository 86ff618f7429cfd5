#!/usr/bin/env bash
mkdir -p backup && cp data/raw.csv backup/raw.csv
