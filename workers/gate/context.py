"""Per-pass context shared by the provider gates: settings, the clock, and read caches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from donebell.shared.statedir import StateDir
from donebell.workers.agents.codex.db_view import PassDatabases

if TYPE_CHECKING:  # the remote probe worker passes a plain namespace with the same fields
    from donebell.shared.config.view import SettingsLike


@dataclass
class GateContext:
    """Everything one evaluation may consult besides the candidate itself.

    ``cache`` lives for one pass (facts such as "this database is unavailable");
    ``persistent`` lives as long as the process (tail offsets of large rollouts); ``databases``
    lives for one pass and is shared with the second-snapshot contexts, because its answers are
    only reused while SQLite proves them current (``workers/agents/codex/db_view.py``). The second fresh snapshot
    before promotion uses a context with an empty ``cache``. Whoever makes the pass's context
    closes it (:meth:`close`).
    """

    state: StateDir
    settings: SettingsLike
    now: float
    cache: dict[Any, Any] = field(default_factory=dict)
    persistent: dict[Any, Any] = field(default_factory=dict)
    databases: PassDatabases = field(default_factory=PassDatabases)

    def fresh(self) -> GateContext:
        """A context for the second snapshot: same clock and settings, nothing cached."""
        return GateContext(self.state, self.settings, self.now, {}, self.persistent, self.databases)

    def close(self) -> None:
        """The end of the pass: no file of Codex's stays open."""
        self.databases.close()
