"""Getting the real ntfy server: a machine that cannot fetch it skips the real-server tests with the
reason, except where `.ci/run` requires the server (``DONEBELL_REQUIRE_REAL_NTFY=1``): then it fails."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from support import get_ntfy
from support.ntfy_real import REQUIRE_ENV, RealNtfy, ntfy_binary


@pytest.fixture()
def no_apt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty cache and a PATH without apt-get or dpkg-deb: nothing can be fetched."""
    monkeypatch.setenv("DONEBELL_NTFY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


def test_an_unfetchable_server_skips_with_the_reason(no_apt: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "0")  # (not unset: an unset variable means "as the run started")
    with pytest.raises(pytest.skip.Exception, match="apt-get is not on PATH"):
        ntfy_binary()


def test_an_unfetchable_server_fails_where_it_is_required(no_apt: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="required here"):
        ntfy_binary()


def test_the_script_exits_1_with_the_reason(no_apt: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert get_ntfy.main() == 1
    assert "apt-get is not on PATH" in capsys.readouterr().err


def test_the_private_apt_list_names_the_machines_archive_and_the_trixie_suite() -> None:
    """The archive address comes from the machine's own sources (not a security suite)."""
    archive = get_ntfy.debian_archive()
    assert archive.startswith(("http://", "https://")) and not archive.rstrip("/").endswith("-security")
    assert get_ntfy.SUITE == "trixie"


def test_the_fetched_server_is_ntfy_2_11(tmp_path: Path) -> None:
    """What the real-server tests run, by the version the server logs when it starts (docs/delivery.md
    names it as the one tested; ntfy has no --version flag and no version endpoint)."""
    with RealNtfy(tmp_path, default_access=None) as server:
        assert httpx.get(f"{server.url}/v1/health", timeout=5).json() == {"healthy": True}
    assert re.search(r"Listening on .*, ntfy 2\.11\.0", server.log_text()), server.log_text()[-500:]
