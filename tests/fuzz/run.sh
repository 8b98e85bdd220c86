#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs each for
# SECONDS_PER_TARGET (default 20), one after the other. Exits non-zero when any target finds a
# crash, a leak, undefined behaviour or a timeout; the input is then in build-fuzz/artifacts/.
# Exits 0 with a "skipped" line only when clang cannot link a fuzzer on this machine.
# Usage: tests/fuzz/run.sh [SECONDS_PER_TARGET]
# Reproduce a finding: build-fuzz/tests/fuzz/fuzz_<name> build-fuzz/artifacts/fuzz_<name>-crash-...
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-20}"
build=build-fuzz

probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  >"$probe_dir/probe.cpp"
if ! command -v clang++ >/dev/null ||
  ! clang++ -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cpp" -o "$probe_dir/probe" 2>/dev/null; then
  echo "fuzz: skipped: clang++ cannot link -fsanitize=fuzzer here (deploy/install-deps.sh installs clang and libclang-rt-14-dev)"
  exit 0
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
  -DLAGSIGHT_FUZZ=ON "${launcher[@]}" >/dev/null
cmake --build "$build" --target lagsight_fuzz --parallel "$(nproc)"

# target, -max_len (a bit above the largest real input of its kind), seed directories. The
# recorded Flink responses and the unit tests' config files are the seeds, read in place;
# tests/fuzz/corpus/<name>/ adds hand-written seeds and the reproducers of fixed findings.
targets=(
  "flink_rest 32768 tests/fixtures/flink-1.20 tests/fixtures/flink-2.x tests/unit/testdata/flink-job-graph/1.20 tests/unit/testdata/flink-job-graph/2.x tests/fuzz/corpus/flink_rest"
  "config 8192 tests/unit/testdata/config/good tests/unit/testdata/config/bad tests/fuzz/corpus/config"
  "web_config 4096 tests/unit/testdata/web_config/good tests/unit/testdata/web_config/bad"
  "listen_address 256 tests/fuzz/corpus/listen_address"
  "duration 64 tests/fuzz/corpus/duration"
  "trace 65536 tests/fuzz/corpus/trace"
)
mkdir -p "$build/artifacts"
failed=()
for entry in "${targets[@]}"; do
  read -r name max_len seeds <<<"$entry"
  # New inputs go to a scratch corpus under the build dir; the checked-in seeds stay read-only.
  work="$build/corpus/$name"
  mkdir -p "$work"
  log="$build/fuzz_$name.log"
  # shellcheck disable=SC2086  # $seeds is a list of directories
  if "$build/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$build/artifacts/fuzz_$name-" -print_final_stats=1 \
    "$work" $seeds >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    failed+=("$name")
    tail -n 40 "$log"
  fi
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
  echo "fuzz_$name: $result, ${runs:-?} executions in ${seconds}s (${rate:-?}/s), log $log"
done
if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $build/artifacts/)" >&2
  exit 1
fi
