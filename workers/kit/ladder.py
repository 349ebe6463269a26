"""The shape both provider gates share: a ladder of named checks, run in order; the first that
decides ends the evaluation, and a candidate that passes them all is promoted.

A provider gate (:mod:`.codex`, :mod:`.claude`) is an :class:`Evaluation` subclass that holds the
evidence its checks gather, plus a tuple of ``(name, check)``. Each check reads the evaluation and
returns a terminal :class:`Verdict` (wait, suppress, remove, or promote early), ``None`` to go on,
or :data:`SKIP_REST` when balanced mode assumed the very evidence the remaining checks would read
(they cannot apply, so the candidate is promoted at once).

:func:`run` records what each step did in the verdict's ``probe_update["ladder"]`` (stored as
``probe.ladder``; a receipt keeps it as ``probe_ladder``), which ``donebell explain`` prints.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from donebell.workers.kit.gate_context import GateContext
from donebell.workers.kit.probe_schedule import attempts_of, first_seen, unknown_delay
from donebell.workers.kit.verdict import Verdict, WaitKind

SKIP_REST: Final = "skip-rest"
#: What one check answers: decided, go on (None), or promote now (``SKIP_REST``).
Outcome = Verdict | Literal["skip-rest"] | None
#: Key of the step trace in ``Verdict.probe_update`` and thus in the record's ``probe``.
LADDER_FIELD = "ladder"
#: The one-step trace of a Codex candidate the hook already classified as a subagent.
CAPTURED_SUBAGENT = "captured-subagent"


class Evaluation(ABC):
    """One evaluation of one candidate: the evidence gathered so far and how a check waits.

    A fresh object per snapshot, so the second snapshot before promotion shares nothing with the
    first but the context's persistent caches.
    """

    #: The shortest wait a check of this provider may schedule.
    min_wait = 0.0

    def __init__(self, record: dict[str, Any], ctx: GateContext) -> None:
        self.record = record
        self.ctx = ctx
        self.settings = ctx.settings
        self.now = ctx.now
        self.deadline = first_seen(record, ctx.now) + self.settings.idle_probe_grace_seconds
        self.assumed: list[str] = []  # balanced: unknown checks taken as passed after the grace
        self.watch: list[Path] = []  # files whose change should re-probe sooner

    def wait(
        self, reason: str, evidence: str, kind: WaitKind, retry_in: float, *, exact: bool = False, **detail: Any
    ) -> Verdict:
        return Verdict.wait(
            reason,
            evidence,
            kind=kind,
            retry_in=max(0.0, retry_in) if exact else max(self.min_wait, retry_in),
            watch=list(self.watch),
            detail={"reason": reason, **detail},
        )

    def busy(self, reason: str, evidence: str, retry_in: float, **detail: Any) -> Verdict:
        """Positive evidence of more work: wait, with no limit but the check's own."""
        return self.wait(reason, evidence, "busy", retry_in, **detail)

    def busy_until(self, reason: str, evidence: str, retry_in: float, **detail: Any) -> Verdict:
        """:meth:`busy` until a known moment (a quiet window's end): no ``min_wait`` floor, which is
        for polls; a deadline's retry is not one, and the floor would only delay the notification."""
        return self.wait(reason, evidence, "busy", retry_in, exact=True, **detail)

    def quiet_window(self, mtime: float, what: str) -> Verdict | None:
        """Busy until ``what`` (the agent's file, modified at ``mtime``) has been unchanged for
        ``idle_grace_seconds``: the quiet-window rung of the agents whose file is the evidence."""
        grace = self.settings.idle_grace_seconds
        quiet_for = seconds_quiet(self.now, mtime, grace)
        if quiet_for < grace:
            return self.busy_until("quiet-window", f"{what} changed {quiet_for:.2f}s ago", grace - quiet_for)
        return None

    def _within_grace(self) -> float:
        """The probe schedule's next wait for unknown or invalid evidence."""
        return unknown_delay(
            attempts_of(self.record), self.settings.unknown_retry_max_seconds, until=self.deadline - self.now
        )

    def unknown(self, reason: str, evidence: str, **detail: Any) -> Verdict | None:
        """Missing evidence: wait within the probe grace; then strict suppresses, balanced goes on."""
        if self.now < self.deadline:
            return self.wait(reason, evidence, "unknown", self._within_grace(), grace_deadline=self.deadline, **detail)
        if self.settings.idle_detection_mode == "strict":
            return Verdict.suppress("unverifiable", f"{reason}: {evidence}; unresolved after the probe grace")
        self.assumed.append(f"{reason}: {evidence}")
        return None

    def invalid(self, reason: str, evidence: str) -> Verdict:
        """Malformed / half-written evidence: waits within the grace, never promoted by time."""
        if self.now < self.deadline:
            return self.wait(reason, evidence, "invalid", self._within_grace(), grace_deadline=self.deadline)
        return Verdict.suppress("unverifiable", f"{reason}: {evidence}; still invalid after the probe grace")

    @abstractmethod
    def promote(self) -> Verdict:
        """The verdict when every check passed (or the rest were skipped)."""


E = TypeVar("E", bound=Evaluation)
Ladder = Sequence[tuple[str, Callable[[E], Outcome]]]


def run(ladder: Ladder[E], evaluation: E) -> Verdict:
    """Run the checks in order; the first terminal outcome decides, else promote."""
    trace: list[list[str]] = []
    for name, check in ladder:
        assumed_before = len(evaluation.assumed)
        outcome = check(evaluation)
        if isinstance(outcome, Verdict):
            trace.append([name, _decision(outcome)])
            return _with_trace(outcome, trace)
        trace.append([name, "assumed" if len(evaluation.assumed) > assumed_before else "passed"])
        if outcome == SKIP_REST:
            break
    return _with_trace(evaluation.promote(), trace)


def decided(name: str, verdict: Verdict) -> Verdict:
    """``verdict`` as the trace of a one-step decision taken before or instead of a provider ladder.

    Every evaluation replaces the stored trace, so ``explain`` never shows an older evaluation's
    steps next to a newer decision (e.g. after ``idle_detection_mode`` was switched to off).
    """
    return _with_trace(verdict, [[name, _decision(verdict)]])


def _decision(verdict: Verdict) -> str:
    return f"{verdict.action} {verdict.reason}"


def _with_trace(verdict: Verdict, trace: list[list[str]]) -> Verdict:
    verdict.probe_update = {**verdict.probe_update, LADDER_FIELD: trace}
    return verdict


def names(ladder: Ladder[E]) -> list[str]:
    """The check names of a ladder, in order (docs/gate.md lists them)."""
    return [name for name, _ in ladder]


def seconds_quiet(now: float, mtime: float, grace: float) -> float:
    """How long an agent's file has been unchanged, for a quiet-window rung. An mtime in the
    future means the clock went back after the write: that write is older than the jump, so the
    file counts as quiet (``grace``) rather than busy for the jump's length."""
    return now - mtime if mtime <= now + 1.0 else grace
