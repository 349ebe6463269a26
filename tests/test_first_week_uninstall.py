"""Issue 37, item 6: what uninstall leaves is what was there before donebell, through the installed
script on a fresh HOME.

* ``~/.codex/config.toml`` and ``hooks.json`` that install created: after two install / trust /
  uninstall rounds (Codex keeps a trust entry per position it ever trusted) both files are gone
  and no backup of them is left (every one would hold donebell's ``notify`` and trust entries);
* a file the user had keeps exactly one backup: its bytes before donebell first touched it;
* ``uninstall --purge`` removes ``~/.config`` and ``~/.local`` when donebell created them, also
  when ``config init`` and the first ``donebell test`` created them before ``install`` ran.
"""

from __future__ import annotations

from pathlib import Path

from donebell.workers.agents.codex.managed import CODEX_PERMISSION_ARGS
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks
from support.new_user import NewUser


def _trust_like_codex(codex: Path) -> None:
    """What Codex 0.171's `/hooks` "trust all" appends, plus the entry of a position it trusted
    in an earlier round (Codex never removes one)."""
    hooks = donebell_stop_hooks(codex) + donebell_stop_hooks(codex, "PermissionRequest", CODEX_PERMISSION_ARGS)
    entries = [(h.key, h.current_hash) for h in hooks] + [(f"{codex / 'hooks.json'}:stop:1:0", "sha256:00")]
    config = codex / "config.toml"
    present = config.read_text(encoding="utf-8")
    with open(config, "a", encoding="utf-8") as f:
        if "[hooks.state]" not in present:
            f.write("\n[hooks.state]\n")
        for key, digest in entries:
            if key in present:
                continue
            f.write(f'\n[hooks.state."{key}"]\ntrusted_hash = "{digest}"\n')


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".donebell-backup-*"))


def test_files_donebell_created_are_removed_and_never_backed_up(tmp_path: Path) -> None:
    user = NewUser(tmp_path)
    user.codex.mkdir()
    user.claude.mkdir()
    settings = user.claude / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    for _ in range(2):
        done = user.cli("install", "--service", "none")
        assert done.returncode == 0, done.stdout + done.stderr
        _trust_like_codex(user.codex)
        done = user.cli("uninstall", "--service", "none")
        assert done.returncode == 0, done.stdout + done.stderr
    for created in (user.codex / "config.toml", user.codex / "hooks.json"):
        assert not created.exists(), created.read_text()
        assert _backups(created) == []
    [kept] = _backups(settings)
    assert kept.read_text() == '{"model": "opus"}\n' == settings.read_text()
    assert f"backup kept: {kept}" in done.stdout


def test_purge_removes_the_folders_donebell_created_before_install(tmp_path: Path) -> None:
    user = NewUser(tmp_path)
    user.codex.mkdir()
    assert user.cli("config", "init").returncode == 0
    assert user.cli("config", "set", "server", "http://127.0.0.1:9").returncode == 0
    assert user.cli("test", "--wait", "1").returncode == 1  # the first state folder, before install
    assert user.state.root.is_dir()
    assert user.cli("install", "--service", "none").returncode == 0
    purged = user.cli("uninstall", "--purge", "--yes")
    assert purged.returncode == 0, purged.stdout + purged.stderr
    assert sorted(p.name for p in user.home.iterdir()) == [".codex"], purged.stdout
    assert "removed the empty folders donebell had created" in purged.stdout
