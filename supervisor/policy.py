"""When to restart a role that exited: backoff, start-up throttling, flap detection.

The rules, after supervisord, circus and Postfix's master:

* A role that dies **after doing work** (its health file counted a pass) is restarted with an
  exponential delay: ``backoff_base``, twice that, ... capped at ``backoff_cap``. A run that lasted
  ``stable_after`` seconds resets the delay.
* A role that dies **before its first unit of work** (bad config, missing module, an exit code 2
  "bad usage" or 78 "config error") has a structural fault: it is throttled, restarted only
  after ``throttle`` seconds.
* A role **killed by a signal after doing work** (SIGKILL from the OOM killer, a user, a kill
  storm) was making progress: it is not flapping. It is restarted after ``backoff_base``, and the
  kill neither grows the backoff nor counts as a fast failure (five such kills once made a working
  role fatal for ``fatal_retry`` seconds, and a task waited minutes).
* Every other exit of a run shorter than ``stable_after`` (or without work) is a *fast failure*;
  ``flap_count`` of them within ``flap_window`` seconds put the role in **fatal**: it is retried
  only every ``fatal_retry`` seconds, until a retry does work again. Other roles are unaffected.

Every interval can be overridden by ``DONEBELL_SUPERVISOR_<NAME>`` (e.g.
``DONEBELL_SUPERVISOR_FATAL_RETRY=2``), which tests use to run the rules in seconds.
"""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from donebell.shared.backoff import doubling
from donebell.shared.states import RestartState


@dataclass(frozen=True)
class Intervals:
    """The supervisor's timings, in seconds (``flap_count`` is a count)."""

    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    throttle: float = 10.0
    stable_after: float = 60.0
    flap_window: float = 300.0
    flap_count: int = 5
    fatal_retry: float = 300.0
    stop_grace: float = 5.0  # SIGTERM, then this long, then SIGKILL of the role and its children
    hang_after: float = 600.0  # no heartbeat for this long: the role is killed and restarted
    heartbeat: float = 10.0  # how often supervisor.json is rewritten and roles' health checked

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Intervals:
        """Defaults, overridden by ``DONEBELL_SUPERVISOR_<FIELD>``; a bad value is ignored."""
        env: Mapping[str, str] = os.environ if environ is None else environ
        values: dict[str, float | int] = {}
        for field in dataclasses.fields(cls):
            raw = env.get(f"DONEBELL_SUPERVISOR_{field.name.upper()}")
            if raw is None:
                continue
            try:
                value = float(raw)
            except ValueError:
                continue
            if value >= 0:
                values[field.name] = int(value) if field.name == "flap_count" else value
        return cls(**values)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in dataclasses.fields(self)}  # flat: no deep copy


@dataclass(frozen=True)
class Decision:
    """What to do after an exit: wait ``delay`` seconds in ``state``, then start again."""

    delay: float
    state: RestartState
    fatal: bool
    reason: str


class RestartPolicy:
    """One role's restart history; feed it every exit, in monotonic seconds."""

    def __init__(self, intervals: Intervals) -> None:
        self.intervals = intervals
        self.fast_failures: deque[float] = deque()
        self.consecutive = 0  # exits after work since the last stable run: the backoff exponent
        self.fatal = False

    def on_exit(self, at: float, uptime: float, did_work: bool, killed: bool = False) -> Decision:
        """Record an exit the supervisor did not ask for and decide the restart.

        ``killed``: the process ended by a signal (a negative return code), not by its own exit.
        """
        iv = self.intervals
        if did_work and killed and not self.fatal:
            self.consecutive = 0  # killed while making progress: not the role's fault
            return Decision(iv.backoff_base, "backoff", False, "killed by a signal while working")
        if did_work and uptime >= iv.stable_after:
            self.consecutive = 0
            self.fast_failures.clear()
        else:
            self.fast_failures.append(at)
        while self.fast_failures and self.fast_failures[0] < at - iv.flap_window:
            self.fast_failures.popleft()
        if len(self.fast_failures) >= max(1, iv.flap_count):
            self.fatal = True
        if self.fatal:
            return Decision(
                iv.fatal_retry, "fatal", True, f"{len(self.fast_failures)} fast failures in {iv.flap_window:g}s"
            )
        if not did_work:
            return Decision(iv.throttle, "throttled", False, "exited before its first pass")
        delay = min(iv.backoff_cap, doubling(iv.backoff_base, self.consecutive))
        self.consecutive += 1
        return Decision(delay, "backoff", False, "exited after doing work")

    def on_working(self) -> bool:
        """The current run reported a pass: leave fatal (True if it was fatal)."""
        was_fatal = self.fatal
        if was_fatal:
            self.fatal = False
            self.fast_failures.clear()
        return was_fatal
