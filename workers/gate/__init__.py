"""The logical-idle gate: decides when a pending candidate may become a notification.

The delivery role calls :func:`run_gate_pass` before each delivery pass. See ``docs/gate.md`` for
the decision order and the receipt reason vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donebell.shared.statedir import StateDir

if TYPE_CHECKING:  # the remote probe worker imports the gate without pydantic (docs/gate.md)
    from donebell.shared.config.view import SettingsLike


@dataclass
class GatePass:
    """What one gate pass did, and when/what should wake the next one."""

    promoted: int = 0
    suppressed: int = 0
    waiting: int = 0
    next_due: float | None = None  # earliest epoch time a waiting candidate should be re-probed
    watch_paths: list[Path] = field(default_factory=list)  # rollouts/transcripts whose change should wake delivery
    removed: int = 0  # recovered duplicates and cleared Claude goals (no receipt)
    invalid: int = 0  # corrupt pending files moved to dead/
    remote: list[dict[str, Any]] = field(default_factory=list)  # per watch root: probe worker health


#: Process-lifetime caches (tail offsets of large rollouts), keyed by state root.
_PERSISTENT: dict[str, dict[Any, Any]] = {}


def run_gate_pass(state: StateDir, settings: SettingsLike, now: float) -> GatePass:
    """Evaluate every due ``pending/`` candidate once; promote, suppress, remove or keep waiting."""
    from donebell.workers.gate.gate_pass import run_pass

    persistent = _PERSISTENT.setdefault(str(state.root), {})
    return run_pass(state, settings, now, persistent)


__all__ = ["GatePass", "run_gate_pass"]
