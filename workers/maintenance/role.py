"""The maintenance role: receipt retention, ``tmp/`` sweep, stale lock shards, log rotation.

It runs in its own process at low priority, so it can never delay a notification, and it starts
its first cleanup only when both hold (the start-up gate):

* at least ``DONEBELL_MAINTENANCE_DELAY_SECONDS`` (default 60) after the supervisor started
  (``health/supervisor.json`` ``started_at``; without a live supervisor, after this process
  started), and
* delivery and the scanners have settled: each reported a pass, is failing (throttled/fatal), or
  is disabled, as recorded by the supervisor (:func:`donebell.shared.health.settled`).

``--once`` (an operator's explicit run) skips the gate. After the first cleanup it repeats every
``DONEBELL_MAINTENANCE_INTERVAL_SECONDS`` (default 3600). One cleanup:

* ``sent/`` and ``suppressed/`` receipts older than ``sent_retention_days``, ``dead/`` letters (with
  their ``.raw`` originals) older than ``dead_retention_days``; a retention of 0 keeps receipts
  for ever. A receipt whose key is still pending or in the outbox is kept;
* ``tmp/`` debris older than :data:`TMP_MAX_AGE_SECONDS` (maildir's rule, by age, never by lock);
* ``mutation-locks/`` files outside the current 64-shard set;
* rollout cursors whose local rollout is gone, or that were not updated for 30 days (remote
  roots: ``max(30, sent_retention_days)`` days, never by looking at the remote path), see
  :mod:`donebell.workers.maintenance.cursor_retention`;
* Claude session records (``claude/``) not updated for 30 days whose session has nothing left in
  ``pending/`` or ``outbox/``, see ``workers/agents/claude/retention.py`` (each agent's ``Upkeep.expire``);
* ``notify.log`` rotated to ``notify.log.1`` (one generation) once it passes 1 MiB.

Every deletion goes through :class:`donebell.shared.statedir.StateDir`.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from donebell.shared.config.view import ConfigError, SettingsLike, load
from donebell.shared.health import alive, settled
from donebell.shared.statedir import DEAD, LOG_MAX_BYTES, SENT, SUPPRESSED, WAKE, WAKE_ANSWERS, now
from donebell.workers.agents.registry import agent, names
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.maintenance.cursor_retention import CursorRetention
from donebell.workers.role import Role

DAY = 86400.0
TMP_MAX_AGE_SECONDS = 6 * 3600.0
#: The roles whose start maintenance must not compete with.
GATING_ROLES = ("delivery", "local-scanner", "remote-scanner")


def _env_seconds(name: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


class MaintenanceRole(Role):
    """Deletes what has expired; everything else in the state directory is left alone."""

    name: ClassVar[str] = "maintenance"
    heartbeat_seconds: ClassVar[float] = 30.0  # idle most of the time: wake rarely

    def setup(self) -> None:
        self.delay = _env_seconds("DONEBELL_MAINTENANCE_DELAY_SECONDS", 60.0)
        self.interval = _env_seconds("DONEBELL_MAINTENANCE_INTERVAL_SECONDS", 3600.0)
        self.process_started = now()
        self.gate = "waiting"
        self.next_cleanup: float | None = None
        self.last_cleanup: dict[str, Any] | None = None
        if hasattr(os, "nice"):
            try:
                os.nice(10)  # yield the CPU (and, on Linux, I/O) to delivery and the scanners
            except OSError:
                pass

    def run_pass(self) -> PassResult:
        at = now()
        if self.next_cleanup is None:
            wait = 0.0 if self.bounded() else self._gate_wait(at)
            if wait > 0:
                return PassResult(next_in=min(wait, self.heartbeat_seconds), counters={})
            self.gate = "open"
            self.next_cleanup = at
        if at < self.next_cleanup:
            return PassResult(next_in=self.next_cleanup - at)
        counters = self.cleanup(at)
        self.next_cleanup = at + self.interval
        self.last_cleanup = {"at": at, **counters}
        self.log.info("cleanup done: %s", counters)
        return PassResult(next_in=self.interval, counters=counters, idle=True)

    def _gate_wait(self, at: float) -> float:
        """Seconds until the gate may open (a positive guess while roles are still starting)."""
        sup = self.state.read_health("supervisor")
        if sup and alive(sup):
            started = sup.get("started_at")
            t0 = float(started) if isinstance(started, (int, float)) else self.process_started
            entries = sup.get("roles") if isinstance(sup.get("roles"), dict) else {}
            waiting = [
                r
                for r in GATING_ROLES
                if not settled(entries.get(r), self.state.read_health(r))  # type: ignore[union-attr]
            ]
        else:
            t0, waiting = self.process_started, []
        remaining = t0 + self.delay - at
        if remaining > 0:
            self.gate = f"waiting {remaining:.0f}s (start-up delay)"
            return remaining
        if waiting:
            self.gate = f"waiting for {', '.join(waiting)}"
            return 1.0  # only during start-up: the roles settle within seconds
        return 0.0

    def cleanup(self, at: float) -> dict[str, int]:
        """One round of deletions; returns how many files each kind removed."""
        s = self._current_settings()
        counters = {"expired_sent": 0, "expired_suppressed": 0, "expired_dead": 0}
        if s.sent_retention_days > 0:
            counters["expired_sent"] = self.state.expire(SENT, at - s.sent_retention_days * DAY)
            counters["expired_suppressed"] = self.state.expire(SUPPRESSED, at - s.sent_retention_days * DAY)
        if s.dead_retention_days > 0:
            counters["expired_dead"] = self.state.expire(DEAD, at - s.dead_retention_days * DAY)
        counters["tmp_swept"] = self.state.sweep_tmp(at - TMP_MAX_AGE_SECONDS)
        counters["lock_shards_swept"] = self.state.sweep_mutation_locks()
        if os.path.isdir(self.state.path(WAKE)):  # reply to continue: only once the wake role ran
            keep = max(s.sent_retention_days * DAY, s.wake_ticket_ttl_seconds) + DAY
            counters["expired_wakes"] = self.state.wake_queue().expire(at - keep)
        if os.path.isdir(self.state.path(WAKE_ANSWERS)):  # answers outlive their request's wait
            counters["expired_answers"] = self.state.answer_box().expire(at - s.sent_retention_days * DAY - DAY)
        counters.update(CursorRetention(self.state, at, s.sent_retention_days).run())
        for name in names():  # what only an agent writes (Claude's session records)
            found = agent(name)
            if found is not None:
                counters.update(found.expire(self.state, at))
        rotated = self.state.log_size() > LOG_MAX_BYTES
        if rotated:
            self.state.rotate_log()
        counters["log_rotated"] = int(rotated)
        return counters

    def _current_settings(self) -> SettingsLike:
        """The configuration as it is now (retention edits apply without a restart)."""
        try:
            self.settings = load().settings
        except ConfigError as exc:
            self.log.warning("config error; keeping the last good retention settings: %s", exc)
        return self.settings

    def health_extra(self) -> dict[str, Any]:
        return {"gate": self.gate, "next_cleanup_at": self.next_cleanup, "last_cleanup": self.last_cleanup}
