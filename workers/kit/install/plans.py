"""The plan one agent's install/uninstall produces, and helpers both agents use to build it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from donebell.workers.kit.install.edits import EditError, FileChange, read_text, split_bom
from donebell.workers.kit.install.jsonedit import JsonDocument, JsonEditError

#: ``plan_config(chain=KEEP)``, ``AgentPlan.chain``: leave chain_notify as it is.
KEEP = object()


@dataclass
class AgentPlan:
    """What install/uninstall will do for one agent, before anything is written."""

    agent: str
    changes: list[FileChange] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    chain: Any = KEEP  # the new chain_notify (list), None to remove it, or KEEP (most agents)
    record: dict[str, Any] = field(default_factory=dict)  # the install record after this plan
    after: Callable[[], list[str]] | None = None  # lines to print once the plan is applied
    empty_folders_after: list[str] = field(default_factory=list)  # uninstall: removed once empty


def load_json(path: Path) -> tuple[str | None, str, JsonDocument | None]:
    """``(old text, bom, document)``; the document is None when the file does not exist."""
    old = read_text(path)
    if old is None:
        return None, "", None
    bom, body = split_bom(old)
    try:
        return old, bom, JsonDocument(body)
    except JsonEditError as exc:
        raise EditError(f"{path}: not valid JSON ({exc}); fix it, nothing was changed") from None


def created_files(record: dict[str, Any]) -> list[str]:
    """The record's list of agent files install created (uninstall deletes them when empty)."""
    created = record.get("created_files")
    if not isinstance(created, list):
        created = record["created_files"] = []
    return created


def created_containers(record: dict[str, Any], path: Path) -> list[tuple[str, ...]] | None:
    """The JSON containers install created in ``path``, or None when the record does not know."""
    table = record.get("created_keys")
    entry = table.get(str(path)) if isinstance(table, dict) else None
    if not isinstance(entry, list):
        return None
    return [tuple(p) for p in entry if isinstance(p, list) and all(isinstance(k, str) for k in p)]


def remember_containers(record: dict[str, Any], path: Path, created: list[tuple[str, ...]]) -> None:
    """Add ``created`` to the record's containers of ``path`` (kept across repeated installs)."""
    table = record.get("created_keys")
    if not isinstance(table, dict):
        table = record["created_keys"] = {}
    known = [list(p) for p in (created_containers(record, path) or [])]
    for item in created:
        if list(item) not in known:
            known.append(list(item))
    if known:
        table[str(path)] = known


def forget_containers(record: dict[str, Any], path: Path) -> None:
    table = record.get("created_keys")
    if isinstance(table, dict):
        table.pop(str(path), None)
