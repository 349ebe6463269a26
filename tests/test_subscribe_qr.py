"""Phone onboarding: `install`, `config show` and `test` print the subscribe URL and a terminal QR
code of it; `config show` keeps its JSON parseable and carries the URL as one line. Real processes."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
import segno
from support.delivery_kit import Env
from support.install_env import isolate
from support.ntfy_standin import NtfyStandin


def _qr(url: str) -> str:
    """segno's own rendering of ``url``: what a phone camera decodes back to exactly that URL."""
    buffer = io.StringIO()
    segno.make(url, error="l").terminal(out=buffer, compact=True)
    return buffer.getvalue().rstrip("\n")


def _donebell(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"}
    )


def test_install_prints_the_url_and_its_qr_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    res = _donebell("install", "--service", "none")
    assert res.returncode == 0, res.stdout + res.stderr
    url = "https://ntfy.sh/" + json.loads(paths["config"].read_text())["topic"]
    assert f"\n    {url}\n" in res.stdout
    assert _qr(url) in res.stdout and _qr(url + "x") not in res.stdout


def test_config_show_carries_the_url_as_one_line_and_stays_json(tmp_path: Path) -> None:
    env = Env(tmp_path, server="https://ntfy.example.org")
    res = env.run_cli("config", "show")
    url = f"https://ntfy.example.org/{env.config['topic']}"
    assert json.loads(res.stdout)["subscribe_url"] == url  # a pipe gets pure JSON
    assert f'  "subscribe_url": "{url}"' in res.stdout.splitlines()
    code, shown = _on_a_terminal(env, "config", "show")  # a terminal: the QR code follows the JSON
    assert code == 0 and _qr(url) in shown


def _on_a_terminal(env: Env, *args: str) -> tuple[int, str]:
    """Run ``donebell ARGS`` with its stdout on a pseudo-terminal; its exit code and what it showed."""
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", *args],
            env=env.environ(),
            stdout=secondary,
            stderr=subprocess.PIPE,
            timeout=60,
        )
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(primary)
    return proc.returncode, b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_test_command_prints_the_qr_code_only_on_a_terminal(srv: NtfyStandin, tmp_path: Path) -> None:
    env = Env(tmp_path, server=srv.url)
    res = env.run_cli("test")  # a pipe: the URL, no block of QR characters in a log file
    assert res.returncode == 0, res.stderr
    url = f"{srv.url}/{env.config['topic']}"
    assert f"subscribe to {url} to receive it" in res.stdout and _qr(url) not in res.stdout
    assert "\u2580" not in res.stdout and "\u2584" not in res.stdout  # no half-block QR rows
    code, shown = _on_a_terminal(env, "test")
    assert code == 0 and f"subscribe to {url} to receive it" in shown and _qr(url) in shown
