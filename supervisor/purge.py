"""``donebell uninstall --purge``: delete the state directory and donebell's config files.

The one place that deletes the state directory wholesale instead of going through
``StateDir`` record operations (there is nothing left to keep consistent). It refuses a directory
that does not look like a donebell state directory, so a mistyped ``DONEBELL_STATE_DIR=$HOME``
cannot erase a home folder, and never follows a symlink.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from donebell.shared.statedir import FOLDERS, LOG_NAME
from donebell.supervisor.edits import BACKUP_INFIX
from donebell.supervisor.own_config import record_path


class PurgeRefused(Exception):
    """The state directory holds something donebell did not create; nothing was deleted."""


def _check_state_dir(root: Path) -> bool:
    """True if ``root`` exists and may be deleted; raises :class:`PurgeRefused` otherwise."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PurgeRefused(f"{root} is not a plain directory (symlink or file); delete it by hand if you mean it")
    allowed = set(FOLDERS) | {LOG_NAME, f"{LOG_NAME}.1"}
    strangers = sorted(name for name in os.listdir(root) if name not in allowed)
    if strangers:
        shown = ", ".join(strangers[:5]) + (" …" if len(strangers) > 5 else "")
        raise PurgeRefused(f"{root} does not look like donebell's state directory (contains {shown}); not deleted")
    return True


def purge(state_root: Path, config_file: Path) -> None:
    """Delete the state directory, the config file, its backups (they may hold the token) and the
    install record."""
    if _check_state_dir(state_root):
        shutil.rmtree(state_root)
    backups = config_file.parent.glob(f"{config_file.name}{BACKUP_INFIX}*") if config_file.parent.is_dir() else []
    for path in (config_file, record_path(config_file), *backups):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    with contextlib.suppress(OSError):
        config_file.parent.rmdir()  # only if empty: other files there are not ours
