"""`uninstall --purge --yes` on a fresh account (issue 24, item 7): it never names as kept a backup
it then deletes (the config's backups go with the config: they may hold the token), and it removes
the empty `~/.config` and `~/.local/state` folders install created, never one that holds anything
else. Real files in an isolated home; the service manager is the recording stand-in."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir
from donebell.supervisor.install.command import main_install, main_uninstall
from support.install_env import RecordingRunner, copy_fixture, isolate


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    paths = isolate(tmp_path, monkeypatch)  # ~/.config and ~/.local do not exist yet
    copy_fixture("codex-hooks.json", paths["codex"] / "hooks.json")
    copy_fixture("codex-config.toml", paths["codex"] / "config.toml")
    copy_fixture("claude-settings.json", paths["claude"] / "settings.json")
    return paths


def _run(main: object, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    kwargs = {"stdin": io.StringIO()} if main is main_uninstall else {}
    code = main(["--service", "none", *args], runner=RecordingRunner(), out=out, **kwargs)  # type: ignore[operator]
    return code, out.getvalue()


def test_purge_keeps_what_it_says_it_kept_and_removes_the_folders_install_created(home: dict[str, Path]) -> None:
    assert not home["xdg_config"].exists() and not (home["home"] / ".local").exists()
    assert _run(main_install)[0] == 0
    StateDir(home["state"]).ensure()  # what the service does on its first start
    code, out = _run(main_uninstall, "--purge", "--yes")
    assert code == 0, out
    kept = [Path(p) for p in re.findall(r"backup kept: (\S+)", out)]
    assert kept and all(path.exists() for path in kept), out
    assert not any("config.json" in str(path) for path in kept)  # deleted with the config, not "kept"
    assert "with its 1 backup(s)" in out
    assert not home["xdg_config"].exists() and not (home["home"] / ".local").exists(), out
    assert "removed the empty folders donebell had created" in out


def test_purge_leaves_a_created_folder_that_something_else_uses_since(home: dict[str, Path]) -> None:
    assert _run(main_install)[0] == 0
    other = home["xdg_config"] / "other-app" / "settings.ini"
    other.parent.mkdir()
    other.write_text("[x]\n")
    code, out = _run(main_uninstall, "--purge", "--yes")
    assert code == 0, out
    assert other.read_text() == "[x]\n" and not home["config"].parent.exists()


def test_purge_leaves_folders_that_were_there_before_install(home: dict[str, Path]) -> None:
    home["xdg_config"].mkdir()
    (home["home"] / ".local" / "state").mkdir(parents=True)
    assert _run(main_install)[0] == 0
    code, out = _run(main_uninstall, "--purge", "--yes")
    assert code == 0, out
    assert home["xdg_config"].is_dir() and (home["home"] / ".local" / "state").is_dir()
    assert "removed the empty folders" not in out


def test_a_plain_uninstall_still_leaves_no_install_record(home: dict[str, Path]) -> None:
    assert _run(main_install)[0] == 0
    assert _run(main_uninstall)[0] == 0
    assert not (home["config"].parent / "install-record.json").exists()
