"""``donebell run``: the supervisor (the entry point of systemd, launchd and Task Scheduler).

It takes ``locks/supervisor.lock`` (a second ``run`` on the same state directory refuses, exit
75), checks the configuration (writing the embedded default on a first run), then spawns each
role as its own process (``donebell worker <role>``, see :mod:`.children`; forked on Linux from this
process after it imported the roles' modules, :mod:`.role_fork`) and watches them:

* exits are decided by :class:`.policy.RestartPolicy` (backoff, throttle, fatal);
* ``health/supervisor.json`` holds its own pid/start time and, per role, pid, state, restarts,
  last exit code, next restart time and the fatal flag (:mod:`.status` reads it);
* a role whose heartbeat stops for ``hang_after`` seconds is killed and restarted;
* ``READY=1`` goes to systemd once every role has settled (:func:`.health.settled`), then
  ``WATCHDOG=1`` every half ``WATCHDOG_USEC`` for as long as this loop turns;
* SIGTERM/SIGINT (CTRL_BREAK on Windows): every role gets SIGTERM, ``stop_grace`` seconds, then
  SIGKILL with its whole process tree; exit 0.

The remote-scanner role is spawned only when ``watch_roots`` is non-empty; otherwise it is listed
as ``disabled``; so is the wake role unless ``wake_enabled``. The configuration is read at start: restart the service after changing it.
"""

from __future__ import annotations

import argparse
import os
import sys

from donebell.shared.statedir import StateError, open_state_dir
from donebell.shared.states import ROLE_NAMES
from donebell.supervisor import role_fork
from donebell.supervisor.commands.first_run import next_steps
from donebell.supervisor.doctor import preflight
from donebell.supervisor.loop import Slot, Supervisor
from donebell.supervisor.policy import Intervals
from donebell.supervisor.sdnotify import Notifier

EXIT_ALREADY_RUNNING = 75  # sysexits EX_TEMPFAIL: another supervisor owns this state directory
EXIT_CONFIG = 78
EXIT_STATE_DIR = 73  # sysexits EX_CANTCREAT: the state directory is unusable


def selected_roles() -> list[str]:
    """``DONEBELL_SUPERVISOR_ROLES`` (comma-separated, a debugging/test knob), else all four."""
    raw = os.environ.get("DONEBELL_SUPERVISOR_ROLES", "").strip()
    return [r.strip() for r in raw.split(",") if r.strip()] if raw else list(ROLE_NAMES)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="donebell run", description="Run the supervisor and its roles in the foreground until SIGTERM/SIGINT."
    )
    parser.parse_args(argv)
    selected = selected_roles()
    unknown = [r for r in selected if r not in ROLE_NAMES]
    if unknown:
        sys.stderr.write(f"donebell run: unknown role(s) in DONEBELL_SUPERVISOR_ROLES: {', '.join(unknown)}\n")
        return 2
    try:
        state = open_state_dir()
    except (StateError, OSError) as exc:
        sys.stderr.write(f"donebell run: cannot use the state directory: {exc}\n")
        return EXIT_STATE_DIR
    lock = state.role_lock("supervisor")
    if lock is None:
        owner = state.lock_owner("supervisor") or {}
        sys.stderr.write(
            f"donebell run: another supervisor (pid {owner.get('pid', '?')}) is already running for "
            f"{state.root}; stop it first, or use 'donebell status'\n"
        )
        return EXIT_ALREADY_RUNNING
    try:
        answer = preflight.run_in_child()
        if not answer.get("ok"):
            sys.stderr.write(f"donebell run: {answer.get('error')}\n")
            return EXIT_CONFIG
        for warning in answer.get("warnings") or []:
            sys.stderr.write(f"donebell run: warning: {warning}\n")
        if answer.get("created"):
            sys.stdout.write(next_steps(answer.get("config_path"), answer.get("subscribe_url")))
            sys.stdout.flush()
        _set_title("donebell: supervisor")
        intervals = Intervals.from_env()
        slots = []
        for name in ROLE_NAMES:
            if name not in selected:
                slots.append(Slot(name, False, intervals, "not selected (DONEBELL_SUPERVISOR_ROLES)"))
            elif name == "remote-scanner" and not answer.get("watch_roots"):
                slots.append(Slot(name, False, intervals, "no watch_roots configured"))
            elif name == "wake" and (not answer.get("wake_enabled") or answer.get("wake_problem")):
                slots.append(Slot(name, False, intervals, answer.get("wake_problem") or "wake_enabled is false"))
            else:
                slots.append(Slot(name, True, intervals))
        if role_fork.fork_enabled():
            role_fork.preload([slot.name for slot in slots if slot.enabled])
        supervisor = Supervisor(state, slots, intervals, Notifier(), lock)
        supervisor.config_at_start = _config_at_start(answer.get("config_path"))
        from donebell.supervisor.doctor.service_env import wanted

        supervisor.agent_env = wanted(list(os.environ))  # names, never values (doctor's wake_env)
        try:
            return supervisor.run()
        finally:
            lock = supervisor.lock or lock  # re-taken if the state directory was replaced
    finally:
        lock.release()


def _config_at_start(path: object) -> dict[str, str] | None:
    """The fingerprints of the restart keys in the file just checked (``status``: "restart to apply")."""
    from donebell.shared.config.schema import ConfigFileError, read_object
    from donebell.supervisor.commands.config_restart import fingerprints

    try:
        return fingerprints(read_object(str(path))) if isinstance(path, str) else None
    except ConfigFileError:
        return None


def _set_title(title: str) -> None:
    try:
        import setproctitle

        setproctitle.setproctitle(title)
    except Exception:  # noqa: BLE001 - a cosmetic failure must not stop the supervisor
        pass
