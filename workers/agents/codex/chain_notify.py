"""Run the user's previous Codex ``notify`` program first (``chain_notify``), detached.

``donebell install`` moves an existing ``notify = [...]`` from Codex's config.toml into
donebell's ``chain_notify``, so users keep their notifier. It gets exactly what Codex would have
given it: its own argv plus the JSON payload element. It never blocks the hook and its failure is
only logged.

On POSIX a forked watcher (own session, stdio on the null device) starts the program, waits for
it (at most :data:`WATCH_SECONDS`) and logs a non-zero exit; the hook itself returns at once.
Elsewhere only a failure to start is logged.

Recursion guard: a chained program that is donebell's own notify hook (a config pointing at
itself) is refused, and ``DONEBELL_CHAINED=1`` in the chained program's environment stops any
further chaining.
"""

from __future__ import annotations

import os

from donebell.shared.process import hook_signals
from donebell.shared.process.groups import group_signals, spawn_detached
from donebell.shared.statedir import StateDir
from donebell.workers.kit.hook_context import HookContext

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

CHAINED_ENV = "DONEBELL_CHAINED"
WATCH_SECONDS = 600


def chain_argv(config_value: Any, payload_arg: str | None) -> list[str] | None:
    """The chained command line, or None if none is configured; ValueError if it is malformed."""
    if config_value in (None, [], ""):
        return None
    if not isinstance(config_value, list) or not all(isinstance(a, str) and a for a in config_value):
        raise ValueError("chain_notify must be a list of non-empty strings")
    if "hook" in config_value and "codex-notify" in config_value:
        raise ValueError("chain_notify points at donebell's own notify hook; refusing to loop")
    return [*config_value, *([payload_arg] if payload_arg is not None else [])]


def run_chain(ctx: HookContext, payload_arg: str | None) -> None:
    """Start the configured chained notifier, if any; every problem is logged, none raised."""
    if os.environ.get(CHAINED_ENV):
        return
    try:
        _run_chain(ctx, payload_arg)
    except Exception as exc:  # noqa: BLE001 - the user's notifier must never stop donebell's own ingest
        ctx.log("warning", "chain_notify not run", reason=f"{type(exc).__name__}: {exc}"[:200])


def _run_chain(ctx: HookContext, payload_arg: str | None) -> None:
    try:
        argv = chain_argv(ctx.config.get("chain_notify"), payload_arg)
        if "chain_notify" in ctx.refused_config:  # a value the loaders refuse (read as unset)
            raise ValueError(ctx.refused_config["chain_notify"])
    except ValueError as exc:
        ctx.log("warning", "chain_notify not run", reason=str(exc))
        return
    if argv is None:
        return
    env = dict(os.environ)
    env[CHAINED_ENV] = "1"
    program = os.path.basename(argv[0])[:80]
    if group_signals() and hasattr(os, "fork"):  # POSIX sessions: a forked watcher logs a failure
        _fork_watcher(ctx, argv, env, program)
        return
    try:  # Windows and portable mode: started, never watched
        spawn_detached(argv, env=env)
    except OSError as exc:
        ctx.log("warning", "chain_notify could not start", program=program, error=exc.strerror or str(exc))


def _fork_watcher(ctx: HookContext, argv: list[str], env: dict[str, str], program: str) -> None:
    try:
        state: StateDir | None = ctx.state  # opened before forking, so the watcher can log
    except Exception:  # noqa: BLE001 - a broken state dir must not cost the user their notifier
        state = None

    def note(message: str, **fields: Any) -> None:
        if state is not None:
            state.log("warning", message, hook=ctx.command, program=program, **fields)

    pid = os.fork()
    if pid:
        return  # the hook goes on; the watcher is reaped by init once the hook exits
    code = 0
    try:
        hook_signals.release()  # the watcher is no hook: SIGTERM ends it again
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            child = spawn_detached(argv, env=env)
        except OSError as exc:
            note("chain_notify could not start", error=exc.strerror or str(exc))
            return
        exit_code = _wait(child)
        if exit_code is None:
            note("chain_notify still running; no longer watched", seconds=WATCH_SECONDS)
        elif exit_code != 0:
            note("chain_notify failed", exit_code=exit_code)
    except BaseException:  # noqa: BLE001 - the watcher must never return into the hook's code
        code = 1
    finally:
        os._exit(code)


def _wait(pid: int) -> int | None:
    """The exit code of ``pid``, or None if it is still running after :data:`WATCH_SECONDS`."""
    import signal

    def _give_up(signum: int, frame: object) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, _give_up)
    signal.alarm(WATCH_SECONDS)
    try:
        _, status = os.waitpid(pid, 0)
    except TimeoutError:
        return None
    finally:
        signal.alarm(0)
    return os.waitstatus_to_exitcode(status)
