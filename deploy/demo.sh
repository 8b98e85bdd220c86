#!/usr/bin/env bash
# The demo in one command: installs what the demo needs and is missing (not what only the tests
# need), builds lagsight, starts a real local Kafka broker with traffic and groups of every kind
# and a real Flink 2.x job, and runs lagsight against them on :9713. Prints each step with the
# seconds since it started.
# Usage: deploy/demo.sh [--listen 127.0.0.1:9713]
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "demo: [${SECONDS} s] $*"; }
step "installing what is missing (deploy/install-deps.sh --demo)"
deploy/install-deps.sh --demo
step "building lagsight"
# BUILD_TESTING=OFF: the demo needs neither the tests nor promtool; tests/run.sh turns it on.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build build --parallel "$(nproc)" --target lagsight
step "starting Kafka, Flink and lagsight"
exec .venv/bin/python deploy/demo/run_demo.py "$@"
