"""Where Codex writes new rollouts and how a rollout file's identity is taken: one definition for
the scan engine and the remote quick check (which must stay standard-library-only and cheap).
"""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta


def file_sig(path: str) -> list[int] | None:
    """``[dev, ino, size, mtime_ns]`` of a regular file; None if absent or not a regular file.

    Any other OSError propagates (the caller decides whether that is an unreadable root).
    """
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


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
