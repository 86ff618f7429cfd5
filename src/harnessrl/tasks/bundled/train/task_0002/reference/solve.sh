#!/usr/bin/env bash
mv draft_report.md report_final.md
