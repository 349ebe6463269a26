"""Claude Code: hook payloads, transcripts and their cursors, session epochs, gate evidence,
titles, session-record retention. Importing this package loads nothing else."""

from __future__ import annotations

import os

from donebell.shared.paths import user_home

TYPE_CHECKING = False  # the hook path imports this package: annotations only
if TYPE_CHECKING:
    from pathlib import Path


def claude_config_dir_str() -> str:
    """Claude Code's config dir: ``$CLAUDE_CONFIG_DIR``, default ``~/.claude``."""
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(user_home(), ".claude")


def claude_config_dir() -> Path:
    """:func:`claude_config_dir_str` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(claude_config_dir_str())
