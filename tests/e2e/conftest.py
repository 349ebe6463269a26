"""Fixtures for the end-to-end tests that drive the real codex and claude CLIs."""

from __future__ import annotations

from pathlib import Path

import pytest
from donebell.shared import platform
from support import npm_clis

from e2e.recorder import Recorder


def pytest_report_header() -> str:
    """Which implementation of each platform capability the run's donebell processes use
    (``DONEBELL_FORCE_PORTABLE=1``: the portable ones, the CI's second pass)."""
    pairs = " ".join(f"{name}={how}" for name, how in platform.mechanisms().items())
    return f"donebell platform seam ({'portable, forced' if platform.portable_forced() else 'native'}): {pairs}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything under tests/e2e is end-to-end, so `-m "not e2e"` deselects it all.
    for item in items:
        if "tests/e2e/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def agent_clis() -> tuple[Path, Path]:
    """(codex, claude) native binaries; installs them on first use, skips only without npm."""
    reason = npm_clis.skip_reason()
    if reason is not None:
        pytest.skip(reason)
    return npm_clis.codex_binary(), npm_clis.claude_binary()


@pytest.fixture(scope="session")
def copilot_cli() -> Path:
    """The native Copilot binary (its package unpacked once); installs on first use, skips only without npm."""
    reason = npm_clis.skip_reason()
    if reason is not None:
        pytest.skip(reason)
    npm_clis.copilot_pkg_cache()
    return npm_clis.copilot_binary()


@pytest.fixture
def recorder(tmp_path: Path) -> Recorder:
    """A fresh folder of hook/notify records for one test."""
    return Recorder(tmp_path / "records")
