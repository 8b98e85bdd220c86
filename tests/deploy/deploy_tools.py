"""Fixtures for the deployment tests: the lagsight binary and the helm CLI.

A module of its own, not a conftest.py: tests/integration has one, and two conftest modules
would shadow each other when both folders run in one pytest session.

Both must be there: a missing tool fails the tests instead of skipping them, because a skipped
deployment suite looks green and proves nothing. deploy/install-deps.sh installs helm.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def lagsight_binary() -> Path:
    binary = Path(os.environ.get("LAGSIGHT_BIN", REPO_ROOT / "build" / "cmd" / "lagsight" / "lagsight"))
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail(f"lagsight binary not found at {binary}: build it or set LAGSIGHT_BIN",
                    pytrace=False)
    return binary


@pytest.fixture(scope="session")
def helm() -> str:
    for candidate in (os.environ.get("HELM"), REPO_ROOT / ".tools" / "bin" / "helm",
                      shutil.which("helm")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.fail("helm not found (deploy/install-deps.sh installs it into .tools/bin)",
                pytrace=False)
