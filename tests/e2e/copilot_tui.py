"""Drive the interactive Copilot CLI in a detached tmux session (a real terminal emulator).

    tui = CopilotTui.start(home)             # `copilot` in the home's work folder, 160x50
    tui.wait_for("Type @ to mention")        # any text of the screen
    tui.type("Do the task.")                 # literally, then Enter
    tui.keys("Enter")                        # e.g. answer a dialog
    tui.close()                              # /exit, then the tmux server and all it ran are gone

Each TUI gets its own tmux server (a socket in the test's temp tree, no config file), started with
the home's clean environment, so nothing of a developer's tmux or shell leaks in. ``screen()`` is
the visible pane as text (for assertions and diagnostics).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time

import psutil
from support import npm_clis

from e2e.copilot_harness import CopilotHome

SESSION = "e2e"


def tmux_missing() -> str | None:
    """Why the TUI scenarios cannot run here (tmux is not installed), else None."""
    return None if shutil.which("tmux") else "tmux is not installed: the Copilot TUI scenarios run the CLI inside it"


class CopilotTui:
    def __init__(self, home: CopilotHome, socket: str) -> None:
        self.home, self.socket = home, socket

    @classmethod
    def start(cls, home: CopilotHome, *args: str) -> CopilotTui:
        socket = str(home.root / "tmux.sock")
        tui = cls(home, socket)
        command = [str(npm_clis.copilot_binary()), *args]
        tui._tmux("new-session", "-d", "-s", SESSION, "-x", "160", "-y", "50", "-c", str(home.workdir), *command)
        tui._tmux("set-option", "-t", SESSION, "remain-on-exit", "on")  # a crash stays readable
        return tui

    def _tmux(self, *args: str) -> str:
        env = self.home.env | {"TERM": "xterm-256color"}
        res = subprocess.run(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        assert res.returncode == 0, f"tmux {' '.join(args)} failed ({res.returncode}): {res.stderr}"
        return res.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", SESSION)

    def pane_pid(self) -> int:
        return int(self._tmux("display-message", "-p", "-t", SESSION, "#{pane_pid}").strip())

    def exited(self) -> bool:
        return self._tmux("display-message", "-p", "-t", SESSION, "#{pane_dead}").strip() == "1"

    def wait_for(self, text: str, timeout: float = 60) -> str:
        """Until ``text`` is on the screen; the screen then. Fails with the screen if it never is."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if self.exited() or time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared on the Copilot TUI:\n{screen}")
            time.sleep(0.2)

    def keys(self, *keys: str) -> None:
        """tmux key names (``Enter``, ``Escape``, ``C-c``, ``Down``)."""
        self._tmux("send-keys", "-t", SESSION, *keys)

    def type(self, text: str) -> None:
        """Type ``text`` literally, then press Enter once the input shows it."""
        self._tmux("send-keys", "-t", SESSION, "-l", text)
        time.sleep(0.3)
        self.keys("Enter")

    def close(self) -> None:
        """``/exit`` as a user ends a session, then end the tmux server and anything left of the CLI."""
        pids: list[psutil.Process] = []
        with contextlib.suppress(AssertionError, psutil.Error, ValueError):
            pane = psutil.Process(self.pane_pid())
            pids = [pane, *pane.children(recursive=True)]
            if not self.exited():
                self.type("/exit")
                psutil.wait_procs([pane], timeout=10)
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            self._tmux("kill-server")
        for proc in pids:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)
