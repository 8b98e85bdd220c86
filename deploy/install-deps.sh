#!/usr/bin/env bash
# Installs everything lagsight needs to build, test and run its demo on Debian 12, and nothing
# that is already there: Debian packages, the Kafka jars (Maven Central, via the harness pom),
# the Python test dependencies (in .venv) and helm (Go module proxy, in .tools/bin). Safe to run
# again; the README's two commands, .ci/run and the Dockerfile all start here.
#
# Usage: deploy/install-deps.sh              everything: build, run, test, demo
#        deploy/install-deps.sh --demo        what deploy/demo.sh needs: the build packages, Java,
#                                             Maven, the Kafka jars, the Flink 2.x job, .venv
#                                             (no Prometheus, Chromium, clang, helm, Flink 1.20)
#        deploy/install-deps.sh --build-only  only the Debian packages that build lagsight
#        deploy/install-deps.sh --runtime     only the shared libraries the binary runs with
# (the Dockerfile's build and runtime stages use the last two).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=all
case "${1:-}" in
  "") ;;
  --demo) mode=demo ;;
  --build-only) mode=build ;;
  --runtime) mode=runtime ;;
  *) echo "usage: $0 [--demo|--build-only|--runtime]" >&2; exit 2 ;;
esac

build_packages=(
  # build
  g++ cmake ninja-build pkg-config git
  # libraries (all from Debian 12); libcrypt-dev: bcrypt for --web.config.file basic auth;
  # libre2-dev: name filters in linear time (std::regex recursed per character of a name);
  # libisal-dev and zlib1g-dev: gzip of /metrics for scrapers that accept it (ISA-L deflates,
  # zlib inflates for those that do not); libhiredis-dev: Redis position stores
  librdkafka-dev prometheus-cpp-dev libboost-dev libboost-system-dev libsimdjson-dev
  libspdlog-dev libyaml-cpp-dev catch2 libssl-dev libcli11-dev libcrypt-dev libre2-dev zlib1g-dev
  libisal-dev libhiredis-dev
)
# What the binary links dynamically (ldd), plus CA certificates for TLS to Kafka and Flink.
runtime_packages=(
  librdkafka1 libprometheus-cpp-core1.0 libsimdjson14 libspdlog1.10 libfmt9 libyaml-cpp0.7
  libssl3 libcrypt1 libre2-9 zlib1g libisal2 libhiredis0.14 ca-certificates
)
test_packages=(
  # tests: promtool, Python venv, curl and openssl (TLS clients), systemd-analyze, and a
  # headless browser that renders the status page; clang with libFuzzer and the sanitizer
  # runtimes (a Recommends of clang, so --no-install-recommends needs it named) for tests/fuzz;
  # clang-format for the format check (ctest format_check); redis-server for the position stores
  prometheus python3 python3-venv curl openssl systemd chromium clang libclang-rt-14-dev
  clang-format redis-server
)
case "$mode" in
  build) packages=("${build_packages[@]}") ;;
  runtime) packages=("${runtime_packages[@]}") ;;
  all) packages=("${build_packages[@]}" "${runtime_packages[@]}" "${test_packages[@]}") ;;
  # The demo runs the real broker and Flink job through the Python harness.
  demo) packages=("${build_packages[@]}" "${runtime_packages[@]}" python3 python3-venv redis-server) ;;
esac
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "$mode" = all ] || [ "$mode" = demo ]; then
  # Java 17+ and Maven run the real Kafka broker; accept any already on PATH.
  command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$mode" = all ] || [ "$mode" = demo ] || exit 0

# Kafka jars: resolved once into ~/.m2, classpath cached until the pom changes.
classpath=tests/harness/kafka/target/classpath.txt
if [ ! -s "$classpath" ] || [ tests/harness/kafka/pom.xml -nt "$classpath" ]; then
  echo "install-deps: resolving Apache Kafka from Maven Central"
  mvn -q -B -f tests/harness/kafka/pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
fi

# The Flink test job (Flink 1.20 and 2.x, from Maven Central), rebuilt only when it changed; the
# demo runs the 2.x line only.
if [ "$mode" = demo ]; then
  tests/harness/flink/build.sh 2.x
else
  tests/harness/flink/build.sh
fi

# Python test dependencies, pinned.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum tests/harness/requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "install-deps: installing Python test dependencies"
  .venv/bin/pip install -q --disable-pip-version-check -r tests/harness/requirements.txt
  echo "$want" > "$stamp"
fi

[ "$mode" = all ] || exit 0

# helm, for the chart tests (tests/deploy/test_helm.py): built from the Go module proxy into
# .tools/bin, once per pinned version. Needs Go >= 1.24 (Debian 12's golang-go is 1.19).
helm_version=v3.18.6
helm_stamp=.tools/bin/.helm-version
if [ ! -x .tools/bin/helm ] || [ "$(cat "$helm_stamp" 2>/dev/null)" != "$helm_version" ]; then
  go_cmd=$(command -v go || echo /usr/local/go/bin/go)
  if [ ! -x "$go_cmd" ]; then
    echo "install-deps: building helm needs Go >= 1.24 on PATH or in /usr/local/go" >&2
    exit 1
  fi
  echo "install-deps: building helm $helm_version (Go module proxy)"
  GOBIN="$PWD/.tools/bin" GOFLAGS=-buildvcs=false "$go_cmd" install "helm.sh/helm/v3/cmd/helm@$helm_version"
  echo "$helm_version" > "$helm_stamp"
fi
