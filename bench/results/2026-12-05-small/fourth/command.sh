#!/usr/bin/env bash
# The fourth call ran the second's command as it stands, on an H200 (the second ran on an H100).
exec bash "$(dirname "$0")/../second/command.sh"
