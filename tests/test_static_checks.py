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
    """mypy --strict finds no error in donebell.shared, .workers and .supervisor, nor in tools/, the tests and benchmarks."""
    # The code folders install under one name through a package-dir mapping that mypy cannot
    # follow, so give it a tree shaped like the installed package; benchmarks/ sits beside it as
    # the package `benchmarks` it is run as (python -m benchmarks).
    package = tmp_path / "donebell"
    package.mkdir()
    for name in ("shared", "workers", "supervisor"):
        os.symlink(REPO / name, package / name)
    os.symlink(REPO / "ops" / "__main__.py", package / "__main__.py")  # ops/ is the package itself (setup.py)
    os.symlink(REPO / "benchmarks", tmp_path / "benchmarks")
    os.symlink(REPO / "tools", tmp_path / "tools")  # the generators: dev only, typed all the same
    # The tests import their helpers as `support.x`, `e2e.x` (pytest's pythonpath = ["tests"]), so
    # tests/ is a package base too; explicit bases name each file by its path from a base.
    env = {**os.environ, "MYPYPATH": str(REPO / "tests")}
    result = subprocess.run(
        [
            _tool("mypy"),
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--strict",
            "--no-incremental",
            "--explicit-package-bases",
            "donebell",
            "benchmarks",
            "tools",
            str(REPO / "tests"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # A run that silently skipped a folder must not pass: every module was read.
    assert f" in {_python_files()} source files" in result.stdout, result.stdout[-2000:]


def _python_files() -> int:
    """How many .py files mypy must read: the three code folders, tools/, benchmarks/ and tests/."""
    folders = ("shared", "workers", "supervisor", "tools", "benchmarks", "tests")
    return sum(1 for name in folders for _ in (REPO / name).rglob("*.py")) + len(list((REPO / "ops").glob("*.py")))


def test_ruff_is_clean() -> None:
    """ruff check passes on the whole repository."""
    result = subprocess.run(
        [_tool("ruff"), "check", "."], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:]


def test_ruff_format_owns_the_layout() -> None:
    """ruff format --check passes on the whole repository (pyproject.toml: the formatter owns line length)."""
    result = subprocess.run(
        [_tool("ruff"), "format", "--check", "."], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:]
