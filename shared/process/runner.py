"""The one seam between install/doctor and the OS service managers (systemctl, launchctl, schtasks).

Those programs cannot run in the test machine (no user systemd bus, no macOS, no Windows), so the
installer never calls :mod:`subprocess` directly: it hands an argv to a :class:`Runner`. The real
one runs it; tests pass a recording runner and assert the exact argv. Nothing else is stubbed.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Completed:
    """What a command did: its exit code and captured output (``returncode`` 127 = not found)."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def brief(self) -> str:
        """One line for the user: the first line of stderr (or stdout), else the exit code."""
        text = (self.stderr or self.stdout).strip().splitlines()
        return text[0] if text else f"exit code {self.returncode}"


class Runner(Protocol):
    """Runs one command without a shell; never raises for a missing program or a failure."""

    def run(self, argv: list[str], *, timeout: float = 30.0) -> Completed: ...

    def which(self, program: str) -> str | None: ...


class SubprocessRunner:
    """The real runner: ``subprocess.run`` with captured text output and a timeout."""

    def run(self, argv: list[str], *, timeout: float = 30.0) -> Completed:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            return Completed(tuple(argv), 127, "", f"{argv[0]}: command not found")
        except subprocess.TimeoutExpired:
            return Completed(tuple(argv), 124, "", f"{argv[0]}: timed out after {timeout:g} s")
        except OSError as exc:
            return Completed(tuple(argv), 126, "", f"{argv[0]}: {exc.strerror or exc}")
        return Completed(tuple(argv), proc.returncode, proc.stdout, proc.stderr)

    def which(self, program: str) -> str | None:
        return shutil.which(program)
