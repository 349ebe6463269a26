"""`config set` and secrets (issue 26 item 2): every secret key (`token`, `password`, `wake_token`,
the password of a `user:password@` server) is refused from argv with the way to pass it on stdin,
is stored as typed (never pydantic's `**********`), and is never printed back, on set or unset.
Real `donebell` processes on a real config file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "tk_s3cretvalueabcdef0123"
PASSWORD = "pw-S3cret-value"
STARTING_FILE = '{"topic": "donebell-mine", "server": "https://ntfy.example.org"}\n'


def _config(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "config", *args]
    return subprocess.run(cmd, capture_output=True, text=True, input=stdin, timeout=60)


@pytest.fixture()
def cfg(isolated_env: dict[str, Path]) -> Path:
    path = isolated_env["config"]
    path.parent.mkdir(parents=True)
    path.write_text(STARTING_FILE)
    os.chmod(path, 0o600)
    return path


@pytest.mark.parametrize("key", ["token", "password", "wake_token"])
def test_every_secret_key_is_refused_from_argv_and_taken_from_stdin(cfg: Path, key: str) -> None:
    """From argv: exit 2, the file untouched, the stdin form named. From stdin: stored as typed,
    printed masked on set and unset."""
    refused = _config("set", key, SECRET)
    assert refused.returncode == 2
    assert f"{key} is a secret: run `donebell config set {key} -`" in refused.stderr
    assert cfg.read_text() == STARTING_FILE and SECRET not in refused.stdout + refused.stderr

    done = _config("set", key, "-", stdin=SECRET + "\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(cfg.read_text())[key] == SECRET  # the secret itself, not "**********"
    assert done.stdout.startswith(f"{key}: null (default) -> **********\n")
    again = _config("set", key, "-", stdin="tk_another0123456789abc\n")
    assert again.returncode == 0 and again.stdout.startswith(f"{key}: **********")
    unset = _config("unset", key)
    assert unset.stdout.startswith(f"{key}: ********** -> null (default)\n")
    for res in (done, again, unset):
        assert SECRET not in res.stdout + res.stderr and "tk_another" not in res.stdout + res.stderr


def test_a_server_url_with_a_password_is_refused_from_argv(cfg: Path) -> None:
    """`config set server http://user:pw@host` would leave the password in the shell history."""
    res = _config("set", "server", f"https://phil:{PASSWORD}@ntfy.example.org")
    assert res.returncode == 2
    assert "server carries a password: run `donebell config set server -`" in res.stderr
    assert PASSWORD not in res.stdout + res.stderr and cfg.read_text() == STARTING_FILE


def test_a_server_url_with_a_password_comes_from_stdin_and_is_shown_masked(cfg: Path) -> None:
    res = _config("set", "server", "-", stdin=f"https://phil:{PASSWORD}@ntfy.example.org\n")
    assert res.returncode == 0, res.stderr
    assert json.loads(cfg.read_text())["server"] == f"https://phil:{PASSWORD}@ntfy.example.org"
    assert res.stdout.startswith('server: "https://ntfy.example.org" -> "https://phil:**********@ntfy.example.org"\n')
    unset = _config("unset", "server")
    assert unset.stdout.startswith('server: "https://phil:**********@ntfy.example.org" -> ')
    for out in (res, unset):
        assert PASSWORD not in out.stdout + out.stderr


def test_a_server_url_without_a_password_is_still_taken_from_argv(cfg: Path) -> None:
    res = _config("set", "server", "https://phil@ntfy.example.org")
    assert res.returncode == 0, res.stderr
    assert json.loads(cfg.read_text())["server"] == "https://phil@ntfy.example.org"


def test_the_printed_mask_is_not_taken_for_a_secret(cfg: Path) -> None:
    """`**********` pasted back (what show and set print) would make every button send it: refused."""
    res = _config("set", "wake_token", "-", stdin="**********\n")
    assert res.returncode == 2 and "that is the mask donebell prints" in res.stderr
    assert cfg.read_text() == STARTING_FILE


def test_config_init_refuses_a_server_password_from_argv(isolated_env: dict[str, Path]) -> None:
    res = _config("init", "--server", f"https://phil:{PASSWORD}@ntfy.example.org")
    assert res.returncode == 2 and "--server carries a password" in res.stderr
    assert PASSWORD not in res.stdout + res.stderr and not isolated_env["config"].exists()


@pytest.mark.parametrize("key", ["token", "password", "wake_token"])
@pytest.mark.parametrize("typed", ["", "\n", "   \n"], ids=["empty-pipe", "bare-enter", "spaces"])
def test_an_empty_secret_is_refused(cfg: Path, key: str, typed: str) -> None:
    """`printf '' | donebell config set token -` stored "" behind the mask (issue 34 item 9)."""
    res = _config("set", key, "-", stdin=typed)
    assert res.returncode == 2, res
    assert f"{key}: nothing was read on stdin; an empty secret is refused" in res.stderr
    assert f"donebell config unset {key}" in res.stderr
    assert cfg.read_text() == STARTING_FILE
