#!/usr/bin/env bash
# Builds the Flink test job for every supported Flink line (see docs/development.md#layout) into
# target/<line>/classes plus target/<line>/classpath.txt. A line is rebuilt only when its pom, the
# sources or this script changed since its last good build. Silent on success; on failure it
# prints Maven's output and exits non-zero.
#
#   tests/harness/flink/build.sh [LINE...]     LINE: 1.20, 2.x (default: both)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(1.20 2.x)

for line in "${lines[@]}"; do
  pom="pom-${line}.xml"
  [ -f "$pom" ] || { echo "build.sh: unknown Flink line '$line' (no $pom)" >&2; exit 2; }
  out="target/${line}"
  stamp="${out}/build.stamp"
  digest="$( (cat "$pom" build.sh; find src -type f | LC_ALL=C sort | xargs cat) | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] && [ -s "${out}/classpath.txt" ] \
     && [ -d "${out}/classes" ]; then
    continue
  fi
  mkdir -p "$out"
  log="target/build-${line}.log"
  goals=(-B -f "$pom" clean compile dependency:build-classpath)
  # Offline first: once resolved, no registry round trips. Online when something is missing.
  if ! mvn -q -o "${goals[@]}" >"$log" 2>&1; then
    if ! mvn -q "${goals[@]}" >"$log" 2>&1; then
      cat "$log" >&2
      echo "build.sh: Maven build for Flink ${line} failed (log: ${here}/${log})" >&2
      exit 1
    fi
  fi
  echo "$digest" >"$stamp"
done
