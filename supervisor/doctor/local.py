"""Doctor checks that read local files only: config, state directory, the agents' wiring and trust."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from donebell.shared import paths, platform, state_dir_check
from donebell.shared.config import model
from donebell.shared.config.secret_text import public_url as _public_url
from donebell.shared.statedir import FOLDERS
from donebell.workers.kit.install.checks import FAIL, OK, WARN, Check


def _owner_only(path: Path) -> str | None:
    """A problem with the file's owner or mode, or None (always None on Windows)."""
    if platform.on_windows():
        return None
    st = path.stat()
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"owned by uid {st.st_uid}, not you"
    mode = stat.S_IMODE(st.st_mode)
    return f"mode {mode:04o} lets others read it" if mode & 0o077 else None


def check_config() -> tuple[Check, model.Settings | None]:
    path = paths.config_path()
    try:
        loaded = model.load()
    except model.ConfigError as exc:
        return Check("config", FAIL, str(exc), "fix the file, then run `donebell config check`"), None
    settings = loaded.settings
    if not loaded.exists:
        return Check(
            "config", FAIL, f"no config file at {path}", "run `donebell install` (or `donebell config init`)"
        ), None
    if not settings.topic:
        return Check("config", FAIL, f"{path}: no topic set", f'set "topic" in {path}'), settings
    problem = _owner_only(path) if path.exists() else None
    details = {"path": str(path), "server": _public_url(settings.server), "warnings": loaded.warnings}
    if problem:
        return Check("config", WARN, f"{path}: {problem}", f"chmod 600 {path}", details), settings
    if loaded.warnings:
        return Check("config", WARN, "; ".join(loaded.warnings), "run `donebell config check`", details), settings
    return Check("config", OK, f"{path}: valid, owner-only", details=details), settings


def check_state_dir() -> Check:
    root = paths.state_dir_path()
    unusable = state_dir_check.problem(str(root))  # the line every other command prints
    if unusable:
        fix = f"remove {root}, or " if os.path.lexists(root) else ""
        return Check("state_dir", FAIL, unusable, f"{fix}point DONEBELL_STATE_DIR at a folder donebell can create")
    if not root.exists():
        return Check("state_dir", OK, f"{root}: not created yet (the first hook or `donebell run` creates it)")
    unwritable = [
        str(p) for p in (root, *(root / f for f in FOLDERS)) if p.exists() and not os.access(p, os.W_OK | os.X_OK)
    ]
    if unwritable:
        return Check("state_dir", FAIL, f"not writable: {', '.join(unwritable[:3])}", "fix the owner/permissions")
    problem = _owner_only(root)
    if problem:
        return Check("state_dir", WARN, f"{root}: {problem}", f"chmod 700 {root}")
    return Check("state_dir", OK, f"{root}: writable, owner-only")
