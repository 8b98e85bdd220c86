"""The Dockerfile, checked without Docker (CI has no Docker daemon):

- it builds with the README's install script (--build-only) and runs with its --runtime mode;
- every shared library the real binary links comes from a package that --runtime installs;
- the files it copies are enough to configure the build (cmake, without the tests);
- its HEALTHCHECK command, run as written, passes against a real lagsight and fails without one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml
from deploy_tools import lagsight_binary  # noqa: F401 (pytest fixtures)

REPO_ROOT = Path(__file__).resolve().parents[2]

DOCKERFILE = REPO_ROOT / "Dockerfile"
INSTALL_DEPS = REPO_ROOT / "deploy" / "install-deps.sh"


def stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuation lines joined), split into stages."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    result: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            result.append([])
        result[-1].append(line)
    return result


def bash_array(name: str) -> list[str]:
    """The words of the bash array ``name=( ... )`` in install-deps.sh, comments dropped."""
    body = re.search(rf"^{name}=\((.*?)^\)", INSTALL_DEPS.read_text(), re.MULTILINE | re.DOTALL)
    assert body, f"{name} not found in install-deps.sh"
    words = []
    for line in body.group(1).splitlines():
        words += line.split("#", 1)[0].split()
    return words


def test_build_and_runtime_stages_use_the_install_script_on_debian_12():
    build, runtime = stages()
    assert build[0].startswith("FROM debian:12 AS ")
    assert runtime[0].startswith("FROM debian:12")
    assert any("deploy/install-deps.sh --build-only" in line for line in build)
    assert any("deploy/install-deps.sh --runtime" in line for line in runtime)
    user = [line.split()[1] for line in runtime if line.startswith("USER ")]
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert "EXPOSE 9713" in runtime
    assert any(line.startswith("HEALTHCHECK ") for line in runtime)


def test_runtime_packages_cover_every_library_the_binary_links(lagsight_binary: Path):
    ldd = subprocess.run(["ldd", str(lagsight_binary)], capture_output=True, text=True,
                         check=True).stdout
    libraries = [Path(match) for match in re.findall(r"=> (/\S+)", ldd)]
    runtime = set(bash_array("runtime_packages"))
    # In debian:12-slim already: the C and C++ runtimes and the essential compression libraries.
    in_base_image = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g", "liblz4-1", "libzstd1",
                     "libcrypt1"}
    missing = {}
    for library in libraries:
        owner = None
        for path in (library, library.resolve()):
            found = subprocess.run(["dpkg", "-S", str(path)], capture_output=True, text=True)
            if found.returncode == 0:
                owner = found.stdout.split(":")[0]
                break
        assert owner, f"no Debian package owns {library}"
        if owner not in runtime and owner not in in_base_image:
            missing[str(library)] = owner
    # What a listed package depends on comes along (libsasl2 with librdkafka).
    depends = subprocess.run(["dpkg-query", "-W", "-f=${Depends}\n", *sorted(runtime)],
                             capture_output=True, text=True, check=True).stdout
    pulled_in = set(re.findall(r"(?:^|[,|]\s*)([a-z0-9][a-z0-9.+-]+)", depends, re.MULTILINE))
    missing = {lib: pkg for lib, pkg in missing.items() if pkg not in pulled_in}
    assert not missing, f"install-deps.sh --runtime lacks the packages of: {missing}"


def test_the_copied_sources_are_enough_to_configure_the_build(tmp_path: Path):
    build, _ = stages()
    context = tmp_path / "context"
    context.mkdir()
    for line in build:
        if not line.startswith("COPY "):
            continue
        sources = line.split()[1:-1]
        for source in sources:
            origin = REPO_ROOT / source
            target = context / source
            if origin.is_dir():
                shutil.copytree(origin, target)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target)
    configure = [line for line in build if "cmake -S" in line]
    assert configure and "-DBUILD_TESTING=OFF" in configure[0]
    result = subprocess.run(["cmake", "-S", str(context), "-B", str(tmp_path / "build"),
                             "-G", "Ninja", "-DBUILD_TESTING=OFF"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def healthcheck_command(port: int) -> list[str]:
    line = next(line for line in stages()[-1] if line.startswith("HEALTHCHECK "))
    command = json.loads(line[line.index("CMD ") + 4:])
    return [part.replace("9713", str(port)) for part in command]


def free_port() -> int:
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_healthcheck_passes_on_a_live_lagsight_and_fails_without_one(lagsight_binary: Path,
                                                                         tmp_path: Path):
    port = free_port()
    assert subprocess.run(healthcheck_command(port), capture_output=True,
                          timeout=30).returncode != 0
    config = tmp_path / "lagsight.yaml"
    # No broker: /healthz only says the process serves HTTP, which is what the check asks.
    config.write_text(yaml.safe_dump({"kafka": [{"name": "x", "bootstrap_servers": "127.0.0.1:1"}]}))
    process = subprocess.Popen([str(lagsight_binary), f"--config.file={config}",
                                f"--web.listen-address=127.0.0.1:{port}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "lagsight did not start"
                time.sleep(0.2)
        result = subprocess.run(healthcheck_command(port), capture_output=True, timeout=30)
        assert result.returncode == 0, result
    finally:
        process.terminate()
        process.wait(timeout=15)
