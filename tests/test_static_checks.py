"""The code stays typed (mypy --strict) and lint-clean (ruff): this test is where the rule lives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    if not exe.exists():
        pytest.skip(f"{name} is not installed in this environment (install the test extra)")
    return str(exe)


def test_mypy_strict_is_clean(tmp_path: Path) -> None:
    """mypy --strict finds no error in donebell.shared, .workers and .supervisor, nor in tools/."""
    # The code folders install under one name through a package-dir mapping that mypy cannot
    # follow, so give it a tree shaped like the installed package.
    package = tmp_path / "donebell"
    package.mkdir()
    for name in ("shared", "workers", "supervisor"):
        os.symlink(REPO / name, package / name)
    os.symlink(REPO / "tools", tmp_path / "tools")  # the generators: dev only, typed all the same
    result = subprocess.run(
        [_tool("mypy"), "--strict", "--no-incremental", "-p", "donebell", "-p", "tools"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_ruff_is_clean() -> None:
    """ruff check passes on the whole repository."""
    result = subprocess.run(
        [_tool("ruff"), "check", "."], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:]
