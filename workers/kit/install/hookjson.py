"""Add or remove donebell's group in a ``{"hooks": {"<Event>": [group, …]}}`` JSON document.

Codex ``hooks.json`` and Claude ``settings.json`` share this shape. Rules that keep the user's
hooks (and Codex's trust decisions, which are keyed by group and handler index) intact:

* donebell's group is appended AFTER every existing group, so no other group changes index;
* an existing managed group is updated in place (same index), a duplicate is removed;
* removal deletes only managed handlers, then a group this removal left empty, then an event
  list or ``hooks`` object left empty that install created (the install record names them; with
  no record, an emptied one is assumed to be install's).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from donebell.workers.kit.install.jsonedit import JsonDocument
from donebell.workers.kit.install.managed import is_managed_handler


class HookShapeError(ValueError):
    """The document has a ``hooks`` key of an unexpected type; nothing is changed."""


def _check_shape(doc: JsonDocument, event: str) -> None:
    if doc.root.kind != "object":
        raise HookShapeError("the top level is not a JSON object")
    hooks = doc.find(("hooks",))
    if hooks is not None and hooks.kind != "object":
        raise HookShapeError('"hooks" is not an object')
    groups = doc.find(("hooks", event))
    if groups is not None and groups.kind != "array":
        raise HookShapeError(f'"hooks.{event}" is not a list')


def managed_positions(doc: JsonDocument, event: str, args: tuple[str, ...]) -> list[tuple[int, int]]:
    """``(group index, handler index)`` of every managed handler under ``hooks.<event>``."""
    groups = doc.value(("hooks", event))
    found: list[tuple[int, int]] = []
    if not isinstance(groups, list):
        return found
    for g, group in enumerate(groups):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(handlers, list):
            found.extend((g, h) for h, handler in enumerate(handlers) if is_managed_handler(handler, args))
    return found


def _remove_handler(doc: JsonDocument, event: str, g: int, h: int) -> None:
    group = doc.value(("hooks", event, g))
    if len(group["hooks"]) == 1:
        doc.remove(("hooks", event, g))
    else:
        doc.remove(("hooks", event, g, "hooks", h))


ContainerPath = tuple[str, ...]


def ensure_group(doc: JsonDocument, event: str, group: dict[str, Any], args: tuple[str, ...]) -> list[ContainerPath]:
    """Make ``group`` the one managed group of ``event``; returns the containers it created."""
    _check_shape(doc, event)
    if doc.find(("hooks",)) is None:
        doc.add_member((), "hooks", {event: [group]})
        return [("hooks",), ("hooks", event)]
    if doc.find(("hooks", event)) is None:
        doc.add_member(("hooks",), event, [group])
        return [("hooks", event)]
    positions = managed_positions(doc, event, args)
    if not positions:
        doc.append_item(("hooks", event), group)
        return []
    g0, h0 = positions[0]
    first = doc.value(("hooks", event, g0))
    alone = len(first["hooks"]) == 1
    if alone and len(positions) == 1 and first == group:
        return []
    for g, h in reversed(positions[1:]):
        _remove_handler(doc, event, g, h)
    if alone:
        doc.replace(("hooks", event, g0), group)
    else:
        _remove_handler(doc, event, g0, h0)
        doc.append_item(("hooks", event), group)
    return []


def remove_managed(
    doc: JsonDocument, event: str, args: tuple[str, ...], created: Collection[ContainerPath] | None
) -> int:
    """Remove every managed handler of ``event``; returns how many were removed.

    ``created``: the containers install created (from the install record), or None if unknown.
    """
    _check_shape(doc, event)
    positions = managed_positions(doc, event, args)
    for g, h in reversed(positions):
        _remove_handler(doc, event, g, h)
    if positions and doc.value(("hooks", event)) == [] and _installed(("hooks", event), created):
        doc.remove(("hooks", event))
        if doc.value(("hooks",)) == {} and _installed(("hooks",), created):
            doc.remove(("hooks",))
    return len(positions)


def _installed(path: ContainerPath, created: Collection[ContainerPath] | None) -> bool:
    return created is None or path in created
