"""Packaging: one top-level import name in the wheel, and a working console script."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_contains_only_the_donebell_package(tmp_path: Path) -> None:
    """A wheel built from the repo installs only donebell/... (no bare shared/supervisor/workers)."""
    # Build from a copy so a concurrent build in the work tree cannot collide with this one.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("shared", "workers", "supervisor", "ops"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = out.glob("donebell-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"donebell"}
    for sub in ("supervisor", "workers", "shared"):
        assert f"donebell/{sub}/__init__.py" in names
    assert "donebell/ops/donebell.service" in names  # service templates travel with the wheel
    assert "donebell/workers/hooks/__init__.py" in names and "donebell/workers/gate/__init__.py" in names
    assert "donebell/shared/statedir/__init__.py" in names and "donebell/shared/statedir/_roles.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "donebell = donebell.supervisor.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_console_script_reports_its_version() -> None:
    """The installed `donebell` command runs and prints its version."""
    exe = Path(sys.executable).with_name("donebell")
    result = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("donebell ")


def test_unknown_command_is_a_clear_error() -> None:
    """An unknown subcommand exits 2 with the usage text."""
    result = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "frobnicate"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and "unknown command" in result.stderr
