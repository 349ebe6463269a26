"""Planned file edits: a unified diff for ``--dry-run``, a timestamped backup, an atomic write.

install/uninstall first compute every change (old text -> new text) and only then apply them, so a
dry run shows exactly what a real run would write, a file that would not change is not touched
(no write, no backup: a second install is a no-op), and an unparsable file stops the run before
anything is written. Writes go through a temp file in the same folder and ``os.replace``; a
symlinked file (dotfile managers) is edited at its target so the link survives.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from donebell.shared import platform
from donebell.shared.paths import make_private_dirs
from donebell.shared.platform import files

BOM = "\ufeff"
BACKUP_INFIX = ".donebell-backup-"
_SECRET_VALUE = re.compile(r'("(?:token|password)"\s*:\s*)"(?:[^"\\]|\\.)*"')
#: The password of a ``"server": "https://user:password@host"`` value.
_URL_PASSWORD = re.compile(r'("server"\s*:\s*"[a-zA-Z][a-zA-Z0-9+.-]*://[^/@":]*:)[^/@"]*(?=@)')


class EditError(Exception):
    """A file cannot be read, parsed or written; ``str()`` names the file and the reason."""


def read_text(path: Path, encoding: str = "utf-8") -> str | None:
    """The file's text (a UTF-8 BOM kept), or None if it does not exist; strict decoding."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EditError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise EditError(f"{path}: not valid {encoding} (byte {exc.start}); fix the file, nothing was changed") from None


def split_bom(text: str) -> tuple[str, str]:
    """``(bom, body)``: Windows editors put a BOM before JSON, which parsers must not see."""
    return (BOM, text[1:]) if text.startswith(BOM) else ("", text)


def target_of(path: Path) -> Path:
    """The file to edit: a symlink's final target, so the link itself stays in place."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@dataclass
class FileChange:
    """One file's planned change; ``new`` None deletes the file, ``old`` None creates it."""

    path: Path
    old: str | None
    new: str | None
    label: str
    new_file_mode: int = 0o600
    force_mode: int | None = None  # the donebell config is always written 0600
    secret: bool = False  # the donebell config: redact token/password in the diff
    backup: bool = True  # donebell's own install record is not backed up
    created_by_donebell: bool = False  # an agent file install created: uninstall keeps no backup of it
    encoding: str = "utf-8"  # the Task Scheduler XML is UTF-16

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        """The exact unified diff of this change (secrets redacted for the donebell config)."""
        old_lines = (self.old or "").splitlines(keepends=True)
        new_lines = (self.new or "").splitlines(keepends=True)
        before = str(self.path) if self.old is not None else "/dev/null"
        after = str(self.path) if self.new is not None else "/dev/null"
        lines = []
        for line in difflib.unified_diff(old_lines, new_lines, before, after):
            if self.secret:
                line = _URL_PASSWORD.sub(r"\1**********", _SECRET_VALUE.sub(r'\1"**********"', line))
            lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(lines)


def backup_stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def apply(change: FileChange, stamp: str) -> Path | None:
    """Back up the old file, then write (or delete) atomically; returns the backup path."""
    if not change.changed:
        return None
    path = change.path
    current = read_text(path, change.encoding)
    if current != change.old:
        raise EditError(f"{path} changed while donebell was editing it; nothing written, run the command again")
    backup = _backup(path, stamp) if change.old is not None and change.backup else None
    if change.new is None:
        path.unlink()
        return backup
    mode = change.force_mode if change.force_mode is not None else _mode_of(path, change.new_file_mode)
    tmp = path.with_name(f".{path.name}.donebell-tmp-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        make_private_dirs(str(path.parent))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w", encoding=change.encoding, newline="") as f:
            f.write(change.new)
            f.flush()
            os.fsync(f.fileno())
        if not platform.on_windows():
            os.chmod(tmp, mode)  # umask may have narrowed it; keep the original's mode exactly
        files.replace(str(tmp), str(path))
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise EditError(f"{path}: cannot write: {exc.strerror or exc}") from None
    _fsync_dir(path.parent)
    return backup


def _mode_of(path: Path, default: int) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return default


def _backup(path: Path, stamp: str) -> Path:
    """``<file>.donebell-backup-<UTC stamp>``, same bytes and mode, never overwriting one."""
    data = path.read_bytes()
    mode = _mode_of(path, 0o600)
    for attempt in range(1000):
        suffix = "" if attempt == 0 else f".{attempt}"
        backup = path.with_name(f"{path.name}{BACKUP_INFIX}{stamp}{suffix}")
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return backup
    raise EditError(f"{path}: too many backups named {path.name}{BACKUP_INFIX}{stamp}")


def _fsync_dir(path: Path) -> None:
    if not files.folders_fsync():
        return
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
