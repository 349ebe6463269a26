"""Notice a changed config file between delivery passes and reload it.

The payload is rendered from the *current* configuration before every attempt, so a long-running
delivery worker re-reads the file when its (mtime, size, inode) changes. An invalid new file is
reported and the last good configuration stays in force (a typo must not stop delivery).
"""

from __future__ import annotations

import os
from pathlib import Path

from donebell.shared.config.view import ConfigError, SettingsLike, load
from donebell.shared.paths import config_path

Signature = tuple[int, int, int] | None


class ConfigWatch:
    """Reloads the settings (the roles' view) from the config file when the file changes."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_path()
        self._signature: Signature = None

    def baseline(self) -> None:
        """Take the file as it is now as the one the current settings came from."""
        self._signature = _signature(self.path)

    def poll(self) -> tuple[SettingsLike | None, str | None]:
        """``(settings, None)`` after a change, ``(None, error)`` for an invalid change, else both None."""
        signature = _signature(self.path)
        if signature == self._signature:
            return None, None
        self._signature = signature
        try:
            return load(self.path).settings, None
        except ConfigError as exc:
            return None, str(exc)


def _signature(path: Path) -> Signature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
