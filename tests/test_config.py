"""Configuration: defaults, overrides, refusals, migration, permissions and secrecy."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.shared.config import model

SECRET = "tk_abcdefghijklmnopqrstuvwxyz012"


def _write(path: Path, data: dict[str, object], mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    os.chmod(path, mode)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_defaults_follow_the_seed(isolated_env: dict[str, Path]) -> None:
    """Without a file every key has its documented default (strict, 180 chars, 900 s cap...)."""
    s = model.load().settings
    assert s.idle_detection_mode == "strict"
    assert s.max_message_chars == 180
    assert s.retry_max_seconds == 900
    assert s.unknown_retry_max_seconds == 60
    assert s.tags == ["white_check_mark"] and s.priority == 3 and s.markdown is False
    assert s.include_message is False  # message text leaves the machine only when opted in
    assert s.server == "https://ntfy.sh" and s.max_attempts == 0


def test_env_overrides_the_file(isolated_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """DONEBELL_<KEY> beats the file, with JSON-ish parsing of lists and booleans."""
    _write(isolated_env["config"], {"topic": "from-file", "priority": 2, "include_message": False})
    monkeypatch.setenv("DONEBELL_PRIORITY", "5")
    monkeypatch.setenv("DONEBELL_INCLUDE_MESSAGE", "true")
    monkeypatch.setenv("DONEBELL_TAGS", '["a","b"]')
    s = model.load().settings
    assert (s.topic, s.priority, s.include_message, s.tags) == ("from-file", 5, True, ["a", "b"])


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"idle_detection_mode": "fast"}, "idle_detection_mode"),
        ({"idle_grace_seconds": -1}, "idle_grace_seconds"),
        ({"topic": "has space"}, "topic"),
        ({"topic": "x" * 65}, "topic"),
        ({"priority": 9}, "priority"),
        ({"server": "ftp://x"}, "server"),
    ],
)
def test_wrong_values_are_refused_with_one_line(
    isolated_env: dict[str, Path], data: dict[str, object], key: str
) -> None:
    """A wrong value is refused with one line naming the key and the file."""
    _write(isolated_env["config"], data)
    with pytest.raises(model.ConfigError) as err:
        model.load()
    text = str(err.value)
    assert "\n" not in text and key in text and str(isolated_env["config"]) in text
    result = _cli("config", "check")
    assert result.returncode == 1 and key in result.stderr


def test_bad_env_value_names_the_variable(isolated_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong override is blamed on the environment variable, not the file."""
    monkeypatch.setenv("DONEBELL_IDLE_DETECTION_MODE", "sometimes")
    with pytest.raises(model.ConfigError, match="DONEBELL_IDLE_DETECTION_MODE"):
        model.load()


def test_world_readable_file_with_a_token_is_refused(isolated_env: dict[str, Path]) -> None:
    """A token in a file others can read is refused; the same file at 0600 loads."""
    _write(isolated_env["config"], {"topic": "t", "token": SECRET}, mode=0o644)
    with pytest.raises(model.ConfigError, match="chmod 600"):
        model.load()
    os.chmod(isolated_env["config"], 0o600)
    assert model.load().settings.token is not None


def test_reference_notifier_config_migrates(isolated_env: dict[str, Path]) -> None:
    """The reference notifier's ntfy-config.json loads as-is; its unused keys are listed once."""
    _write(
        isolated_env["config"],
        {
            "server": "https://ntfy.example.org",
            "topic": "my-topic",
            "goal_poll_seconds": 5,
            "suppress_subagents": True,
            "worker_sqlite_path": "C:/x",
            "watch_roots": ["/mnt/wsl/home/.codex", {"path": "//wsl$/Ubuntu/home/u/.codex", "origin": "wsl"}],
            "idle_grace_seconds": 4,
        },
    )
    loaded = model.load()
    assert loaded.unused_legacy == ["goal_poll_seconds", "suppress_subagents", "worker_sqlite_path"]
    assert loaded.warnings == []
    out = _cli("config", "check").stdout
    assert out.count("goal_poll_seconds") == 1


def test_typo_gets_a_warning_naming_the_closest_key(isolated_env: dict[str, Path]) -> None:
    """An unknown key is a warning with the closest known key, not a refusal."""
    _write(isolated_env["config"], {"topic": "t", "max_mesage_chars": 50})
    loaded = model.load()
    assert len(loaded.warnings) == 1 and "max_message_chars" in loaded.warnings[0]
    assert _cli("config", "check").returncode == 0


def test_init_writes_an_owner_only_file_with_an_unguessable_topic(isolated_env: dict[str, Path]) -> None:
    """config init creates a 0600 file (0700 dir) with donebell-<22 chars> and prints the URL once."""
    result = _cli("config", "init")
    assert result.returncode == 0
    path = isolated_env["config"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    topic = json.loads(path.read_text())["topic"]
    assert topic.startswith("donebell-") and len(topic) == len("donebell-") + 22
    assert result.stdout.count(f"https://ntfy.sh/{topic}") == 1
    again = _cli("config", "init")
    assert json.loads(path.read_text())["topic"] == topic and "unchanged" in again.stdout


def test_secrets_never_shown_or_logged(isolated_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """config show redacts token and password; nothing written to the state dir holds them."""
    _write(isolated_env["config"], {"topic": "t", "token": SECRET, "username": "u", "password": "hunter2-secret"})
    monkeypatch.setenv("DONEBELL_IDLE_DETECTION_MODE", "nope")  # provoke an error path too
    bad = _cli("config", "check")
    monkeypatch.delenv("DONEBELL_IDLE_DETECTION_MODE")
    shown = _cli("config", "show")
    assert shown.returncode == 0
    for text in (shown.stdout, shown.stderr, bad.stdout, bad.stderr):
        assert SECRET not in text and "hunter2-secret" not in text
    assert json.loads(shown.stdout)["token"] == "**********"
    state_root = isolated_env["state"]
    if state_root.exists():
        for path in state_root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert SECRET.encode() not in data and b"hunter2-secret" not in data


def test_config_path_follows_env_and_xdg(tmp_path: Path) -> None:
    """config path is DONEBELL_CONFIG, else $XDG_CONFIG_HOME/donebell/config.json."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    assert _cli("config", "path", env=env).stdout.strip() == str(tmp_path / "xdg" / "donebell" / "config.json")
    env["DONEBELL_CONFIG"] = str(tmp_path / "c.json")
    assert _cli("config", "path", env=env).stdout.strip() == str(tmp_path / "c.json")
