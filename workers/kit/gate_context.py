"""Per-pass context shared by the provider gates: settings, the clock, and read caches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from donebell.shared.statedir import StateDir

if TYPE_CHECKING:  # the remote probe worker passes a plain namespace with the same fields
    from donebell.shared.config.view import SettingsLike


class Closable(Protocol):
    def close(self) -> None: ...


@dataclass
class GateContext:
    """Everything one evaluation may consult besides the candidate itself.

    ``cache`` lives for one pass (facts such as "this database is unavailable");
    ``persistent`` lives as long as the process (tail offsets of large rollouts); ``pass_resources``
    lives for one pass and is shared with the second-snapshot contexts: what an agent keeps open
    for the pass, by a name of its choosing (Codex's database views, whose answers are only reused
    while SQLite proves them current: ``workers/agents/codex/db_view.py``), each closed with the
    pass. The second fresh snapshot before promotion uses a context with an empty ``cache``. Whoever makes the pass's context
    closes it (:meth:`close`).
    """

    state: StateDir
    settings: SettingsLike
    now: float
    cache: dict[Any, Any] = field(default_factory=dict)
    persistent: dict[Any, Any] = field(default_factory=dict)
    pass_resources: dict[str, Closable] = field(default_factory=dict)

    def fresh(self) -> GateContext:
        """A context for the second snapshot: same clock and settings, nothing cached."""
        return GateContext(self.state, self.settings, self.now, {}, self.persistent, self.pass_resources)

    def close(self) -> None:
        """The end of the pass: no file an agent opened for it stays open."""
        for resource in self.pass_resources.values():
            resource.close()
