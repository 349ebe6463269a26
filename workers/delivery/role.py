"""The delivery role: gate the pending candidates, then deliver the outbox to ntfy, durably.

One pass = one gate pass over ``pending/`` (``workers.gate``), then every due ``outbox/`` record:

1. a record whose key already has a receipt (a crash after the receipt, before the removal) is
   removed and never sent again;
2. an unparsable record is dead-lettered (``StateDir.dead_letter_invalid``) and the pass goes on;
3. the payload is rendered from the record and the *current* config (``payload.render``) and
   POSTed with the record's own ``sequence_id`` (every attempt reuses it);
4. 2xx -> ``finish("outbox", "sent", receipt)`` (receipt first, then the removal); retryable ->
   ``replace`` with ``attempts``, ``last_error``, ``next_attempt_at``; permanent or
   ``max_attempts`` reached -> ``finish("outbox", "dead", receipt)``.

A crash anywhere leaves the outbox record, the receipt, or both: at-least-once, never lost.

Modes (one code path, the role lock always held): ``--once`` one full pass; ``--until-idle``
passes until ``pending/`` and ``outbox/`` are empty or all that is left waits more than
``IDLE_HORIZON_SECONDS`` (the on-demand worker a hook starts); no flag: forever.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any, Protocol

from donebell.shared.config.view import SettingsLike
from donebell.shared.ntfy.client import Auth, ConfigProblem, NtfyClient, auth_for, check_sendable
from donebell.shared.statedir import OUTBOX, PENDING, StateDir, now
from donebell.workers import pass_control
from donebell.workers.delivery.config_watch import ConfigWatch
from donebell.workers.delivery.outbox_sender import OutboxSender, SendOutcome
from donebell.workers.gate import run_gate_pass
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.role import Role

IDLE_HORIZON_SECONDS = 30.0
#: A continuous pass stops sending after this long so health and SIGTERM are served between passes.
PASS_BUDGET_SECONDS = 5.0
#: Minimum gap between passes: caps a wake-up loop (a pass whose own writes wake the next one).
MIN_PASS_GAP_SECONDS = 0.025
#: Consecutive passes that may see unexplained new records before they stop forcing a re-pass.
UNSEEN_PASSES_MAX = 20


class GatePassLike(Protocol):
    promoted: int
    suppressed: int
    waiting: int
    next_due: float | None
    watch_paths: list[Path]


class GateFunction(Protocol):
    def __call__(self, state: StateDir, settings: SettingsLike, now: float, /) -> GatePassLike: ...


class DeliveryRole(Role):
    """``donebell worker delivery [--once | --until-idle] [--debug]``."""

    name = "delivery"

    def __init__(self, state: StateDir, settings: SettingsLike, args: argparse.Namespace) -> None:
        super().__init__(state, settings, args)
        self.client: NtfyClient | None = None
        self.gate: GateFunction = run_gate_pass
        self.config = ConfigWatch()
        self.auth: Auth | None = None
        self.config_problem: str | None = None
        self.gate_state = "ok"
        self._gate_watch: list[Path] = []
        self._gate_remote: list[dict[str, Any]] = []  # the gate's remote-root probe workers (docs/gate.md)
        self._last_pass_end = 0.0
        self._timer_at: float | None = None  # monotonic time the last pass asked to be woken at
        self._earliest_due: float | None = None  # wall time the last pass found the next record due
        self._fruitless_cut = False  # the last pass came early for its timer and decided nothing
        self._unseen_streak = 0
        self._health: dict[str, Any] = {}
        self._queues: list[Path] | None = None
        self._rng = random.Random()  # the retries' jitter: one generator, not one seeded per pass

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--until-idle",
            action="store_true",
            help=f"repeat passes until pending/ and outbox/ are empty or all left waits > {IDLE_HORIZON_SECONDS:.0f} s",
        )

    def bounded(self) -> bool:
        return bool(getattr(self.args, "once", False) or getattr(self.args, "until_idle", False))

    def setup(self) -> None:
        self.client = NtfyClient(self.settings.timeout_seconds)
        self.config.baseline()
        self._apply_settings(self.settings)
        if self.config_problem is None:  # the TLS context now, not between a promotion and its POST
            self.client.prepare(self.settings.server, self.auth)

    def teardown(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def watch_paths(self) -> list[Path]:
        if self._queues is None:  # built once: this is asked after every pass
            self._queues = [self.state.folder(PENDING), self.state.folder(OUTBOX)]
        return [*self._queues, *self._gate_watch]

    def health_extra(self) -> dict[str, Any]:
        return dict(self._health)

    # --- settings ------------------------------------------------------------------------

    def _apply_settings(self, settings: SettingsLike) -> None:
        self.settings = settings
        if self.client is not None:
            self.client.set_timeout(settings.timeout_seconds)
        try:
            self.auth = auth_for(settings)
            check_sendable(settings, self.auth)
            problem = None
        except ConfigProblem as exc:
            problem = str(exc)
        if problem != self.config_problem:
            if problem:
                self.state.log("error", "delivery blocked by the configuration; records stay queued", problem=problem)
            elif self.config_problem:
                self.state.log("info", "configuration problem resolved; delivery resumes")
        self.config_problem = problem

    def refresh_settings(self) -> None:
        """Re-read the config file if it changed, so every attempt renders with the current one."""
        fresh, error = self.config.poll()
        if fresh is not None:
            self._apply_settings(fresh)
        if error:
            self.state.log("error", "config file invalid; keeping the last good configuration", error=error)

    # --- one pass ------------------------------------------------------------------------

    def run_pass(self) -> PassResult:
        cut = self._wait_out_gap()
        self._timer_at = None
        try:
            result = self.pass_at(now())
        finally:
            self._last_pass_end = time.monotonic()
        decided = sum(result.counters.get(name, 0) for name in ("promoted", "suppressed", "sent"))
        self._fruitless_cut = cut and decided == 0
        # The moment the next record comes due, even when the pass asks for another at once (new
        # records arrived meanwhile): that re-pass waits out the gap, the due one must not.
        due = self._earliest_due
        self._timer_at = None if due is None else self._last_pass_end + max(0.0, due - now())
        return result

    def _wait_out_gap(self) -> bool:
        """Sleep what is left of the gap since the last pass, but no later than the moment the last
        pass scheduled (a quiet window's end); True when that moment cut the gap short.

        Under a stream of wake-ups (the passes' own writes, other tasks' files) waiting the gap
        out would delay every due notification by up to a gap and a pass. A gate that keeps
        scheduling passes that decide nothing is still capped: after a cut pass that promoted,
        suppressed and sent nothing, the next pass waits the whole gap.
        """
        mono = time.monotonic()
        gap_end = self._last_pass_end + MIN_PASS_GAP_SECONDS
        timer = self._timer_at
        if gap_end <= mono:
            return False
        if timer is None or timer >= gap_end or self._fruitless_cut:
            time.sleep(gap_end - mono)
            return False
        if timer > mono:
            time.sleep(timer - mono)
        return True

    def pass_at(self, at: float) -> PassResult:
        """One gate pass, then every due outbox record; ``at`` is the wall clock of the pass."""
        if self.client is None:
            self.setup()
        self.refresh_settings()
        counters: dict[str, int] = {}
        once = bool(getattr(self.args, "once", False))
        budget = None if once else PASS_BUDGET_SECONDS
        pass_control.begin(budget)  # the gate yields after it (a backlog takes several passes)
        try:
            gate_due, gate_waiting, degraded = self._gate_pass(at, counters)
            summary = self.sender().deliver_due(at, budget_seconds=budget)
        finally:
            pass_control.begin(None)  # no stale deadline for a gate pass run outside this one
        for name, value in summary.counters.items():
            counters[name] = counters.get(name, 0) + value
        after = now()
        # Records blocked by a config problem wait for the user, not for a time: they neither
        # schedule a wake-up (the heartbeat re-reads the config) nor keep a bounded run alive.
        dues = [t for t in (gate_due, summary.next_due) if t is not None]
        earliest = min(dues) if dues else None
        self._earliest_due = earliest
        pending, outbox = self.state.count(PENDING), self.state.count(OUTBOX)  # after the pass: one listing each
        unseen = pending > gate_waiting or outbox > summary.left
        busy = summary.more or self._arrived_during_pass(unseen, pending, gate_waiting)
        next_in = 0.0 if busy else (None if earliest is None else max(0.0, earliest - after))
        idle = not busy and (earliest is None or earliest - after > IDLE_HORIZON_SECONDS)
        degraded = degraded or (f"config: {self.config_problem}" if self.config_problem else None)
        self._health = {
            "pending": pending,
            "outbox": outbox,
            "next_due_at": earliest,
            "config_problem": self.config_problem,
            "gate": self.gate_state,
            **({"gate_remote": self._gate_remote} if self._gate_remote else {}),
            **({"last_sent_at": summary.last_sent_at} if summary.last_sent_at else {}),
            **({"server_backoff": summary.server_backoff} if summary.server_backoff else {}),
        }
        return PassResult(next_in=next_in, idle=idle, counters=counters, degraded=degraded)

    def work_arrived_since(self, wall_time: float) -> bool:
        """Handover check of a bounded run after it released its lock (see ``run_role``)."""
        return self.state.changed_since(PENDING, wall_time) or self.state.changed_since(OUTBOX, wall_time)

    def _arrived_during_pass(self, unseen: bool, pending: int, gate_waiting: int) -> bool:
        """True when records arrived after the gate or the sender listed their folder (``unseen``:
        the folders, listed after the pass, hold more than the pass accounted for).

        Such a record (a hook's candidate, a `donebell test` record) must get another pass at once:
        a bounded worker that exited now would strand it, because the hook saw a running worker.
        A mismatch that persists (a gate that does not account for a record) stops counting after
        ``UNSEEN_PASSES_MAX`` passes, so it cannot keep a worker spinning.
        """
        self._unseen_streak = self._unseen_streak + 1 if unseen else 0
        if self._unseen_streak == UNSEEN_PASSES_MAX + 1:
            self.state.log(
                "warning",
                "records stay in pending/ or outbox/ that no pass accounts for",
                pending=pending,
                gate_waiting=gate_waiting,
            )
        return unseen and self._unseen_streak <= UNSEEN_PASSES_MAX

    def sender(self) -> OutboxSender:
        assert self.client is not None
        return OutboxSender(self.state, self.settings, self.client, self.auth, self.config_problem, self._rng)

    def deliver_one(self, key: str) -> SendOutcome:
        """Attempt one record now, whatever its ``next_attempt_at`` (``donebell test``)."""
        if self.client is None:
            self.setup()
        self.refresh_settings()
        return self.sender().deliver_record(key, now(), force=True)

    def _gate_pass(self, at: float, counters: dict[str, int]) -> tuple[float | None, int, str | None]:
        """Run the gate; a gate failure degrades the role but never stops the outbox."""
        try:
            result = self.gate(self.state, self.settings, at)
        except Exception as exc:  # noqa: BLE001 - the outbox must drain even if the gate breaks
            self.gate_state = f"error: {type(exc).__name__}: {exc}"[:300]
            self.state.log("error", "gate pass failed; delivering the outbox anyway", error=self.gate_state)
            return None, self.state.count(PENDING), self.gate_state
        self.gate_state = "ok"
        self._gate_watch = list(result.watch_paths)
        self._gate_remote = list(getattr(result, "remote", None) or [])
        counters["promoted"] = result.promoted
        counters["suppressed"] = result.suppressed
        stuck = [r["root"] for r in self._gate_remote if r.get("state") in ("unresponsive", "error")]
        return (
            result.next_due,
            result.waiting,
            (f"remote root not answering: {', '.join(stuck)}"[:300] if stuck else None),
        )
