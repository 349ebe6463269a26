"""Remote candidates: which ones live on a ``watch_roots`` entry, and what the gate says when their
root does not answer. No function here touches the file system.

A remote-scanner candidate (a WSL share, an NFS/sshfs mount, another user's Codex home) points its
``transcript_path``, ``codex_home`` and ``sqlite_home`` into its root. An ``open()``, ``stat()`` or
SQLite call on a hung share blocks in the kernel, so the delivery process must never make one:
:mod:`~donebell.workers.gate.remote_pool` evaluates such candidates in a probe worker process per
root (``remote_worker``), and while a root does not answer, :func:`offline_verdict` keeps its
candidates waiting (``remote-unresponsive``) under the same probe grace as any unknown evidence.

A candidate is remote when any of those three paths lies (lexically: no ``realpath``, which would
itself touch the share) under a configured root or its ``sqlite_path`` folder, or when its source
is ``remote-scanner`` (a root removed from the config keeps its records remote: the root is then
the record's own ``codex_home``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from donebell.workers.kit.ladder import CAPTURED_SUBAGENT, decided
from donebell.workers.kit.probe_schedule import attempts_of, first_seen, unknown_delay
from donebell.workers.kit.verdict import Verdict

if TYPE_CHECKING:
    from donebell.shared.config.view import SettingsLike

REMOTE_SOURCE = "remote-scanner"
#: Wait reasons of a remote candidate whose evidence could not be read (``docs/gate.md``).
UNRESPONSIVE = "remote-unresponsive"
PROBE_ERROR = "remote-probe-error"
#: The step name an offline verdict records in ``probe.ladder``: no provider check could run.
REMOTE_STEP = "remote-root"
#: Fields a promoted remote record gets, so that send time never needs the share again.
ROOT_FIELD = "remote_root"
TITLE_FIELD = "thread_title"
_PATH_FIELDS = ("transcript_path", "codex_home", "sqlite_home")


@dataclass(frozen=True)
class RootSpec:
    """One configured root: its key (the path as configured) and the folders that belong to it."""

    key: str
    prefixes: tuple[str, ...]


def _norm(path: str) -> str:
    return os.path.normcase(os.path.normpath(path))


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip(os.sep) + os.sep)


def configured_roots(settings: SettingsLike) -> list[RootSpec]:
    """The ``watch_roots`` entries as :class:`RootSpec` (string or ``{"path", "sqlite_path"}`` form)."""
    specs: list[RootSpec] = []
    for entry in settings.watch_roots:
        path = entry if isinstance(entry, str) else entry.path
        sqlite = None if isinstance(entry, str) else entry.sqlite_path
        if not path:
            continue
        prefixes = [_norm(path)]
        if sqlite:
            # The same rule as the scanner child: a *.sqlite file names its folder.
            prefixes.append(_norm(os.path.dirname(sqlite) if sqlite.endswith(".sqlite") else sqlite))
        specs.append(RootSpec(path, tuple(prefixes)))
    return specs


def remote_root(record: dict[str, Any], roots: list[RootSpec]) -> str | None:
    """The root a candidate's evidence lives in, or None for a local candidate."""
    for name in _PATH_FIELDS:
        value = record.get(name)
        if isinstance(value, str) and value:
            path = _norm(value)
            for spec in roots:
                if any(_under(path, prefix) for prefix in spec.prefixes):
                    return spec.key
    sources = record.get("sources")
    named = set(sources) if isinstance(sources, list) else set()
    if REMOTE_SOURCE in named or record.get("source") == REMOTE_SOURCE:
        home = record.get("codex_home")
        return home if isinstance(home, str) and home else REMOTE_SOURCE
    return None


def mark(verdict: Verdict, root: str) -> Verdict:
    """A promotion of a remote candidate carries its root (``thread_title`` reads no file then)."""
    if verdict.action == "promote":
        verdict.fields = {**verdict.fields, ROOT_FIELD: root}
    verdict.watch = []  # a wake-up watch (inotify / stat) on a hung share would block delivery
    return verdict


def offline_verdict(
    record: dict[str, Any], settings: SettingsLike, now: float, reason: str, evidence: str, **detail: Any
) -> Verdict:
    """The decision for a remote candidate whose root could not be read this time.

    Exactly what the local gate does with unknown evidence: wait (the probe schedule) until
    ``idle_probe_grace_seconds`` after the gate first saw it; then strict suppresses
    ``unverifiable`` and balanced assumes the check passed. A subagent classified at capture
    needs no evidence and is suppressed at once, as in ``decide.evaluate``.
    """
    if record.get("classification") == "subagent":
        captured = Verdict.suppress("subagent", "candidate classified as a subagent at capture")
        return decided(CAPTURED_SUBAGENT, captured)
    deadline = first_seen(record, now) + settings.idle_probe_grace_seconds
    if now < deadline:
        retry = unknown_delay(attempts_of(record), settings.unknown_retry_max_seconds, until=deadline - now)
        waiting_for = {"reason": reason, **detail, "grace_deadline": deadline}
        waiting = Verdict.wait(reason, evidence, kind="unknown", retry_in=retry, detail=waiting_for)
        return decided(REMOTE_STEP, waiting)
    if settings.idle_detection_mode == "strict":
        unresolved = f"{reason}: {evidence}; unresolved after the probe grace"
        return decided(REMOTE_STEP, Verdict.suppress("unverifiable", unresolved))
    root_thread = record.get("root_thread_id") or record.get("thread_id")
    assumed = Verdict.promote(
        "balanced",
        f"assumed after grace: {reason}: {evidence}",
        fields={"root_thread_id": root_thread} if root_thread else {},
        fingerprint=("offline", reason),
    )
    return decided(REMOTE_STEP, assumed)


# --- the probe worker's wire format (JSON lines) ---------------------------------------------


def to_wire(verdict: Verdict) -> dict[str, Any]:
    """A verdict as JSON (watch paths are dropped: remote paths are never watched)."""
    return {
        "action": verdict.action,
        "reason": verdict.reason,
        "evidence": verdict.evidence,
        "wait_kind": verdict.wait_kind,
        "retry_in": verdict.retry_in,
        "fields": verdict.fields,
        "fingerprint": list(verdict.fingerprint),
        "detail": verdict.detail,
        "probe_update": verdict.probe_update,
    }


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def from_wire(data: dict[str, Any]) -> Verdict:
    """The verdict :func:`to_wire` wrote (fingerprints compare equal after the round trip)."""
    return Verdict(
        action=data["action"],
        reason=str(data["reason"]),
        evidence=str(data.get("evidence") or ""),
        wait_kind=data.get("wait_kind") or "busy",
        retry_in=data.get("retry_in"),
        fields=dict(data.get("fields") or {}),
        fingerprint=_tuples(list(data.get("fingerprint") or [])),
        detail=data.get("detail"),
        probe_update=dict(data.get("probe_update") or {}),
    )


def settings_wire(settings: SettingsLike) -> dict[str, Any]:
    """The settings a probe worker evaluates with: everything but secrets (sent over a pipe).

    Duck-typed (``model_dump`` and ``get_secret_value``), so a pydantic-free settings view works too.
    """
    dumped: dict[str, Any] = settings.model_dump(mode="json")
    return {
        name: value for name, value in dumped.items() if not hasattr(getattr(settings, name, None), "get_secret_value")
    }
