"""Where donebell keeps its configuration and its state directory, per platform.

Standard library only: the hook path imports this module.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "donebell"


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def config_path() -> Path:
    """The config file: ``$DONEBELL_CONFIG``, else the platform's user config dir."""
    explicit = os.environ.get("DONEBELL_CONFIG")
    if explicit:
        return Path(explicit)
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(_home() / "AppData" / "Roaming")
        return Path(base) / APP / "config.json"
    if sys.platform == "darwin":
        return _home() / "Library" / "Application Support" / APP / "config.json"
    base = os.environ.get("XDG_CONFIG_HOME") or str(_home() / ".config")
    return Path(base) / APP / "config.json"


def state_dir_path() -> Path:
    """The state directory root: ``$DONEBELL_STATE_DIR``, else the platform's user state dir."""
    explicit = os.environ.get("DONEBELL_STATE_DIR")
    if explicit:
        return Path(explicit)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(_home() / "AppData" / "Local")
        return Path(base) / APP / "state"
    if sys.platform == "darwin":
        return _home() / "Library" / "Application Support" / APP / "state"
    base = os.environ.get("XDG_STATE_HOME") or str(_home() / ".local" / "state")
    return Path(base) / APP


def codex_home() -> Path:
    """Codex's home: ``$CODEX_HOME``, default ``~/.codex``."""
    return Path(os.environ.get("CODEX_HOME") or str(_home() / ".codex"))


def codex_sqlite_home() -> Path:
    """Where Codex keeps its ``*.sqlite`` files: ``$CODEX_SQLITE_HOME``, else Codex's home."""
    explicit = os.environ.get("CODEX_SQLITE_HOME")
    return Path(explicit) if explicit else codex_home()


def claude_config_dir() -> Path:
    """Claude Code's config dir: ``$CLAUDE_CONFIG_DIR``, default ``~/.claude``."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or str(_home() / ".claude"))
