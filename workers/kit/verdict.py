"""What one gate evaluation decided about one pending candidate.

A :class:`Verdict` is pure data: the provider gates (``codex``, ``claude``) produce it from evidence,
and :mod:`donebell.workers.gate.commit` applies it to the state directory under the key's
mutation lock. Keeping the two apart is what lets the commit re-run the evaluation on a second fresh
snapshot before promoting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptReason

Action = Literal["promote", "suppress", "wait", "remove"]

#: Why a candidate waits: ``busy`` is positive evidence of more work (held without a time limit
#: except the orphan timeout), ``unknown`` is missing evidence (retried within
#: ``idle_probe_grace_seconds``, then strict suppresses and balanced may promote), ``invalid`` is
#: malformed / half-written evidence (never promoted by time in strict or balanced).
WaitKind = Literal["busy", "unknown", "invalid"]


@dataclass
class Verdict:
    """One decision with the evidence that made it (stored in ``probe.history``)."""

    action: Action
    reason: str  # receipt reason (suppress), wait reason word (wait), "idle"/"off"/... (promote)
    evidence: str = ""
    wait_kind: WaitKind = "busy"
    retry_in: float | None = None  # wait: re-probe after this many seconds (None: exponential)
    fields: dict[str, Any] = field(default_factory=dict)  # promote: merged into the outbox record
    fingerprint: tuple[Any, ...] = ()  # promote: evidence identity the second snapshot must match
    watch: list[Path] = field(default_factory=list)  # files whose change should re-probe sooner
    detail: dict[str, Any] | None = None  # wait: what it waits for (explain renders it)
    probe_update: dict[str, Any] = field(default_factory=dict)  # merged into the record's probe

    @classmethod
    def promote(cls, reason: str, evidence: str = "", **kw: Any) -> Verdict:
        return cls("promote", reason, evidence, **kw)

    @classmethod
    def suppress(cls, reason: ReceiptReason, evidence: str = "", **kw: Any) -> Verdict:
        return cls("suppress", reason, evidence, **kw)

    @classmethod
    def wait(cls, reason: str, evidence: str = "", kind: WaitKind = "busy", **kw: Any) -> Verdict:
        return cls("wait", reason, evidence, wait_kind=kind, **kw)

    @classmethod
    def remove(cls, reason: str, evidence: str = "", **kw: Any) -> Verdict:
        return cls("remove", reason, evidence, **kw)
