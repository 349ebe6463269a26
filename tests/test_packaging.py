"""Packaging of the editable install: a working console script (the wheel: test_installed_wheel.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


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


def test_the_changelog_keeps_an_unreleased_section_and_names_the_version() -> None:
    """CHANGELOG.md (Keep a Changelog): `## [Unreleased]` first, and the version shared/version.py holds."""
    from donebell.shared.version import VERSION

    text = (Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## [Unreleased]", headings
    assert any(h.startswith(f"## [{VERSION}]") for h in headings), (VERSION, headings)
