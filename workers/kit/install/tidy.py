"""What ``donebell uninstall`` tidies beyond the entries install added.

* Codex's trust entry for the removed Stop hook: when the user trusts a hook in ``/hooks``, Codex
  0.171 appends ``[hooks.state]`` and ``[hooks.state."<hooks.json>:stop:<group>:<handler>"]`` with
  ``trusted_hash`` to ``config.toml``. Once the hook is gone that entry names nothing; uninstall
  removes it (and the ``[hooks.state]`` / ``[hooks]`` tables it leaves empty), so a file that had
  no trust entries before install is byte-identical afterwards.
* Backups: every install or uninstall that edits a file leaves ``<file>.donebell-backup-<UTC>``.
  Uninstall keeps one per file, the oldest (the file as it was before donebell first touched it),
  deletes the newer ones and names the one it kept. A file donebell created has no such state:
  it is never backed up, and uninstall deletes every backup of it (each holds donebell's entries).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from pathlib import Path

import tomlkit
from donebell.workers.kit.install.edits import BACKUP_INFIX

_STAMP = re.compile(r"^(\d{8}T\d{6}Z)(?:\.(\d+))?$")


def drop_trust_entries(doc: tomlkit.TOMLDocument, keys: Iterable[str]) -> int:
    """Remove ``[hooks.state."<key>"]`` for each key; returns how many were removed."""
    hooks = doc.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    if not isinstance(state, dict):
        return 0
    removed = 0
    for key in keys:
        if key in state:
            del state[key]
            removed += 1
    if removed and len(state) == 0:
        del hooks["state"]  # type: ignore[union-attr]
        if len(hooks) == 0:  # type: ignore[arg-type]
            del doc["hooks"]
    return removed


def dumps_like(doc: tomlkit.TOMLDocument, before: str) -> str:
    """``doc`` as text, without the blank line a removed last table leaves behind."""
    text = tomlkit.dumps(doc)
    if text.endswith("\n\n") and not before.endswith("\n\n"):
        text = text.rstrip("\n") + "\n"
    return text


def _backup_order(path: Path, name: str) -> tuple[str, int] | None:
    prefix = name + BACKUP_INFIX
    if not path.name.startswith(prefix):
        return None
    match = _STAMP.match(path.name[len(prefix) :])
    return (match.group(1), int(match.group(2) or 0)) if match else None


def prune_backups(target: Path, *, keep: bool = True) -> tuple[Path | None, list[Path]]:
    """Keep the oldest ``<target>.donebell-backup-*`` (none without ``keep``: a file donebell
    created has no state before donebell to keep); returns (kept, removed)."""
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return None, []
    found = sorted((order, p) for p in siblings if (order := _backup_order(p, target.name)) is not None and p.is_file())
    if not found:
        return None, []
    removed = []
    for _, path in found[1:] if keep else found:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return (found[0][1] if keep else None), removed
