#!/usr/bin/env bash
# Builds lagsight and runs every test: unit (Catch2 + promtool, via ctest), the deployment
# tests, then integration against a real Kafka broker and real Flink MiniClusters it starts
# itself (pytest) in two lanes side by side; the second lane ends with the unit tests and four
# integration modules again on an ASan + UBSan build, and a short fuzzing pass runs at idle
# priority beside them. Exits non-zero when anything fails.
# Usage: tests/run.sh [extra pytest arguments]
#        tests/run.sh --unit    the fast lane: build, then the unit tests (ctest) only
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's heading carries the time of day: the log then says where the suite's minutes go.
echo "== [$(date +%T)] dependencies (deploy/install-deps.sh)"
deploy/install-deps.sh

echo "== [$(date +%T)] build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
  -DLAGSIGHT_REQUIRE_TEST_TOOLS=ON >/dev/null
# The daemon and the unit tests first: the benchmarks (tests/bench) are built at the end of
# integration lane 1, which ended 6 minutes before lane 2 in the last measured run.
cmake --build build --parallel "$(nproc)" --target lagsight lagsight_unit_tests

echo "== [$(date +%T)] unit tests"
(cd build && ctest --output-on-failure)
[ "${1:-}" != --unit ] || exit 0

echo "== [$(date +%T)] deployment tests (systemd unit, Dockerfile, helm chart; systemd-analyze, helm, promtool)"
# (test_rules.py and test_dashboard.py beside them run in ctest above.)
LAGSIGHT_BIN="$PWD/build/cmd/lagsight/lagsight" .venv/bin/python -m pytest -v \
  tests/deploy/test_systemd.py tests/deploy/test_dockerfile.py tests/deploy/test_helm.py

# The integration tests run in two lanes side by side. Run one after the other they took 43 of
# the suite's 60 minutes on CI's 2 cores while the CPU was busy 53 % of that time on average
# (sampled every 10 s, /proc/stat): most tests wait on real systems (polls, Flink's 10 s metric
# refresh, checkpoints, lagsight's default 15 s polls), and the slowest wait longest. Lane 1 has
# most modules; lane 2 has seven that mostly wait (minutes at default polls, a sleeping job),
# then the sanitized stage. Each lane has its own broker and temp directory. Measured on a fresh
# clone (2 cores): 45:07 in all, lane 1 28:30, lane 2 ~35:30 with Prometheus end to end in it,
# so that module (~3 minutes, mostly waiting for alert rules) moved to lane 1. The lanes were
# even again at 32:53 each (41:55 in all); of the two Kafka 4.3.2 modules that came after, the
# share groups' (~1.3 min, three brokers) runs here, the streams groups' (~1 min) in lane 1.
quiet_modules=(test_position_stores test_lateness test_late_flink_answers test_legacy_consumer
  test_default_polls test_status_page test_bottleneck test_share_groups)
sanitized_modules=(test_daemon test_flink_faults test_flink_rest_security test_flink)
quiet_files=() sanitized_files=() lane1_args=()
for module in "${quiet_modules[@]}"; do quiet_files+=("tests/integration/$module.py"); done
for module in "${sanitized_modules[@]}"; do sanitized_files+=("tests/integration/$module.py"); done
for file in "${quiet_files[@]}" "${sanitized_files[@]}"; do lane1_args+=("--ignore=$file"); done
mkdir -p build/lanes

sanitized_lane() {
  # The sanitized build compiles meanwhile, at the lowest CPU priority, in what CPU the tests
  # leave idle (it took ~6 minutes on its own). Only the daemon and the unit tests, at -O1 with
  # line tables only (-g1: enough for the sanitizers' stack traces): measured on 2 cores, that
  # halves the sanitized compile (analyzer.cpp 44 s -> 22 s, a unit test file 26 s -> 15 s).
  # Two jobs, not one: with one, 100 of its 139 steps were done when the quiet modules ended
  # (22 minutes) and the rest took 9 minutes more, the longest stretch of the suite (log of the
  # fresh-clone run at 02ae2b1); one job can use one core at most, while the tests leave about
  # one core idle on average, spread over both. Nice 19 keeps the tests' share (24 GB of memory
  # holds two sanitized compiles beside the tests).
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DLAGSIGHT_SANITIZE=ON >/dev/null
  nice -n 19 cmake --build build-asan --target lagsight lagsight_unit_tests --parallel 2 \
    >build-asan/build.log 2>&1 &
  local asan_build=$! status=0
  LAGSIGHT_BIN="$PWD/build/cmd/lagsight/lagsight" .venv/bin/python -m pytest -v -p no:cacheprovider \
    --basetemp=build/lanes/quiet --durations=6 "${quiet_files[@]}" "$@" || status=1
  # What is left compiles at full speed now: waiting for the idle-priority build after the
  # quiet modules took minutes (ninja, stopped, removes the output of
  # the compile it interrupts; an error shows in the build below).
  echo "== [$(date +%T)] the rest of the sanitized build, at full speed"
  pkill -TERM -P "$asan_build" ninja 2>/dev/null || true
  wait "$asan_build" 2>/dev/null || true
  if ! cmake --build build-asan --target lagsight lagsight_unit_tests --parallel "$(nproc)" \
    >>build-asan/build.log 2>&1; then
    tail -50 build-asan/build.log
    echo "the sanitized build failed (build-asan/build.log)" >&2
    return 1
  fi

  # Fuzzing, 15 s per target at idle priority beside the sanitized tests: it replays every seed
  # (the recorded Flink responses, the unit tests' configs, tests/fuzz/corpus/) and catches a
  # regression in the inputs they cover; the long runs (millions of executions, README
  # "Fuzzing") are done by hand with a larger argument.
  echo "== [$(date +%T)] fuzzing (libFuzzer + ASan/UBSan: Flink REST parsers, configs, listen addresses, durations, trace lines)"
  nice -n 19 tests/fuzz/run.sh 15 >build/lanes/fuzz.log 2>&1 &
  local fuzz=$!

  echo "== [$(date +%T)] unit tests, then the daemon, fault and Flink tests, against an ASan + UBSan build (build-asan/)"
  # Any memory error, undefined behaviour or leak aborts the unit tests, or lagsight (a leak
  # fails its exit at SIGTERM), and so ends the test that started it (each lagsight must exit 0).
  export ASAN_OPTIONS=halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  build-asan/tests/unit/lagsight_unit_tests || status=1
  LAGSIGHT_BIN="$PWD/build-asan/cmd/lagsight/lagsight" .venv/bin/python -m pytest -v \
    -p no:cacheprovider --basetemp=build/lanes/sanitized --durations=5 \
    "${sanitized_files[@]}" "$@" || status=1
  wait "$fuzz" || status=1
  cat build/lanes/fuzz.log
  return "$status"
}

echo "== [$(date +%T)] integration lane 2 (in the background; its log follows lane 1): ${quiet_modules[*]}, then the sanitized stage"
sanitized_lane "$@" >build/lanes/lane2.log 2>&1 &
lane2=$!

echo "== [$(date +%T)] integration lane 1 (real Kafka broker, real Flink 1.20 and 2.x MiniClusters)"
# --durations: the suite must stay well under CI's 90 minutes; its log names the slowest tests.
lane1=0
LAGSIGHT_BIN="$PWD/build/cmd/lagsight/lagsight" .venv/bin/python -m pytest tests/integration -v \
  --basetemp=build/lanes/main --durations=15 "${lane1_args[@]}" "$@" || lane1=$?
echo "== [$(date +%T)] the benchmarks build (tests/bench; run by hand: docs/benchmarks.md)"
cmake --build build --parallel "$(nproc)" || lane1=1

lane2_status=0
wait "$lane2" || lane2_status=$?
echo "== [$(date +%T)] integration lane 2 (its log, build/lanes/lane2.log)"
cat build/lanes/lane2.log
if [ "$lane1" != 0 ] || [ "$lane2_status" != 0 ]; then
  echo "== [$(date +%T)] done"
  echo "FAILED: integration lane 1 exit $lane1, lane 2 (quiet, sanitized, fuzzing) exit $lane2_status" >&2
  exit 1
fi
