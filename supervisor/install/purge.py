"""``donebell uninstall --purge``: delete the state directory and donebell's config files.

The state directory goes through :meth:`StateDir.destroy`, which refuses a directory that does
not look like donebell's (so a mistyped ``DONEBELL_STATE_DIR=$HOME`` cannot erase a home folder)
and never follows a symlink.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from donebell.shared.statedir import StateDir, UnsafeStateDir
from donebell.supervisor.install.edits import BACKUP_INFIX
from donebell.supervisor.install.own_config import record_path


class PurgeRefused(Exception):
    """The state directory holds something donebell did not create; nothing was deleted."""


def purge(state_root: Path, config_file: Path) -> None:
    """Delete the state directory, the config file, its backups (they may hold the token) and the
    install record."""
    try:
        StateDir(state_root).destroy()
    except UnsafeStateDir as exc:
        raise PurgeRefused(str(exc)) from None
    backups = config_file.parent.glob(f"{config_file.name}{BACKUP_INFIX}*") if config_file.parent.is_dir() else []
    for path in (config_file, record_path(config_file), *backups):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    with contextlib.suppress(OSError):
        config_file.parent.rmdir()  # only if empty: other files there are not ours
