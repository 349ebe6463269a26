"""How the reliability tests start ``donebell`` processes: through the fork server, or plain exec.

Both spawners return :class:`Proc` handles for real OS processes (a pid that signals reach, an exit
status, stdout+stderr in a file). The fork server (``forkserver.py``) is the default because the
walks start hundreds of processes; ``DONEBELL_FULL_STORMS=1`` or ``DONEBELL_RELIABILITY_SPAWN=exec``
starts every one as ``python -m donebell.supervisor.cli ...`` instead.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

FULL = os.environ.get("DONEBELL_FULL_STORMS") == "1"
SPAWN_MODE = os.environ.get("DONEBELL_RELIABILITY_SPAWN") or ("exec" if FULL else "fork")
#: Exit status of a process that reached its ``DONEBELL_CRASH_AT`` operation.
CRASH_EXIT = 86
FORKSERVER = Path(__file__).with_name("forkserver.py")


N = TypeVar("N", int, float)


def size(default: N, full: N) -> N:
    """A storm's size: ``default`` in the normal suite, ``full`` with ``DONEBELL_FULL_STORMS=1``."""
    return full if FULL else default


@dataclass
class Result:
    rc: int
    output: str


class Proc:
    """A started ``donebell`` process."""

    def __init__(self, pid: int, out_file: Path, waiter: Spawner) -> None:
        self.pid, self.out_file, self._waiter = pid, out_file, waiter
        self.rc: int | None = None
        self.maxrss_kb: int | None = None  # peak resident set, once it exited

    def wait(self, timeout: float = 60.0) -> int:
        if self.rc is None:
            self.rc = self._waiter.wait_pid(self, timeout)
        return self.rc

    def output(self) -> str:
        try:
            return self.out_file.read_text("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def result(self, timeout: float = 60.0) -> Result:
        return Result(self.wait(timeout), self.output())


class Spawner:
    """Starts processes; subclasses say how."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        self._ids = itertools.count()
        self._id_lock = threading.Lock()

    def _files(self, stdin: bytes | None) -> tuple[Path | None, Path]:
        with self._id_lock:
            n = next(self._ids)
        out = self.scratch / f"out-{n}.txt"
        if stdin is None:
            return None, out
        path = self.scratch / f"in-{n}.bin"
        path.write_bytes(stdin)
        return path, out

    def start(self, argv: list[str], env: Mapping[str, str], stdin: bytes | None = None) -> Proc:
        raise NotImplementedError

    def wait_pid(self, proc: Proc, timeout: float) -> int:
        raise NotImplementedError

    def run(self, argv: list[str], env: Mapping[str, str], stdin: bytes | None = None, timeout: float = 60.0) -> Result:
        return self.start(argv, env, stdin).result(timeout)

    def close(self) -> None:
        pass


class ExecSpawner(Spawner):
    """Every process is a fresh ``python -m donebell.supervisor.cli`` (the real command line)."""

    def __init__(self, scratch: Path) -> None:
        super().__init__(scratch)
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, argv: list[str], env: Mapping[str, str], stdin: bytes | None = None) -> Proc:
        stdin_file, out = self._files(stdin)
        with open(stdin_file or os.devnull, "rb") as fin, open(out, "wb") as fout:
            popen = subprocess.Popen(
                [sys.executable, "-m", "donebell.supervisor.cli", *argv],
                env=dict(env),
                stdin=fin,
                stdout=fout,
                stderr=subprocess.STDOUT,
            )
        self._procs[popen.pid] = popen
        return Proc(popen.pid, out, self)

    def wait_pid(self, proc: Proc, timeout: float) -> int:
        popen = self._procs.pop(proc.pid)
        deadline = time.monotonic() + timeout
        while True:
            # wait4 instead of Popen.wait: it also reports the child's peak memory.
            done, status, usage = os.wait4(popen.pid, os.WNOHANG)
            if done:
                popen.returncode = os.waitstatus_to_exitcode(status)
                proc.maxrss_kb = usage.ru_maxrss
                return popen.returncode
            if time.monotonic() > deadline:
                popen.kill()
                deadline = float("inf")
            time.sleep(0.002)


class ForkSpawner(Spawner):
    """Every process is forked from one server that imported donebell once (``forkserver.py``)."""

    def __init__(self, scratch: Path) -> None:
        super().__init__(scratch)
        self._lock = threading.Lock()
        env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
        self._server = subprocess.Popen(
            [sys.executable, str(FORKSERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=str(scratch)
        )
        assert self._call(None) == {"ready": True}

    def _call(self, request: dict[str, object] | None) -> dict[str, object]:
        assert self._server.stdin is not None and self._server.stdout is not None
        with self._lock:
            if request is not None:
                self._server.stdin.write(json.dumps(request).encode() + b"\n")
                self._server.stdin.flush()
            line = self._server.stdout.readline()
        if not line:
            raise RuntimeError("the fork server died")
        reply: dict[str, object] = json.loads(line)
        return reply

    def start(self, argv: list[str], env: Mapping[str, str], stdin: bytes | None = None) -> Proc:
        stdin_file, out = self._files(stdin)
        reply = self._call(
            {
                "op": "spawn",
                "argv": argv,
                "env": dict(env),
                "stdin_file": str(stdin_file) if stdin_file else None,
                "out_file": str(out),
            }
        )
        pid = reply["pid"]
        assert isinstance(pid, int)
        return Proc(pid, out, self)

    def wait_pid(self, proc: Proc, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        pause = 0.001
        while True:
            reply = self._call({"op": "poll", "pid": proc.pid})
            rc, maxrss = reply["rc"], reply.get("maxrss_kb")
            if isinstance(rc, int):
                proc.maxrss_kb = maxrss if isinstance(maxrss, int) else None
                return rc
            if time.monotonic() > deadline:
                os.kill(proc.pid, signal.SIGKILL)  # a hung child: the same as ExecSpawner's kill()
                deadline = float("inf")
            time.sleep(pause)
            pause = min(pause * 2, 0.005)

    def close(self) -> None:
        if self._server.poll() is None:
            try:
                self._call({"op": "quit"})
            except (RuntimeError, OSError, ValueError):
                pass
            try:
                self._server.wait(5)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()


def make_spawner(scratch: Path) -> Spawner:
    return ExecSpawner(scratch) if SPAWN_MODE == "exec" else ForkSpawner(scratch)
