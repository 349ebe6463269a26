"""Getting the real ntfy server: a machine that cannot fetch it skips the real-server tests with the
reason, except where `.ci/run` requires the server (``DONEBELL_REQUIRE_REAL_NTFY=1``): then it fails."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from support import get_ntfy
from support.ntfy_real import REQUIRE_ENV, SERVER_IDS, SERVER_SUITES, RealNtfy, ntfy_binary


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
    err = capsys.readouterr().err
    assert "trixie: apt-get is not on PATH" in err and "sid: apt-get is not on PATH" in err  # both are tried


def test_each_suite_has_its_own_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """trixie keeps the folder it always had (a warm cache stays warm); sid sits next to it."""
    monkeypatch.setenv("DONEBELL_NTFY_CACHE", str(tmp_path / "ntfy"))
    assert get_ntfy.cache_dir("trixie") == tmp_path / "ntfy"
    assert get_ntfy.cache_dir("sid") == tmp_path / "ntfy-sid"
    with pytest.raises(get_ntfy.NtfyUnavailable, match="unknown suite"):
        get_ntfy.ensure_ntfy("bookworm")


def test_the_private_apt_list_names_the_machines_archive_and_the_trixie_suite() -> None:
    """The archive address comes from the machine's own sources (not a security suite)."""
    archive = get_ntfy.debian_archive()
    assert archive.startswith(("http://", "https://")) and not archive.rstrip("/").endswith("-security")
    assert get_ntfy.SUITE == "trixie"


@pytest.mark.parametrize("suite", SERVER_SUITES, ids=SERVER_IDS)
def test_the_fetched_servers_are_ntfy_2_11_and_2_27(tmp_path: Path, suite: str) -> None:
    """What the real-server tests run, by the version the server logs when it starts (docs/delivery.md
    names both as the ones tested; ntfy has no --version flag and no version endpoint)."""
    with RealNtfy(tmp_path, default_access=None, suite=suite) as server:
        assert httpx.get(f"{server.url}/v1/health", timeout=5).json() == {"healthy": True}
    expected = {"trixie": r"2\.11\.0", "sid": r"2\.27\.0"}[suite]
    assert re.search(rf"Listening on .*, ntfy {expected}", server.log_text()), server.log_text()[-500:]
