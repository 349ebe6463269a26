"""Drive the interactive Claude Code and Codex TUIs through a pseudo-terminal (no terminal emulator needed).

    tui = ClaudeTui.start(home)          # `claude` without -p, on a pty, in its own session
    tui.wait_quiet()                     # the first screen is drawn
    tui.type("say hello")                # the text, then Enter
    ...                                  # hooks run as in a real session
    tui.close()                          # /exit, then SIGKILL to its process group

The pty's output is drained by a thread (a full pty buffer would block the TUI) and kept for
diagnostics (`screen_text()`: ANSI escapes removed). Only what the scenarios need: no screen model.
The Codex TUI asks its terminal questions (cursor position, colours, keyboard protocol) and waits
for the answers, so `CodexTui` answers them as a terminal would.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import struct
import subprocess
import termios
import threading
import time

import psutil
from support import npm_clis

from e2e.harness import ClaudeHome, CodexHome

_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


class ClaudeTui:
    #: (what the program asks its terminal, what a terminal answers); Claude asks nothing it waits on.
    ANSWERS: tuple[tuple[bytes, bytes], ...] = ()

    def __init__(self, proc: subprocess.Popen[bytes], master: int) -> None:
        self.proc, self.master = proc, master
        self.output = bytearray()
        self.last_output = time.monotonic()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, home: ClaudeHome, *args: str) -> ClaudeTui:
        master, slave = os.openpty()
        os.set_blocking(master, True)
        env = home.env | {"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        proc = subprocess.Popen(
            [str(npm_clis.claude_binary()), *args],
            cwd=home.workdir,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        return cls(proc, master)

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.output += chunk
                self.last_output = time.monotonic()
            for query, answer in self.ANSWERS:
                if query in chunk:
                    os.write(self.master, answer)

    def screen_text(self) -> str:
        with self._lock:
            data = bytes(self.output)
        return _ANSI.sub(b"", data).decode("utf-8", "replace")

    def wait_quiet(self, quiet: float = 1.5, timeout: float = 60) -> None:
        """Until some output came and then none for ``quiet`` seconds (the screen settled)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"claude exited {self.proc.returncode}:\n{self.screen_text()[-2000:]}"
            with self._lock:
                seen, last = len(self.output), self.last_output
            if seen and time.monotonic() - last >= quiet:
                return
            time.sleep(0.1)
        raise AssertionError(f"the TUI never settled:\n{self.screen_text()[-2000:]}")

    def type(self, text: str) -> None:
        """Type ``text`` (as one paste), then press Enter."""
        os.write(self.master, text.encode())
        time.sleep(0.5)
        os.write(self.master, b"\r")

    def close(self) -> None:
        """``/exit`` (the session ends as a user ends it), then nothing of it is left running."""
        if self.proc.poll() is None:
            try:
                self.type("/exit")
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        os.close(self.master)
        self._reader.join(5)


class CodexTui(ClaudeTui):
    """``codex [PROMPT]`` on a pty that is its controlling terminal. The TUI runs its threads on an
    app-server daemon it starts in ``CODEX_HOME``; ``close`` stops that daemon and its helper too."""

    #: Answers to the terminal queries the TUI waits for (cursor position, modes, attributes, colours).
    ANSWERS = (
        (b"\x1b[6n", b"\x1b[1;1R"),
        (b"$p", b"\x1b[?1007;2$y"),
        (b"\x1b[c", b"\x1b[?62;22c"),
        (b"\x1b[?u", b"\x1b[?0u"),
        (b"]10;?", b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\"),
        (b"]11;?", b"\x1b]11;rgb:0000/0000/0000\x1b\\"),
    )
    home: CodexHome

    @classmethod
    def start_codex(cls, home: CodexHome, *args: str) -> CodexTui:
        """``codex *args`` in the home's work folder, marked trusted (no "trust this folder?" dialog)."""
        with (home.codex_home / "config.toml").open("a") as config:
            config.write(f'[projects."{home.workdir}"]\ntrust_level = "trusted"\n')
        master, slave = os.openpty()
        os.set_blocking(master, True)
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 140, 0, 0))
        proc = subprocess.Popen(
            [str(npm_clis.codex_binary()), *args],
            cwd=home.workdir,
            env=home.env | {"TERM": "xterm-256color"},
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        tui = cls(proc, master)
        tui.home = home
        return tui

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        os.close(self.master)
        self._reader.join(5)
        codex = str(npm_clis.codex_binary())
        with contextlib.suppress(subprocess.TimeoutExpired):  # it can hang; what is left is killed below
            subprocess.run(
                [codex, "app-server", "daemon", "stop"], env=self.home.env, capture_output=True, timeout=20, check=False
            )
        for proc in psutil.process_iter(["cmdline"]):  # the daemon's helper outlives its stop
            if any(str(self.home.codex_home) in part for part in proc.info["cmdline"] or []):
                with contextlib.suppress(psutil.Error):
                    proc.kill()
