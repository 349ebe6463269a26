"""One scrubber on every output path (issue 26 item 5): a table over every command.

The configured secrets (`token`, `password`, `wake_token`, the server URL's password) are planted
where an older version could have left them: an old dead letter's and a receipt's `last_error`,
a health file's `last_error`, in the forms a library prints them (raw, in a Bearer or Basic
header, percent-encoded, JSON-escaped). Then every command that prints runs as a real process
and its stdout and stderr are searched for every form of every secret: zero hits. The writers'
own scrubber (delivery, the roles' health) knows `wake_token` too.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from donebell.shared.config import secret_text
from donebell.shared.config.model import Settings
from donebell.shared.records import new_receipt
from donebell.shared.statedir import StateDir
from support.delivery_kit import outbox_record
from support.ntfy_standin import NtfyStandin
from support.secrets_check import SecretScan

TOKEN = "tk_outputtableaccount0123456789"
WAKE_TOKEN = "tk_outputtablephone0123456789ab"
PASSWORD = "pw-Output-Table-S3cret"
URL_PASSWORD = "url-Pass-W0rd-S3cret"
USER = "phil"

#: Every command that prints, by what it is asked (the thread id is filled in per test).
COMMANDS: list[list[str]] = [
    ["log"],
    ["log", "--json"],
    ["explain", "{thread}"],
    ["explain", "{thread}", "--json"],
    ["status"],
    ["status", "--json"],
    ["doctor"],
    ["doctor", "--json"],
    ["test"],
    ["test", "--json"],
    ["config", "show"],
    ["config", "check"],
]

CONFIGS: dict[str, dict[str, Any]] = {
    "token": {"token": TOKEN, "wake_token": WAKE_TOKEN, "userinfo": URL_PASSWORD},
    "password": {"username": USER, "password": PASSWORD, "wake_token": WAKE_TOKEN},
}


def _leaky_error(secrets: list[str]) -> str:
    """An error text quoting each secret the ways libraries do (a Basic header: as the password of
    the configured user or the URL's user, and of the empty user, as ntfy takes a token)."""
    parts = []
    for s in secrets:
        user = "" if s.startswith("tk_") else USER
        basic = base64.b64encode(f"{user}:{s}".encode()).decode()
        parts.append(f"Bearer {s}; Basic {basic}; {quote(s, safe='')}; {json.dumps({'auth': s})}")
    return "HTTP 400: the server echoed " + " | ".join(parts)


def _plant(state: StateDir, secrets: list[str]) -> dict[str, Any]:
    """An old dead letter, a sent receipt and a delivery health file, each quoting the secrets."""
    error = _leaky_error(secrets)
    dead = outbox_record(attempts=9, last_error=error)
    state.create("dead", new_receipt(dead, status="dead", reason="permanent-http-error", last_error=error))
    sent = outbox_record(thread_id=dead["thread_id"], attempts=2, last_error=error)
    state.create("sent", new_receipt(sent, status="sent", reason="sent", last_error=error))
    health = state.root / "health" / "delivery.json"
    health.parent.mkdir(parents=True, exist_ok=True)
    health.write_text(json.dumps({"role": "delivery", "pid": 1, "heartbeat_at": time.time(), "last_error": error}))
    return dead


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_no_command_prints_a_configured_secret(
    kind: str, isolated_env: dict[str, Path], srv: NtfyStandin, tmp_path: Path
) -> None:
    conf = dict(CONFIGS[kind])
    url_password = conf.pop("userinfo", None)
    server = srv.url.replace("://", f"://{USER}:{url_password}@") if url_password else srv.url
    config_file = isolated_env["config"]
    config_file.parent.mkdir(parents=True)
    config_file.write_text(json.dumps({"server": server, "topic": "donebell-outputs", **conf}))
    os.chmod(config_file, 0o600)
    secrets = {k: v for k, v in conf.items() if k in ("token", "password", "wake_token")}
    if url_password:
        secrets["server-password"] = url_password
    dead = _plant(StateDir(isolated_env["state"]).ensure(), list(secrets.values()))

    scan = SecretScan(secrets, username=USER)
    for args in COMMANDS:
        argv = [a.format(thread=dead["thread_id"]) for a in args]
        cmd = [sys.executable, "-m", "donebell.supervisor.cli", *argv]
        res = subprocess.run(cmd, capture_output=True, timeout=120, check=False, cwd=tmp_path)
        assert res.stdout or res.stderr, argv  # each printed something: the scan is not vacuous
        scan.scan_text(f"{' '.join(argv)} (stdout)", res.stdout)
        scan.scan_text(f"{' '.join(argv)} (stderr)", res.stderr)
    assert scan.hits == []
    assert scan.scanned["texts"] == 2 * len(COMMANDS)


def test_the_writers_scrubber_knows_every_secret_key() -> None:
    """The delivery role and the roles' health files scrub with settings_secrets: wake_token included."""
    settings = Settings(token=TOKEN, wake_token=WAKE_TOKEN, server=f"https://{USER}:{URL_PASSWORD}@ntfy.example.org")
    secrets, _ = secret_text.settings_secrets(settings)
    assert sorted(secrets) == sorted([TOKEN, WAKE_TOKEN, URL_PASSWORD])
    text = _leaky_error([TOKEN, WAKE_TOKEN, URL_PASSWORD])
    scan = SecretScan({"token": TOKEN, "wake_token": WAKE_TOKEN, "url": URL_PASSWORD}, username=USER)
    scan.scan_text("scrubbed", secret_text.scrub(text, *secret_text.settings_secrets(settings)))
    assert scan.hits == []


def test_a_secret_written_in_pieces_is_still_scrubbed_and_the_stream_stays_a_terminal() -> None:
    """The wrapper holds text until a line ends (json.dump writes in chunks), flushes the rest on
    flush, and answers isatty/fileno as the real stream does (the QR code of `test` needs isatty)."""
    import io

    from donebell.shared.text.scrubbed_output import ScrubbedStream

    inner = io.StringIO()
    out = ScrubbedStream(inner, [TOKEN])
    out.write(f"a {TOKEN[:7]}")
    out.write(f"{TOKEN[7:]} b\nc {TOKEN}")
    assert inner.getvalue() == "a ********** b\n"
    out.flush()
    assert inner.getvalue() == "a ********** b\nc **********"
    assert out.isatty() is False and out.getvalue() == inner.getvalue()  # the rest is the real stream's


def test_service_files_carry_locations_never_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """`install` writes the shell's locations into the unit/plist (PASSED_ENV), never a secret variable."""
    from donebell.supervisor.install import service

    for name, value in {
        "DONEBELL_TOKEN": TOKEN,
        "DONEBELL_WAKE_TOKEN": WAKE_TOKEN,
        "DONEBELL_PASSWORD": PASSWORD,
    }.items():
        monkeypatch.setenv(name, value)
    for name in service.PASSED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DONEBELL_STATE_DIR", "/home/u/state")
    env = service.passed_env()
    assert env == {"DONEBELL_STATE_DIR": "/home/u/state"}
    files = [service.render_systemd("/usr/bin/donebell", env), service.render_launchd("/usr/bin/donebell", env, "/l")]
    assert all("/home/u/state" in text for text in files)
    scan = SecretScan({"token": TOKEN, "wake_token": WAKE_TOKEN, "password": PASSWORD})
    for text in files:
        scan.scan_text("service file", text)
    assert scan.hits == []


def test_no_wrapper_around_a_missing_stream(monkeypatch: pytest.MonkeyPatch, isolated_env: dict[str, Path]) -> None:
    """pythonw (the Windows task) has no stdout/stderr: print() stays a no-op, never an AttributeError."""
    from donebell.shared.text import scrubbed_output

    isolated_env["config"].parent.mkdir(parents=True)
    isolated_env["config"].write_text(json.dumps({"token": TOKEN}))
    os.chmod(isolated_env["config"], 0o600)
    monkeypatch.setattr(sys, "stdout", None)
    monkeypatch.setattr(sys, "stderr", None)
    originals = scrubbed_output.install()
    try:
        assert sys.stdout is None and sys.stderr is None
        print("nothing to print to")
    finally:
        scrubbed_output.uninstall(originals)
