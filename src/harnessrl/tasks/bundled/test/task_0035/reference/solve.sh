#!/usr/bin/env bash
chmod +x run.sh && mkdir -p logs && touch logs/.keep
