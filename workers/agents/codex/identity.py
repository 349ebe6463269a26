"""Codex thread identity from local evidence: a rollout's ``session_meta`` and ``threads.source``.

Root vs descendant is decided from what Codex itself wrote (docs/agent-facts.md, "Codex: which thread is a root"):

* ``session_meta.payload``: a child has ``thread_source: "subagent"``, ``parent_thread_id`` and
  ``source: {"subagent": {...}}``; a root has ``thread_source: "user"`` and a string ``source``
  (``"exec"``, ``"vscode"``, ...), and ``session_id == id``.
* ``state_5.threads.source``: ``"exec"``/``"vscode"``/... for roots, a JSON string
  ``{"subagent": ...}`` for children.

Standard library only (the hook path classifies a Stop with it).
"""

from __future__ import annotations

import os

from donebell.shared import bounded_read
from donebell.shared import lean_json as json

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any, Literal

    Classification = Literal["root", "subagent", "unknown"]

#: session_meta carries Codex's base instructions (~22 KB seen); cap the first-line read.
FIRST_LINE_CAP = 1 << 20


class ThreadIdentity:
    """What local evidence says about one Codex thread (a value: compare, never mutate).

    A plain class with ``__slots__``: a dataclass pulls in ``inspect``/``ast`` (~6 ms) and a
    ``typing.NamedTuple`` needs ``typing`` and builds its class at import (~3 ms in all), both
    paid by every hook. Same constructor (positional or keyword) and attributes as before.
    """

    __slots__ = ("classification", "thread_id", "parent_thread_id", "root_session_id", "cwd", "evidence")

    def __init__(
        self,
        classification: Classification,
        thread_id: str | None = None,
        parent_thread_id: str | None = None,
        root_session_id: str | None = None,  # session_meta.session_id: the ROOT thread id
        cwd: str | None = None,
        evidence: str = "",  # short human-readable why, for probe history / explain
    ) -> None:
        self.classification: Classification = classification
        self.thread_id = thread_id
        self.parent_thread_id = parent_thread_id
        self.root_session_id = root_session_id
        self.cwd = cwd
        self.evidence = evidence

    def _values(self) -> tuple[str, str | None, str | None, str | None, str | None, str]:
        return (
            self.classification,
            self.thread_id,
            self.parent_thread_id,
            self.root_session_id,
            self.cwd,
            self.evidence,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ThreadIdentity):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={value!r}" for name, value in zip(self.__slots__, self._values(), strict=True))
        return f"ThreadIdentity({values})"


def read_first_line(path: str | os.PathLike[str], cap: int = FIRST_LINE_CAP) -> bytes | None:
    """A rollout's first complete line (its ``session_meta``), or None (absent/partial/too long).

    ``bounded_read``: a FIFO or device planted where a rollout should be never blocks a hook or
    the gate, and a many-megabyte rollout costs one small read.
    """
    return bounded_read.read_first_line(path, cap)


def parse_session_meta(line: bytes) -> dict[str, Any] | None:
    """The ``session_meta`` payload of a rollout's first line, or None if it is not one."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("type") != "session_meta":
        return None
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else None


def classify_session_meta(meta: dict[str, Any]) -> ThreadIdentity:
    """Root, subagent or unknown, from a ``session_meta`` payload."""
    thread_id = _str(meta.get("id"))
    parent = _str(meta.get("parent_thread_id"))
    source = meta.get("source")
    session = _str(meta.get("session_id"))
    cwd = _str(meta.get("cwd"))
    if meta.get("thread_source") == "subagent" or (isinstance(source, dict) and "subagent" in source) or parent:
        if not parent and isinstance(source, dict):
            parent = _spawn_parent(source)
        return ThreadIdentity("subagent", thread_id, parent, session, cwd, "session_meta: subagent")
    if isinstance(source, str) and thread_id and (session in (None, thread_id)):
        return ThreadIdentity("root", thread_id, None, session or thread_id, cwd, f"session_meta: source={source}")
    return ThreadIdentity("unknown", thread_id, None, session, cwd, "session_meta: no recognizable source")


def classify_rollout(path: str | os.PathLike[str]) -> ThreadIdentity:
    """Classify the thread whose rollout is at ``path`` from its first line."""
    line = read_first_line(path)
    if line is None:
        return ThreadIdentity("unknown", evidence="rollout: first line missing or incomplete")
    meta = parse_session_meta(line)
    if meta is None:
        return ThreadIdentity("unknown", evidence="rollout: first line is not a session_meta record")
    return classify_session_meta(meta)


def classify_threads_source(source: object, thread_id: str | None = None) -> ThreadIdentity:
    """Classify from ``state_5.threads.source`` (a plain string or a JSON string)."""
    if not isinstance(source, str) or not source:
        return ThreadIdentity("unknown", thread_id, evidence="threads.source: empty")
    if source.lstrip().startswith("{"):
        try:
            parsed = json.loads(source)
        except ValueError:
            return ThreadIdentity("unknown", thread_id, evidence="threads.source: malformed JSON")
        if isinstance(parsed, dict) and "subagent" in parsed:
            return ThreadIdentity("subagent", thread_id, _spawn_parent(parsed), evidence="threads.source: subagent")
        return ThreadIdentity("unknown", thread_id, evidence="threads.source: unrecognized object")
    return ThreadIdentity("root", thread_id, evidence=f"threads.source: {source}")


def _spawn_parent(source: dict[str, Any]) -> str | None:
    sub = source.get("subagent")
    if isinstance(sub, dict):
        spawn = sub.get("thread_spawn")
        if isinstance(spawn, dict):
            return _str(spawn.get("parent_thread_id"))
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        """``Classification`` for runtime imports of the alias (typing is loaded on first access)."""
        if name == "Classification":
            from typing import Literal

            return Literal["root", "subagent", "unknown"]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
