"""A pre-imported fork server: hundreds of real ``donebell`` processes at the cost of a ``fork``.

Starting ``python -m donebell.supervisor.cli worker delivery`` takes ~0.35 s, nearly all of it imports
(httpx, pydantic). The crash-point walk and the storms start a process for every crash point and
every recovery, so this server imports the CLI and the roles once and forks one child per request.
The child takes the request's environment, stdin and ``DONEBELL_CRASH_AT`` and runs
``cli.main(argv)``, the entry point of the ``donebell`` command, in its own process: it takes its
own locks, dies by ``os._exit(86)`` at its crash point and is killed by real signals. Only the
interpreter start-up is shared. ``DONEBELL_FULL_STORMS=1`` (or ``DONEBELL_RELIABILITY_SPAWN=exec``)
makes the tests start every step as a plain subprocess instead (see ``runner.py``).

Protocol, one JSON line each way on stdin/stdout:
``{"op": "spawn", "argv", "env", "stdin_file", "out_file"}`` -> ``{"pid"}``;
``{"op": "poll", "pid"}`` -> ``{"rc", "maxrss_kb"}`` (null while it runs; a negative rc: killed by
that signal; ``maxrss_kb``: the child's peak resident set, shared pages of the server included);
``{"op": "quit"}``. Polling keeps the server free for other requests while a child runs.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import signal
import sys
import traceback

#: Packages whose every module is imported before the first fork, and third-party modules the
#: roles import lazily (missing or broken ones are skipped: parts may not be built yet).
PRELOAD_PACKAGES = ("donebell.shared", "donebell.workers", "donebell.supervisor.commands")
PRELOAD = (
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "certifi",
    "idna",
    "orjson",
    "filelock",
    "setproctitle",
    "sqlite3",
    "psutil",
    "pydantic_settings",
    "ssl",
)


def preload() -> None:
    for name in PRELOAD:
        _try_import(name)
    for package_name in PRELOAD_PACKAGES:
        package = _try_import(package_name)
        for info in pkgutil.walk_packages(getattr(package, "__path__", []), prefix=package_name + "."):
            _try_import(info.name)


def _try_import(name: str) -> object:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a module another engineer is still writing
        return None


def _child(request: dict[str, object]) -> None:
    """Runs in the forked child; never returns."""
    rc = 1
    try:
        _die_with_parent()
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        from donebell.shared import statedir

        # The seam is read at import time; this process imported it before the request came.
        statedir._base._crash_at = int(os.environ.get("DONEBELL_CRASH_AT", "0") or 0)
        statedir._base._op_count = 0
        stdin_file = request.get("stdin_file") or os.devnull
        fd = os.open(str(stdin_file), os.O_RDONLY)
        os.dup2(fd, 0)
        os.close(fd)
        out = os.open(str(request["out_file"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        argv = request["argv"]
        assert isinstance(argv, list)
        from donebell.supervisor import cli

        try:
            rc = int(cli.main([str(a) for a in argv]) or 0)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - report and exit like an uncaught exception would
        traceback.print_exc()
        rc = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(rc)


def _die_with_parent() -> None:
    """Linux: SIGKILL this child if the fork server dies (a test run killed by its timeout)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _poll(pid: int) -> tuple[int | None, int | None]:
    """``(exit code, peak RSS in KiB)`` of a finished child, ``(None, None)`` while it runs."""
    done, status, usage = os.wait4(pid, os.WNOHANG)
    return (os.waitstatus_to_exitcode(status), usage.ru_maxrss) if done else (None, None)


def serve() -> None:
    preload()
    running: set[int] = set()
    try:
        _serve(running)
    finally:
        # The test run ended (or died): no child of ours outlives it, e.g. one stuck on a FIFO.
        for pid in running:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def _serve(running: set[int]) -> None:
    requests = sys.stdin.buffer
    replies = sys.stdout
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in requests:
        request = json.loads(line)
        op = request.get("op")
        if op == "quit":
            break
        if op == "spawn":
            pid = os.fork()
            if pid == 0:
                _child(request)
            running.add(pid)
            reply: dict[str, object] = {"pid": pid}
        elif op == "poll":
            rc, maxrss = _poll(int(request["pid"]))
            if rc is not None:
                running.discard(int(request["pid"]))
            reply = {"rc": rc, "maxrss_kb": maxrss}
        else:
            reply = {"error": f"unknown op {op!r}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve()
