"""What the wake role reads of a thread: its turns as the agent's own record shows them.

Each agent reads its own record (``workers/agents/<name>/wake.py``) into a :class:`ThreadView`;
the wake role decides with it whether a ticket's turn is still the newest ended one and whether
the thread is busy. :class:`DaemonError` is how an agent's running daemon (Codex's app-server)
refuses or cannot be asked to start a turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

#: Thread and session ids are UUIDs; anything else never reaches a glob or an argv.
SAFE_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{0,79}$")


@dataclass(frozen=True)
class ThreadView:
    """The turns of one thread as its own record shows them."""

    path: str
    turns: int  # how many turns have started
    latest_turn: str | None  # the newest turn's id
    latest_done: str | None  # the newest turn that has ended
    active: bool  # the newest turn has not ended
    cwd: str | None
    #: Arguments the user's own run had that resuming it needs too (Codex: ``--skip-git-repo-check``
    #: for a thread ``codex exec`` started outside a git repository), before ``wake_<agent>_args``.
    resume_args: tuple[str, ...] = ()


class DaemonError(Exception):
    """The agent's daemon could not be asked, or refused (``accepted``: a turn may be running)."""

    def __init__(self, message: str, *, accepted: bool = False, unreachable: bool = False) -> None:
        super().__init__(message)
        self.accepted = accepted
        self.unreachable = unreachable  # a stale socket: nothing was asked, the CLI's resume may go


def json_lines(path: str) -> list[dict[str, object]]:
    """The JSON objects of a JSONL file; a half-written last line or junk is not evidence."""
    out = []
    with open(path, "rb") as f:
        for raw in f:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out
