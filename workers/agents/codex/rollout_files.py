"""Where Codex writes new rollouts: one definition for the scan engine and the remote quick check
(which must stay standard-library-only and cheap). A file's identity is
:func:`~donebell.shared.bounded_read.file_sig`, the same for every agent's files.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta


def hot_day_folders(codex_home: str, at: float) -> list[str]:
    """Today's and yesterday's ``sessions/YYYY/MM/DD`` folders (UTC dates first, then local ones:
    Codex names folders by UTC, but a user's "today" may differ)."""
    days: list[str] = []
    for tz in (UTC, None):
        moment = datetime.fromtimestamp(at, tz)
        for delta in (0, 1):
            day = (moment - timedelta(days=delta)).strftime("%Y/%m/%d")
            if day not in days:
                days.append(day)
    return [os.path.join(codex_home, "sessions", *d.split("/")) for d in days]
