"""The Claude transcript gate. Being built; see docs/gate.md."""

from __future__ import annotations

from typing import Any

from donebell.workers.gate.context import GateContext
from donebell.workers.gate.verdict import Verdict


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    return Verdict.wait("gate-not-built", "Claude gate not built yet", kind="unknown")
