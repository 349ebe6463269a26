"""The supervisor's loop: role slots, exits, restarts, health checks, READY/WATCHDOG, stop.

:class:`Supervisor` owns one :class:`Slot` per role. Its loop sleeps until the next deadline (a
restart due, a health check, a heartbeat, a watchdog ping) or until a signal arrives (SIGCHLD
and SIGTERM/SIGINT/SIGBREAK wake it through a socket given to ``signal.set_wakeup_fd``), so an
idle supervisor costs a few wake-ups a minute. See :mod:`.run` for the command around it.
"""

from __future__ import annotations

import contextlib
import select
import signal
import socket
import sys
import time
from typing import Any

from donebell.shared.health import alive, did_work, same_process, settled
from donebell.shared.process import groups
from donebell.shared.statedir import RoleLock, StateDir, now
from donebell.shared.states import Phase, SlotState
from donebell.supervisor import state_dir_guard
from donebell.supervisor.children import Child, spawn, stop_pid
from donebell.supervisor.policy import Intervals, RestartPolicy
from donebell.supervisor.sdnotify import Notifier

_EXIT_WORDS = {2: "bad usage", 70: "injected start-up fault", 78: "configuration error"}


class Slot:
    """The supervisor's view of one role: its current process and its restart history."""

    def __init__(self, name: str, enabled: bool, intervals: Intervals, why_disabled: str = "") -> None:
        self.name, self.enabled = name, enabled
        self.policy = RestartPolicy(intervals)
        self.child: Child | None = None
        self.state: SlotState = "starting" if enabled else "disabled"
        self.reason = why_disabled
        self.restarts = 0
        self.spawns = 0
        self.last_exit_code: int | None = None
        self.last_exit_at: float | None = None
        self.next_start: float | None = time.monotonic() if enabled else None
        self.next_start_at: float | None = None
        # Hang detection compares monotonic time with when the heartbeat last *changed*, not
        # the wall clock with heartbeat_at: a clock step or a laptop's suspend is not a hang.
        self.beat_seen: object = None
        self.beat_changed = 0.0

    def entry(self) -> dict[str, Any]:
        """This role's item in ``supervisor.json``."""
        ident = self.child.identity() if self.child else {"pid": None, "create_time": None, "started_at": None}
        return {
            "state": self.state,
            "enabled": self.enabled,
            **ident,
            "restarts": self.restarts,
            "last_exit_code": self.last_exit_code,
            "last_exit_at": self.last_exit_at,
            "next_restart_at": self.next_start_at if self.child is None else None,
            "fatal": self.policy.fatal,
            "reason": self.reason or None,
        }


class Supervisor:
    """Spawns the roles and keeps them running until told to stop."""

    def __init__(
        self, state: StateDir, slots: list[Slot], intervals: Intervals, notifier: Notifier, lock: RoleLock | None = None
    ) -> None:
        self.state, self.slots, self.iv, self.notifier = state, slots, intervals, notifier
        self.lock = lock  # locks/supervisor.lock; re-taken if the state directory is replaced
        self.exit_code = 0
        self.stop_signal: int | None = None
        self.phase: Phase = "starting"
        self.ready_at: float | None = None
        self.started_at = now()
        from donebell.shared.process.liveness import current_process_identity

        self.identity = current_process_identity()
        mono = time.monotonic()
        self.next_health = mono
        self.last_health_check = mono
        self.next_publish = mono
        self.next_watchdog = mono if notifier.watchdog_interval else None
        self._wake_r, self._wake_w = socket.socketpair()
        #: the config file's restart keys as this supervisor started (commands/config_restart.py)
        self.config_at_start: dict[str, str] | None = None
        self.agent_env: list[str] | None = None  # names only: what a woken agent turn inherits (doctor)

    # main loop ---------------------------------------------------------------------------

    def run(self) -> int:
        self._install_signals()
        self._stop_orphans_of_a_previous_run()
        self._drop_bad_health_files()
        self.say(f"supervising {', '.join(s.name for s in self.slots if s.enabled) or 'no roles'}")
        while self.stop_signal is None:
            at = time.monotonic()
            self._collect_exits(at)
            self._start_due(at)
            if at >= self.next_health:
                if self.lock is not None and not self.lock.still_held():
                    self.lock = state_dir_guard.retake(self, self.lock)
                    if self.lock is None:
                        break
                self._check_health(at)
                self.next_health = at + (self.iv.heartbeat if self.ready_at else 0.2)
            if self.next_watchdog is not None and at >= self.next_watchdog:
                self.notifier.watchdog()
                self.next_watchdog = at + (self.notifier.watchdog_interval or 1.0)
            if at >= self.next_publish:
                self.publish()
            self._sleep(self._next_deadline() - time.monotonic())
        self._shutdown()
        return self.exit_code

    def _collect_exits(self, at: float) -> None:
        for slot in self.slots:
            child = slot.child
            if child is None or not child.exited():
                continue
            health = self.state.read_health(slot.name)
            worked = same_process(health, child.identity()) and did_work(health)
            killed = child.returncode is not None and child.returncode < 0
            decision = slot.policy.on_exit(at, child.uptime(), worked, killed)
            slot.child = None
            slot.last_exit_code, slot.last_exit_at = child.returncode, now()
            slot.state, slot.reason = decision.state, decision.reason
            slot.next_start = at + decision.delay
            slot.next_start_at = now() + decision.delay
            self.say(
                f"{slot.name} exited ({describe_exit(child.returncode)}) after {child.uptime():.1f}s; "
                f"{decision.state}: {decision.reason}; restart in {decision.delay:g}s",
                level="error" if decision.fatal else "warning",
            )
            self.next_publish = at

    def _start_due(self, at: float) -> None:
        for slot in self.slots:
            if not slot.enabled or slot.child is not None or slot.next_start is None or slot.next_start > at:
                continue
            try:
                slot.child = spawn(slot.name)
            except OSError as exc:
                decision = slot.policy.on_exit(at, 0.0, False)
                slot.state, slot.reason = decision.state, f"cannot start: {exc}"
                slot.next_start, slot.next_start_at = at + decision.delay, now() + decision.delay
                self.say(f"{slot.name}: cannot start: {exc}", level="error")
                continue
            if slot.spawns:
                slot.restarts += 1
            slot.spawns += 1
            slot.next_start = slot.next_start_at = None
            slot.state = "starting"
            slot.beat_seen, slot.beat_changed = None, at
            self.next_health = min(self.next_health, at + 0.2)
            self.next_publish = at

    def _check_health(self, at: float) -> None:
        """Notice first passes (leaving fatal), kill hung roles, and send READY=1 when settled."""
        wall = now()
        if at - self.last_health_check > 2 * self.iv.heartbeat + 5:
            # This loop itself was not running (suspend, SIGSTOP): nobody's silence counts.
            for slot in self.slots:
                slot.beat_changed = max(slot.beat_changed, at)
        self.last_health_check = at
        healths = {slot.name: self.state.read_health(slot.name) for slot in self.slots if slot.enabled}
        for slot in self.slots:
            child = slot.child
            if child is None:
                continue
            health = healths.get(slot.name)
            if same_process(health, child.identity()):
                assert health is not None
                if did_work(health) and slot.state == "starting":
                    slot.state, slot.reason = "running", ""
                    if slot.policy.on_working():
                        self.say(f"{slot.name} works again; no longer fatal")
                    self.next_publish = at
                if health.get("heartbeat_at") != slot.beat_seen:
                    slot.beat_seen, slot.beat_changed = health.get("heartbeat_at"), at
            silent = at - slot.beat_changed  # since spawn, if it never wrote its own health file
            if silent > self.iv.hang_after:
                self.say(f"{slot.name} silent for {silent:.0f}s; killing it", level="error")
                child.kill_tree()
        if self.ready_at is None and all(
            settled(slot.entry(), healths.get(slot.name)) for slot in self.slots if slot.enabled
        ):
            self.ready_at = wall
            self.phase = "running"
            self.notifier.ready("roles started")
            self.say("all roles settled; ready")
            self.next_publish = at

    def _next_deadline(self) -> float:
        deadlines = [self.next_health, self.next_publish]
        deadlines += [s.next_start for s in self.slots if s.child is None and s.next_start is not None]
        if self.next_watchdog is not None:
            deadlines.append(self.next_watchdog)
        if not groups.group_signals():
            deadlines.append(time.monotonic() + 1.0)  # no SIGCHLD (Windows, portable mode): poll for exits
        return min(deadlines)

    # stop ----------------------------------------------------------------------------------

    def _shutdown(self) -> None:
        self.phase = "stopping"
        self.notifier.stopping()
        self.say(f"stopping on signal {self.stop_signal}")
        live = [s for s in self.slots if s.child is not None and not s.child.exited()]
        known = {s.name: s.child.descendants() for s in live if s.child}
        for slot in live:
            assert slot.child is not None
            slot.child.terminate()
            slot.state = "stopping"
        self.publish()
        deadline = time.monotonic() + self.iv.stop_grace
        while time.monotonic() < deadline and any(s.child and not s.child.exited() for s in live):
            self._sleep(min(0.1, deadline - time.monotonic()))
        for slot in self.slots:
            child = slot.child
            if child is None:
                continue
            if not child.exited():
                self.say(f"{slot.name} did not stop within {self.iv.stop_grace:g}s; killing it", level="warning")
            child.kill_tree(known.get(slot.name))
            give_up = time.monotonic() + 2.0  # a process stuck in the kernel (D state) may not die
            while not child.exited() and time.monotonic() < give_up:
                time.sleep(0.02)
            slot.last_exit_code, slot.last_exit_at = child.returncode, now()
            slot.child = None
            slot.state = "stopped"
        self.phase = "stopped"
        self.publish()

    def _stop_orphans_of_a_previous_run(self) -> None:
        """Roles left running by a supervisor that was killed hard are stopped, not duplicated."""
        old = self.state.read_health("supervisor")
        if not old or alive(old) or not isinstance(old.get("roles"), dict):
            return
        for name, entry in old["roles"].items():
            if isinstance(entry, dict) and alive(entry) and stop_pid(entry["pid"], entry.get("create_time"), 5.0):
                self.say(f"stopped {name} (pid {entry['pid']}) left behind by a previous supervisor")

    def _drop_bad_health_files(self) -> None:
        """A damaged role health file is removed (its role writes a fresh one when it starts;
        a disabled role never would, and ``status`` would report it forever)."""
        for slot in self.slots:
            record, problem = self.state.read_health_checked(slot.name)
            if record is None and problem is not None:
                self.state.drop_health(slot.name)
                self.say(f"health/{slot.name}.json: {problem}", "warning")

    # plumbing ----------------------------------------------------------------------------

    def publish(self) -> None:
        """Rewrite ``health/supervisor.json`` (volatile: no fsync)."""
        if self.exit_code:
            return  # stepping down: the file belongs to the supervisor that owns the directory now
        data = {
            "role": "supervisor",
            **self.identity,
            "state": self.phase,
            "started_at": self.started_at,
            "heartbeat_at": now(),
            "heartbeat_seconds": self.iv.heartbeat,
            "ready_at": self.ready_at,
            "systemd_notify": self.notifier.enabled,
            "watchdog_seconds": self.notifier.watchdog_interval,
            "intervals": self.iv.as_dict(),
            "roles": {slot.name: slot.entry() for slot in self.slots},
            "config_at_start": self.config_at_start,
            "agent_env": self.agent_env,
        }
        with contextlib.suppress(OSError):
            self.state.write_health("supervisor", data)
        self.next_publish = time.monotonic() + self.iv.heartbeat

    def say(self, message: str, level: str = "info") -> None:
        sys.stderr.write(f"donebell run: {message}\n")
        sys.stderr.flush()
        self.state.log(level, message, role="supervisor")

    def _install_signals(self) -> None:
        for sock in (self._wake_r, self._wake_w):
            sock.setblocking(False)
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)

        def _stop(signum: int, _frame: object) -> None:
            if self.stop_signal is None:
                self.stop_signal = signum

        for name in ("SIGTERM", "SIGINT", "SIGBREAK"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), _stop)
        if hasattr(signal, "SIGCHLD"):
            # A Python-level handler makes SIGCHLD write to the wake-up socket: exits wake us.
            signal.signal(signal.SIGCHLD, lambda _s, _f: None)

    def _sleep(self, timeout: float) -> None:
        if timeout > 0:
            with contextlib.suppress(InterruptedError, OSError, ValueError):
                select.select([self._wake_r], [], [], timeout)
        with contextlib.suppress(BlockingIOError, OSError):
            while self._wake_r.recv(4096):
                pass


def describe_exit(code: int | None) -> str:
    if code is None:
        return "unknown status"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    word = _EXIT_WORDS.get(code)
    return f"exit {code}: {word}" if word else f"exit {code}"
