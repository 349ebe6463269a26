"""`donebell config set KEY VALUE` / `config unset KEY`: validated by the settings schema, written
atomically with mode 0600, other keys and their formatting kept, old and new value printed; a
secret only from stdin. Real `donebell` processes on a real config file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

USER_FILE = '{\n    "topic": "donebell-mine",\n    "server":"https://ntfy.example.org",  "priority": 4\n}\n'


def _config(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "config", *args]
    return subprocess.run(cmd, capture_output=True, text=True, input=stdin, timeout=60)


@pytest.fixture()
def cfg(isolated_env: dict[str, Path]) -> Path:
    path = isolated_env["config"]
    path.parent.mkdir(parents=True)
    path.write_text(USER_FILE)
    os.chmod(path, 0o644)  # a hand-made file: set makes it owner-only
    return path


def test_set_changes_one_key_in_place_and_prints_old_and_new(cfg: Path) -> None:
    inode = cfg.stat().st_ino
    res = _config("set", "priority", "5")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("priority: 4 -> 5\n")
    assert cfg.read_text() == USER_FILE.replace('"priority": 4', '"priority": 5')  # the rest byte for byte
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    assert cfg.stat().st_ino != inode  # replaced atomically (temp file + rename), not rewritten in place
    assert sorted(p.name for p in cfg.parent.iterdir()) == [cfg.name]  # no temp file, no backup
    res = _config("set", "include_message", "true")
    assert res.stdout.startswith("include_message: false (default) -> true\n")
    res = _config("set", "tags", "bell,rocket")
    assert res.stdout.startswith('tags: ["white_check_mark"] (default) -> ["bell", "rocket"]\n')
    data = json.loads(cfg.read_text())
    assert (data["include_message"], data["tags"], data["priority"]) == (True, ["bell", "rocket"], 5)
    assert json.loads(_config("show").stdout)["tags"] == ["bell", "rocket"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("set", "priority", "9"), "priority: Input should be less than or equal to 5"),
        (("set", "topic", "has spaces"), "topic"),
        (
            ("set", "idle_detection_mode", "lenient"),
            "idle_detection_mode: Input should be 'strict', 'balanced' or 'off'",
        ),
        (("set", "prority", "2"), "unknown key 'prority'; did you mean 'priority'?"),
        (("set", "token", "tk_abcdefghijklmnop123"), "token is a secret: run `donebell config set token -`"),
        (("unset", "nonsense"), "unknown key 'nonsense'"),
    ],
)
def test_a_refused_value_leaves_the_file_untouched(cfg: Path, args: tuple[str, ...], message: str) -> None:
    before = (cfg.read_bytes(), cfg.stat().st_ino)
    res = _config(*args)
    assert res.returncode == 2, res.stdout
    assert message in res.stderr and res.stdout == ""
    assert (cfg.read_bytes(), cfg.stat().st_ino) == before
    assert "tk_abcdefghijklmnop123" not in cfg.read_text()


def test_a_secret_comes_from_stdin_and_is_never_printed(cfg: Path) -> None:
    res = _config("set", "token", "-", stdin="tk_abcdefghijklmnop123\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("token: null (default) -> **********\n")
    assert "tk_abcdefghijklmnop123" not in res.stdout + res.stderr
    assert json.loads(cfg.read_text())["token"] == "tk_abcdefghijklmnop123"
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    assert _config("unset", "token").stdout.startswith("token: ********** -> null (default)\n")


def test_unset_restores_the_default(cfg: Path) -> None:
    res = _config("unset", "priority")
    assert res.returncode == 0 and res.stdout.startswith("priority: 4 -> 3 (default)\n")
    assert "priority" not in json.loads(cfg.read_text())
    assert _config("unset", "priority").stdout.startswith("priority: 3 (default) (unchanged)\n")


def test_set_without_a_config_file_creates_one_with_a_topic(isolated_env: dict[str, Path]) -> None:
    res = _config("set", "origin", "laptop")
    assert res.returncode == 0, res.stderr
    data = json.loads(isolated_env["config"].read_text())
    assert data["origin"] == "laptop" and data["topic"].startswith("donebell-")
    assert stat.S_IMODE(isolated_env["config"].stat().st_mode) == 0o600
    assert stat.S_IMODE(isolated_env["config"].parent.stat().st_mode) == 0o700
    assert "wrote" in res.stdout


def test_the_environment_does_not_hide_a_bad_file_value(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DONEBELL_PRIORITY=3 wins at run time, but the file must still hold a valid value."""
    monkeypatch.setenv("DONEBELL_PRIORITY", "3")
    assert _config("set", "priority", "0").returncode == 2
    res = _config("set", "priority", "2")
    assert res.returncode == 0 and "note: DONEBELL_PRIORITY is set in this environment" in res.stdout


#: Eight keys and a value each that differs from USER_FILE and from the default.
PARALLEL_SETS = {
    "priority": ("2", 2),
    "max_message_chars": ("77", 77),
    "include_message": ("true", True),
    "markdown": ("true", True),
    "include_stats": ("true", True),
    "origin": ("laptop", "laptop"),
    "desk_grace_seconds": ("5", 5.0),
    "min_task_seconds": ("9", 9.0),
}


def test_concurrent_sets_of_different_keys_lose_no_change(cfg: Path) -> None:
    """Eight real `config set` processes at once, four times over: every change reported as made
    (exit 0) is in the file afterwards (issue 26 item 8: one was lost in 5 of 5 runs)."""
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "config", "set"]
    for run in range(4):
        cfg.write_text(USER_FILE)
        os.chmod(cfg, 0o600)
        procs = {
            key: subprocess.Popen([*cmd, key, raw], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for key, (raw, _) in PARALLEL_SETS.items()
        }
        for key, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, (run, key, out, err)
        data = json.loads(cfg.read_text())
        assert {key: data.get(key) for key in PARALLEL_SETS} == {k: v for k, (_, v) in PARALLEL_SETS.items()}, run
        assert data["topic"] == "donebell-mine" and data["server"] == "https://ntfy.example.org"
        assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
        assert sorted(p.name for p in cfg.parent.iterdir()) == [cfg.name]  # no temp file left behind
