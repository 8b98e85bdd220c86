#!/usr/bin/env bash
# The demo in one command: installs what is missing, builds lagsight, starts a real local Kafka
# broker with traffic and groups of every kind, and runs lagsight against it on :9713.
# Usage: deploy/demo.sh [--listen 127.0.0.1:9713]
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --parallel "$(nproc)" --target lagsight
exec .venv/bin/python deploy/demo/run_demo.py "$@"
