#!/usr/bin/env bash
echo '- buy coffee filters' >> notes/todo.txt
