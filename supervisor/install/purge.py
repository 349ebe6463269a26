"""``donebell uninstall --purge``: delete the state directory and donebell's config files.

The state directory goes through :meth:`StateDir.destroy`, which refuses a directory that does
not look like donebell's (so a mistyped ``DONEBELL_STATE_DIR=$HOME`` cannot erase a home folder)
and never follows a symlink. The folders above them that install found missing (``~/.config``,
``~/.local/state`` on a fresh account; the install record's ``created_folders``) are removed too,
each only if it is empty: a folder another program put something in since stays.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from donebell.shared.paths import CREATED_FOLDERS_NAME
from donebell.shared.statedir import StateDir, UnsafeStateDir
from donebell.supervisor.install.own_config import record_path
from donebell.workers.kit.install.edits import BACKUP_INFIX


class PurgeRefused(Exception):
    """The state directory holds something donebell did not create; nothing was deleted."""


def deepest_first(folder: str) -> tuple[int, str]:
    """A sort key: a folder before its parents (``rmdir`` needs that order)."""
    return (-len(Path(folder).parts), folder)


def missing_folders(*targets: Path) -> list[str]:
    """The folders above each target that do not exist yet, below the home folder, deepest first:
    the ones creating ``targets`` would create (what install records as ``created_folders``)."""
    home = Path.home()
    found: list[str] = []
    for target in targets:
        for folder in target.parents:
            if folder == home or folder.exists() or home not in folder.parents:
                break
            found.append(str(folder))
    return sorted(set(found), key=deepest_first)


def remove_empty(folders: list[str]) -> list[str]:
    """``rmdir`` each folder, deepest first, if it is empty; returns the ones removed."""
    removed = []
    for folder in sorted(set(folders), key=deepest_first):
        try:
            os.rmdir(folder)
        except OSError:
            continue  # not empty, gone already, or not ours to judge
        removed.append(folder)
    return removed


def config_backups(config_file: Path) -> list[Path]:
    """The config file's backups: purge deletes them with it (they may hold the token)."""
    if not config_file.parent.is_dir():
        return []
    return sorted(config_file.parent.glob(f"{config_file.name}{BACKUP_INFIX}*"))


def purge(state_root: Path, config_file: Path) -> list[str]:
    """Delete the state directory, the config file, its backups (they may hold the token) and the
    install record; returns the folders above them that donebell created (the state directory's
    and the first config's records), for :func:`remove_empty`."""
    state = StateDir(state_root)
    created = [*state.created_folders(), *_config_created_folders(config_file)]
    try:
        state.destroy()
    except UnsafeStateDir as exc:
        raise PurgeRefused(str(exc)) from None
    sidecar = config_file.parent / CREATED_FOLDERS_NAME
    for path in (config_file, record_path(config_file), sidecar, *config_backups(config_file)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    with contextlib.suppress(OSError):
        config_file.parent.rmdir()  # only if empty: other files there are not ours
    home = Path.home()
    return [f for f in created if home in Path(f).parents]  # never above the home folder


def _config_created_folders(config_file: Path) -> list[str]:
    try:
        folders = json.loads((config_file.parent / CREATED_FOLDERS_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [f for f in folders if isinstance(f, str)] if isinstance(folders, list) else []
