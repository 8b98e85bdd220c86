"""A real redis-server (Debian's) for the tests of position stores, and redis-cli as ground truth.

The server keeps nothing on disk (no RDB, no AOF) and listens on 127.0.0.1 only. ``cli`` runs
Debian's redis-cli against it, so what a test compares lagsight with comes from Redis's own tool.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from kafka_broker import free_loopback_port
from processes import terminate


class RedisServer:
    def __init__(self, work_dir: Path, port: int | None = None) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed (deploy/install-deps.sh installs it)")
        self.work_dir = work_dir
        self.port = port or free_loopback_port()
        self.log_file = work_dir / "redis.log"
        self._process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> RedisServer:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                 "--appendonly", "no", "--dir", str(self.work_dir)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.log_file.read_text()[-2000:]}")
            try:
                if self.cli("PING") == "PONG":
                    return self
            except subprocess.CalledProcessError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"redis-server on {self.address} did not answer PING in {timeout} s")

    def stop(self) -> None:
        terminate(self._process, 10)

    def cli(self, *args: str, user: str | None = None, password: str | None = None) -> str:
        command = ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), "--no-auth-warning"]
        if user is not None:
            command += ["--user", user]
        if password is not None:
            command += ["--pass", password]
        result = subprocess.run(command + list(args), check=True, capture_output=True, text=True,
                                timeout=10)
        return result.stdout.strip()

    def hgetall(self, key: str) -> dict[str, str]:
        lines = self.cli("HGETALL", key).splitlines()
        return dict(zip(lines[0::2], lines[1::2]))

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
