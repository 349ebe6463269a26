"""What one pass of a role did: the roles return it, and so does an agent's scanner (its ``scan``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PassResult:
    """What one pass did: when to run again, and whether a bounded run may stop now."""

    next_in: float | None = None  # seconds until work becomes due again (None: only on wake-up)
    idle: bool = False  # nothing left that a bounded (--until-idle) run should wait for
    counters: dict[str, int] = field(default_factory=dict)
    degraded: str | None = None  # a reason to show state "degraded" (e.g. index unavailable)
