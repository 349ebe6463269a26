"""What every role process shares: its lock, its health file, its loop, its debug run; and the
table of roles behind ``donebell worker <role> [--once] [--debug]``.

A role subclasses :class:`Role` and implements :meth:`Role.run_pass` (one unit of work) and,
optionally, :meth:`Role.watch_paths` (what should wake it early). :func:`run_role` does the rest:

* ``setproctitle("donebell: <role>")``;
* loads the validated config through the pydantic-free view (:mod:`donebell.shared.config.view`;
  a role process never imports pydantic, see ``tests/test_role_imports.py``); a config error is a
  start-up failure: health ``error``, exit 78;
* takes ``locks/<role>.lock`` (``--once``/``--until-idle`` runs exit 0 if another process holds
  it; a continuous run waits for it, state ``waiting-lock``);
* writes ``health/<role>.json`` (pid, create_time, state, started_at, heartbeat_at, last_success,
  last_error, passes, counters) at least every ``heartbeat_seconds``;
* stops cleanly on SIGTERM/SIGINT (SIGBREAK on Windows) between passes.

Test seam (see ``shared/faults.py``): ``DONEBELL_TEST_FAULT=<role>:startup[,...]`` (or ``@<file>`` holding that text, read at
start-up, so a test can switch it off) makes the named role exit with :data:`EXIT_FAULT` after
taking its lock and before its first pass: a start-up failure, as the supervisor sees it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, ClassVar

from donebell.shared.config import secret_text
from donebell.shared.config.view import ConfigError, SettingsLike, load
from donebell.shared.faults import injected_fault
from donebell.shared.health import HealthWriter
from donebell.shared.statedir import StateDir, StateDirReplaced, now, open_state_dir
from donebell.shared.waker import Waker
from donebell.workers import pass_control
from donebell.workers.kit.pass_result import PassResult

EXIT_CONFIG = 78  # sysexits EX_CONFIG: the supervisor throttles such a role
EXIT_FAULT = 70  # sysexits EX_SOFTWARE: an injected start-up fault (test seam)
EXIT_LOCK_LOST = 75  # sysexits EX_TEMPFAIL: the role lock file was deleted or replaced under a running role


class Role:
    """Base class of a role. Subclasses set ``name`` and implement :meth:`run_pass`."""

    name: ClassVar[str] = "role"
    heartbeat_seconds: ClassVar[float] = 10.0
    #: A pass that mostly waits for work (the wake role's subscription) keeps the state of the pass
    #: before (``ready``) instead of showing ``scanning`` for the whole wait.
    waits_in_pass: ClassVar[bool] = False

    def __init__(self, state: StateDir, settings: SettingsLike, args: argparse.Namespace) -> None:
        self.state = state
        self.settings = settings
        self.args = args
        self.log = logging.getLogger(f"donebell.{self.name}")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add role-specific options (``--once`` and ``--debug`` are always there)."""

    def setup(self) -> None:
        """Prepare before the first pass (open databases, load cursors)."""

    def run_pass(self) -> PassResult:
        raise NotImplementedError

    def watch_paths(self) -> list[Path]:
        """Paths whose change should wake the role before ``next_in``."""
        return []

    def health_extra(self) -> dict[str, Any]:
        """Role-specific fields for the health file."""
        return {}

    def bounded(self) -> bool:
        """True when this run stops by itself (``--once`` or a role's own bounded mode)."""
        return bool(getattr(self.args, "once", False))

    def teardown(self) -> None:
        """Release resources after the last pass."""

    def work_arrived_since(self, wall_time: float) -> bool:
        """After a bounded run released its lock: did work arrive that it may not have seen?"""
        return False


class _StateLogHandler(logging.Handler):
    """Route a role's log records into the state directory's bounded ``notify.log``."""

    def __init__(self, state: StateDir, role: str) -> None:
        super().__init__(logging.INFO)
        self.state, self.role = state, role

    def emit(self, record: logging.LogRecord) -> None:
        self.state.log(record.levelname.lower(), record.getMessage(), role=self.role)


def run_role(role_cls: type[Role], argv: list[str]) -> int:
    """Parse ``argv``, then run the role until stopped (or for one pass with ``--once``)."""
    parser = argparse.ArgumentParser(prog=f"donebell worker {role_cls.name}")
    parser.add_argument("--once", action="store_true", help="make one full pass and exit")
    parser.add_argument("--debug", action="store_true", help="verbose logs on stderr")
    role_cls.add_arguments(parser)
    args = parser.parse_args(argv)
    _set_title(f"donebell: {role_cls.name}")

    state = open_state_dir()
    logger = _role_logger(state, role_cls.name, args.debug)
    health = HealthWriter(state, role_cls.name, role_cls.heartbeat_seconds)
    try:
        settings = load().settings
    except ConfigError as exc:
        health.update(state="error", last_error=str(exc))
        sys.stderr.write(f"donebell worker {role_cls.name}: {exc}\n")
        state.log("error", "config error", role=role_cls.name, error=str(exc))
        return EXIT_CONFIG

    role = role_cls(state, settings, args)
    waker = Waker()
    stopping = _stop_on_signals(waker)
    lock = _wait_for_role_lock(role, state, health, waker, stopping, logger)
    if lock is None:
        waker.close()
        return 0
    return _run_holding(role, state, health, waker, stopping, logger, [lock])


def _role_logger(state: StateDir, name: str, debug: bool) -> logging.Logger:
    """The "donebell" logger: into the state directory's log, and with ``--debug`` on stderr too."""
    logger = logging.getLogger("donebell")
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    logger.addHandler(_StateLogHandler(state, name))
    if debug:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
    return logger


def _stop_on_signals(waker: Waker) -> dict[str, bool]:
    """SIGTERM/SIGINT (and SIGBREAK on Windows) set the returned flag and wake any wait."""
    stopping = {"flag": False}

    def _stop(signum: int, _frame: object) -> None:
        stopping["flag"] = True
        waker.interrupt()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if hasattr(signal, "SIGBREAK"):  # Windows: the supervisor stops roles with CTRL_BREAK
        signal.signal(signal.SIGBREAK, _stop)
    return stopping


def _wait_for_role_lock(
    role: Role, state: StateDir, health: HealthWriter, waker: Waker, stopping: dict[str, bool], logger: logging.Logger
) -> Any:
    """The role's lock, waiting while another worker holds it; None when there is nothing to do
    (a bounded run that finds the lock taken: the holder will see the work) or when stopped."""
    lock = state.role_lock(role.name)
    while lock is None:
        if role.bounded():
            logger.debug("another %s worker holds the lock; nothing to do", role.name)
            return None
        health.update(state="waiting-lock")
        waker.wait(1.0)
        if stopping["flag"]:
            return None
        lock = state.role_lock(role.name)
    return lock


def _run_holding(
    role: Role,
    state: StateDir,
    health: HealthWriter,
    waker: Waker,
    stopping: dict[str, bool],
    logger: logging.Logger,
    held: list[Any],
) -> int:
    """Set the role up and serve passes while ``held`` holds its lock; release everything at the end."""
    pass_control.install(lambda: stopping["flag"], lambda: health.update())
    # Nothing, not even our health file, is written into a state directory re-created under us.
    state.fence_with(lambda: all(one.still_held() for one in held))
    try:
        health.update(state="starting")
        if injected_fault(role.name, "startup"):
            logger.error("injected start-up fault (DONEBELL_TEST_FAULT)")
            return EXIT_FAULT
        role.setup()
        for _ in range(_MAX_HANDOVER_RECHECKS):
            status, pass_started_at = _serve(role, health, waker, stopping, logger, held)
            if status != "idle":
                if status == 0:
                    health.update(state="stopped")
                return int(status)
            # Handover: a hook that wrote a record while this bounded run was finishing saw the
            # lock owned and did not start a worker. Release first, then look once more.
            held.pop().release()
            if not role.work_arrived_since(pass_started_at):
                break
            again = state.role_lock(role.name)
            if again is None:
                break  # a newer worker took over: it will see the record
            held.append(again)
        health.update(state="stopped")
        return 0
    finally:
        role.teardown()
        waker.close()
        for remaining in held:
            remaining.release()


_MAX_HANDOVER_RECHECKS = 5


def _serve(
    role: Role, health: HealthWriter, waker: Waker, stopping: dict[str, bool], logger: logging.Logger, held: list[Any]
) -> tuple[int | str, float]:
    """Run passes until stopped or ``--once`` (0), a bounded run is idle ("idle"), a bounded pass
    fails (1), or the role lock was lost (:data:`EXIT_LOCK_LOST`); also return the wall-clock start
    of the last pass."""
    pass_started_at = time.time()  # real wall clock: compared with file mtimes
    announce = lambda: health.update(state="scanning")  # noqa: E731 - one object for every pass
    while not stopping["flag"]:
        if not all(lock.still_held() for lock in held):
            return _stop_on_lost_lock(role, logger), pass_started_at
        if not health.data.get("passes"):
            health.update(state="starting")
        elif role.waits_in_pass:
            health.update()  # the heartbeat only: the state stays what the last pass reported
        else:  # "scanning", once the pass lasts (pass_control): an idle pass writes its health once
            pass_control.pass_starts(announce)
        started = time.monotonic()
        pass_started_at = time.time()
        try:
            result = _run_pass(role)
        except StateDirReplaced:  # the fence refused a write mid-pass: not a failed pass
            return _stop_on_lost_lock(role, logger), pass_started_at
        except Exception as exc:  # noqa: BLE001 - one bad pass must not kill the role
            # A library's error may quote a URL or a header: never with a secret in it.
            error = secret_text.scrub(f"{type(exc).__name__}: {exc}", *secret_text.settings_secrets(role.settings))
            logger.error("pass failed: %s", error)
            logger.debug("%s", traceback.format_exc())
            # Also on stderr (the supervisor's or the service's log): with the disk full the
            # state dir's log cannot take it, and this line is then the only trace.
            if not getattr(role.args, "debug", False):
                sys.stderr.write(f"donebell {role.name}: pass failed: {error}\n"[:500])
            health.update(state="degraded", last_error=error[:300], last_error_at=now())
            if role.bounded():
                return 1, pass_started_at
            waker.wait(5.0)
            continue
        health.record_pass(result, time.monotonic() - started, role.health_extra())
        if role.bounded() and getattr(role.args, "once", False):
            return 0, pass_started_at
        if role.bounded() and result.idle:
            return "idle", pass_started_at
        waker.watch(role.watch_paths())
        delay = role.heartbeat_seconds if result.next_in is None else min(result.next_in, role.heartbeat_seconds)
        waker.wait(max(0.0, delay))
    return 0, pass_started_at


def _run_pass(role: Role) -> PassResult:
    """The role's pass; its start is no longer announced once it ended, however it ended."""
    try:
        return role.run_pass()
    finally:
        pass_control.pass_ends()


def _stop_on_lost_lock(role: Role, logger: logging.Logger) -> int:
    """The state directory was deleted or replaced under us: another worker may hold the new lock
    already. Stop; the supervisor restarts us on the new one."""
    logger.error("role lock %s is gone or replaced; stopping", role.name)
    sys.stderr.write(f"donebell {role.name}: its lock file is gone or replaced (state directory deleted?); stopping\n")
    return EXIT_LOCK_LOST


def _set_title(title: str) -> None:
    try:
        import setproctitle

        setproctitle.setproctitle(title)
    except Exception:  # noqa: BLE001 - a cosmetic failure must not stop a role
        pass


#: role name -> "module:RoleClass". Each module defines one Role subclass.
ROLES: dict[str, str] = {
    "delivery": "donebell.workers.delivery.role:DeliveryRole",
    "local-scanner": "donebell.workers.scanners.local:LocalScannerRole",
    "remote-scanner": "donebell.workers.scanners.remote:RemoteScannerRole",
    "maintenance": "donebell.workers.maintenance.role:MaintenanceRole",
    "wake": "donebell.workers.wake.role:WakeRole",
}


#: ``donebell worker --help``: what each role does (the supervisor runs them; by hand for debugging).
WORKER_HELP = """
Run one role in the foreground (`donebell run` starts and restarts them all; run one by hand to
debug it; `donebell worker ROLE --help` lists its options):
  delivery        the logical-idle gate and the outbox: decides and sends notifications
  local-scanner   reads this machine's Codex rollouts and Claude transcripts
  remote-scanner  reads the extra Codex homes of watch_roots
  maintenance     retention, temporary-file sweep, log rotation
  wake            the Continue/reply buttons (with wake_enabled)
"""


def main(argv: list[str]) -> int:
    """``donebell worker <role> ...``: import only the named role's module, then run it."""
    usage = f"usage: donebell worker {{{'|'.join(ROLES)}}} [--once] [--debug] (delivery: [--until-idle])\n"
    if argv[:1] in (["-h"], ["--help"], ["help"]):
        sys.stdout.write(usage + WORKER_HELP)
        return 0
    if not argv or argv[0] not in ROLES:
        unknown = f"donebell worker: unknown role '{argv[0]}'\n" if argv else ""
        sys.stderr.write(unknown + usage)
        return 2
    return run_role(role_class(argv[0]), argv[1:])


def role_class(name: str) -> type[Role]:
    """The Role subclass of ``name`` (a key of :data:`ROLES`), importing only its module: the
    one way code outside a role's folder reaches the role (the CLI's ``test`` runs delivery)."""
    module_name, class_name = ROLES[name].split(":")
    found: type[Role] = getattr(importlib.import_module(module_name), class_name)
    return found
