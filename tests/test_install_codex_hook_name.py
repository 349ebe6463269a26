"""Codex's `/hooks` review list names the hook `donebell install` wrote, instead of "Unnamed hook".

Drives the real Codex 0.171 TUI in a pseudo-terminal: on start it offers "Review hooks" for new
hooks; the review list shows each handler's ``statusMessage`` as its name, "Unnamed hook" without.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import psutil
import pytest
from donebell.supervisor.install.command import main_install
from donebell.workers.agents.codex.managed import CODEX_HOOK_LABEL, CODEX_PERMISSION_LABEL
from e2e.tui import CodexTui
from support import npm_clis
from support.install_env import RecordingRunner, isolate


def _screen_text(raw: bytes) -> str:
    text = re.sub(rb"\x1b\][^\x07\x1b]*(\x07|\x1b\\)", b"", raw)
    text = re.sub(rb"\x1b\[[0-9;?<>=]*[A-Za-z~]", b" ", text)
    return re.sub(r"\s+", " ", text.decode("utf-8", "replace"))


def _drive_tui(
    codex: Path, env: dict[str, str], cwd: Path, until: str, timeout: float = 60.0, section: str = "Stop hooks"
) -> str:
    """Start the TUI, choose "1. Review hooks", open the Stop hooks, and return the screen text seen."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(cwd)
        os.execve(str(codex), [str(codex)], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 140, 0, 0))
    raw, asked, opened = b"", False, False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                raw += chunk
                for query, answer in CodexTui.ANSWERS:
                    if query in chunk:
                        os.write(fd, answer)
            text = _screen_text(raw)
            if not asked and "Review hooks" in text:
                time.sleep(2.0)  # keys typed while the prompt still draws are lost
                os.write(fd, b"1")
                time.sleep(0.5)
                os.write(fd, b"\r")
                asked = True
            if asked and not opened and "enter review" in text.split("Review hooks", 1)[-1]:
                time.sleep(1.0)
                os.write(fd, b"\r")  # the event list opens on the first event to review: enter shows its hooks
                opened = True
            if opened and until in text.split(section, 1)[-1]:
                time.sleep(1.0)
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return _screen_text(raw)


def _kill_processes_of(codex_home: Path) -> None:
    """Every process still running from this Codex home (the daemon's helper survives its stop)."""
    for proc in psutil.process_iter(["cmdline"]):
        if any(str(codex_home) in part for part in proc.info["cmdline"] or []):
            with contextlib.suppress(psutil.Error):
                proc.kill()


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("event", "label"), [("Stop", CODEX_HOOK_LABEL), ("PermissionRequest", CODEX_PERMISSION_LABEL)]
)
def test_codex_hooks_list_shows_the_donebell_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, event: str, label: str
) -> None:
    """The real Codex /hooks review names each donebell hook (the review opens on the first event
    that needs it, so the other event's group is taken out of hooks.json for this run)."""
    reason = npm_clis.skip_reason()
    if reason is not None:
        pytest.skip(reason)
    codex = npm_clis.codex_binary()
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    work = tmp_path / "work"
    work.mkdir()
    (paths["codex"] / "config.toml").write_text(
        'model = "gpt-fake"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n'
        '[model_providers.fake]\nname = "Fake"\nbase_url = "http://127.0.0.1:9/v1"\nenv_key = "FAKE_API_KEY"\n'
        'wire_api = "responses"\n[analytics]\nenabled = false\n[feedback]\nenabled = false\n'
        f'[projects."{work}"]\ntrust_level = "trusted"\n'
    )
    assert main_install(["--codex", "--service", "none"], runner=RecordingRunner(), out=io.StringIO()) == 0
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(paths["home"]),
        "CODEX_HOME": str(paths["codex"]),
        "TERM": "xterm-256color",
        "FAKE_API_KEY": "x",
    }
    hooks_json = paths["codex"] / "hooks.json"
    doc = json.loads(hooks_json.read_text())
    doc["hooks"] = {event: doc["hooks"][event]}
    hooks_json.write_text(json.dumps(doc))
    section = f"{event} hooks"
    try:
        screen = _drive_tui(codex, env, work, until="Timeout", section=section)
    finally:  # the TUI runs on an app-server daemon of its own, which outlives the TUI's SIGKILL
        subprocess.run([str(codex), "app-server", "daemon", "stop"], env=env, capture_output=True, timeout=60)
        _kill_processes_of(paths["codex"])
    review = screen.split(section, 1)[-1]
    assert section in screen, screen[-2000:]
    assert label in review and "Unnamed hook" not in review, review[:2000]
