"""Stopping the harness's child processes (Kafka broker, Flink JVM) the same careful way."""

from __future__ import annotations

import subprocess


def terminate(process: subprocess.Popen | None, timeout: float) -> None:
    """SIGTERM for a clean shutdown; SIGKILL only if it has not exited within ``timeout``."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
