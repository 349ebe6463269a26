"""Per-pass context shared by the provider gates: settings, the clock, and read caches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from donebell.shared.statedir import StateDir

if TYPE_CHECKING:  # the remote probe worker passes a plain namespace with the same fields
    from donebell.shared.settings_view import SettingsLike


@dataclass
class GateContext:
    """Everything one evaluation may consult besides the candidate itself.

    ``cache`` lives for one pass (one snapshot of slow-changing facts such as SQLite rows);
    ``persistent`` lives as long as the process (tail offsets of large rollouts). The second
    fresh snapshot before promotion uses a context with an empty ``cache``.
    """

    state: StateDir
    settings: SettingsLike
    now: float
    cache: dict[Any, Any] = field(default_factory=dict)
    persistent: dict[Any, Any] = field(default_factory=dict)

    def fresh(self) -> GateContext:
        """A context for the second snapshot: same clock and settings, nothing cached."""
        return GateContext(self.state, self.settings, self.now, {}, self.persistent)
