#!/usr/bin/env bash
wc -l < words.txt > count.txt
