#!/usr/bin/env bash
# Builds lagsight and runs every test: unit (Catch2 + promtool, via ctest), a short fuzzing pass,
# then integration against a real Kafka broker and real Flink MiniClusters it starts itself
# (pytest), and last the unit tests and three integration modules again on an ASan + UBSan
# build. Exits non-zero when anything fails.
# Usage: tests/run.sh [extra pytest arguments]
#        tests/run.sh --unit    the fast lane: build, then the unit tests (ctest) only
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
  -DLAGSIGHT_REQUIRE_TEST_TOOLS=ON >/dev/null
cmake --build build --parallel "$(nproc)"

echo "== unit tests"
(cd build && ctest --output-on-failure)
[ "${1:-}" != --unit ] || exit 0

echo "== fuzzing (libFuzzer + ASan/UBSan: Flink REST parsers, configs, listen addresses, durations, trace lines)"
# 15 s per target: six targets make ~90 s of fuzzing plus a ~45 s clang build on CI's 2 cores,
# enough to replay every seed and catch a regression in the inputs they cover; the long runs
# (millions of executions, README "Fuzzing") are done by hand with a larger argument.
tests/fuzz/run.sh 15

echo "== deployment tests (systemd unit, Dockerfile, helm chart; systemd-analyze, helm, promtool)"
# (test_rules.py and test_dashboard.py beside them run in ctest above.)
LAGSIGHT_BIN="$PWD/build/cmd/lagsight/lagsight" .venv/bin/python -m pytest -v \
  tests/deploy/test_systemd.py tests/deploy/test_dockerfile.py tests/deploy/test_helm.py

# The sanitized build for the last stage compiles meanwhile, one job at the lowest CPU priority:
# the integration tests spend much of their ~38 minutes waiting on real systems (polls, refreshes,
# checkpoints), so the ~6 minutes this build took on its own go into CPU they leave idle, and
# whatever CPU they need they get first (nice 19). What is left compiles at full speed after them.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DLAGSIGHT_SANITIZE=ON >/dev/null
nice -n 19 cmake --build build-asan --target lagsight lagsight_unit_tests --parallel 1 \
  >build-asan/build.log 2>&1 &
asan_build=$!

echo "== integration tests (real Kafka broker, real Flink 1.20 and 2.x MiniClusters)"
# The daemon, Flink-fault and Flink modules run once, below, against the sanitized build (also
# -O2): running them here too cost ~5 of the suite's 54 minutes on 2 cores.
# --durations: the suite must stay well under CI's 90 minutes; its log names the slowest tests.
LAGSIGHT_BIN="$PWD/build/cmd/lagsight/lagsight" .venv/bin/python -m pytest tests/integration -v \
  --durations=15 \
  --ignore=tests/integration/test_daemon.py --ignore=tests/integration/test_flink_faults.py \
  --ignore=tests/integration/test_flink.py "$@"

echo "== unit tests, then the daemon, fault and Flink tests, against an ASan + UBSan build (build-asan/)"
# Any memory error, undefined behaviour or leak aborts the unit tests, or lagsight (a leak fails
# its exit at SIGTERM), and so ends the test that started it (each lagsight must exit 0). Only
# the daemon and the unit tests are built here, at -O1 with line tables only (-g1: enough for
# the sanitizers' stack traces): measured on 2 cores, that halves the sanitized compile
# (analyzer.cpp 44 s -> 22 s, a unit test file 26 s -> 15 s), which pays for the unit tests.
if ! wait "$asan_build"; then
  tail -50 build-asan/build.log
  echo "the sanitized build failed (build-asan/build.log)" >&2
  exit 1
fi
cmake --build build-asan --target lagsight lagsight_unit_tests --parallel "$(nproc)"
export ASAN_OPTIONS=halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build-asan/tests/unit/lagsight_unit_tests
LAGSIGHT_BIN="$PWD/build-asan/cmd/lagsight/lagsight" .venv/bin/python -m pytest -v --durations=5 \
  tests/integration/test_daemon.py tests/integration/test_flink_faults.py \
  tests/integration/test_flink.py
