"""OpenAI Codex: hook payloads, rollouts and their cursors, the thread database, gate evidence,
thread titles, the app-server wake adapter. Importing this package loads nothing else."""

from __future__ import annotations

import os

from donebell.shared.paths import user_home

TYPE_CHECKING = False  # the hook path imports this package: annotations only
if TYPE_CHECKING:
    from pathlib import Path


def codex_home_str() -> str:
    """Codex's home: ``$CODEX_HOME``, default ``~/.codex``."""
    return os.environ.get("CODEX_HOME") or os.path.join(user_home(), ".codex")


def codex_sqlite_home_str() -> str:
    """Where Codex keeps its ``*.sqlite`` files: ``$CODEX_SQLITE_HOME``, else Codex's home."""
    return os.environ.get("CODEX_SQLITE_HOME") or codex_home_str()


def codex_home() -> Path:
    """:func:`codex_home_str` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(codex_home_str())


def codex_sqlite_home() -> Path:
    """:func:`codex_sqlite_home_str` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(codex_sqlite_home_str())
