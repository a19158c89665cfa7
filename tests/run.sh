#!/usr/bin/env bash
# Runs every test rummy has: unit, integration and end-to-end against a real local LLM.
# Usage: tests/run.sh   (from anywhere; extra args go to cargo test)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked --all-targets "$@"
