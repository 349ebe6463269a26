"""What a remote root looked like after its last full scan, and the cheap check against it.

The remote-scanner starts a fresh interpreter per root every ``watch_scan_seconds``. Importing
the scan engine (orjson, sqlite3, the rollout parser) and querying the thread index cost most of
such a run, yet on an idle root nothing has changed. So after a clean full scan the child stores
a *summary* in the root's cursor namespace (``watch/remote/<root-hash>/<SUMMARY_KEY>.json``):

* the thread index signature (mtime and size of ``state_5.sqlite`` and its WAL), taken before
  the index was queried;
* the hot day folders the engine listed;
* for every rollout the engine watched, the stat it acted on (null: absent or not a regular file).

The next run recomputes those from the filesystem, stats only (no SQLite, no file opened). When
the hot days, the index signature and every stat are the same, and the hot folders hold no
rollout outside the summary, a full scan would find nothing new: the run ends there (``quick``).
Anything else runs the full scan: a changed or new file, a changed index, a new day, a summary
that is missing, corrupt, from another spec or older than :data:`FULL_SCAN_MAX_AGE` (a safety
net), or a last full scan that hit an error or a locked/corrupt index.

Standard library and StateDir only: this module is imported before anything heavy. The file
stat (:func:`~donebell.shared.bounded_read.file_sig`) and the hot folders
(:mod:`donebell.workers.agents.codex.rollout_files`) are shared with the engine;
``index_signature`` and ``maybe_rollout`` mirror ``ThreadIndex.signature`` and
``is_rollout_name`` (``tests/test_remote_scanner.py`` pins those two equivalences).
"""

from __future__ import annotations

import os

from donebell.shared.bounded_read import file_sig
from donebell.shared.statedir import InvalidRecord, StateDir
from donebell.workers.agents.codex.rollout_files import hot_day_folders

TYPE_CHECKING = False  # typing is not imported at run time: annotations only
if TYPE_CHECKING:
    from typing import Any

#: sha256(b"donebell/remote-root-summary"): a 64-hex key like a cursor's, so StateDir lists it;
#: cursor keys are sha256 of an absolute rollout path and never collide with it.
SUMMARY_KEY = "ccead7fd4461ba0e977361c4fbd2c04e460670f7316db1d0916a9d582cd8654b"
SUMMARY_KIND = "remote-root-summary"
STATE_DB = "state_5.sqlite"  # shared.codex_db.STATE_DB (not imported: it pulls in sqlite3)
FULL_SCAN_MAX_AGE = 1800.0  # seconds: a full scan at least this often whatever the summary says
#: Index statuses after which a quick run may be trusted (a locked/corrupt index is retried).
QUICK_INDEX_STATUSES = ("ok", "missing")
#: Spec fields that shape a full scan; a summary written under other values is not trusted.
SPEC_FIELDS = ("path", "sqlite_path", "origin", "replay_seconds", "include_message")


def index_signature(sqlite_home: str) -> list[list[int] | None]:
    """``[mtime_ns, size]`` of the database and its WAL (``scan_discovery.ThreadIndex.signature``)."""
    sig: list[list[int] | None] = []
    for name in (STATE_DB, STATE_DB + "-wal"):
        try:
            st = os.stat(os.path.join(sqlite_home, name))
            sig.append([st.st_mtime_ns, st.st_size])
        except OSError:
            sig.append(None)
    return sig


def maybe_rollout(name: str) -> bool:
    """True for every name ``scan_discovery.is_rollout_name`` accepts (a superset is safe: an
    extra name is not in the summary, so it only costs a full scan)."""
    return name.startswith("rollout-") and name.endswith((".jsonl", ".jsonl\n"))


def spec_fields(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: spec.get(k) for k in SPEC_FIELDS}


def summary_record(spec: dict[str, Any], snapshot: dict[str, Any], result: dict[str, Any], at: float) -> dict[str, Any]:
    """The record a clean full scan leaves; ``snapshot`` is ``ScanEngine.snapshot()``."""
    return {
        "schema": 1,
        "kind": SUMMARY_KIND,
        "key": SUMMARY_KEY,
        "provider": "codex",
        "created_at": at,
        "updated_at": at,
        "full_scan_at": at,
        "spec": spec_fields(spec),
        "codex_home": snapshot["codex_home"],
        "sqlite_home": snapshot["sqlite_home"],
        "hot_folders": snapshot["hot_folders"],
        "index_signature": snapshot["index_signature"],
        "files": snapshot["files"],
        "index_status": result.get("index_status"),
        "index_detail": result.get("index_detail"),
    }


def read_summary(state: StateDir, folder: str) -> dict[str, Any] | None:
    """The root's summary, or None if absent or unusable (a full scan then rewrites it)."""
    try:
        rec = state.read(folder, SUMMARY_KEY)
    except (InvalidRecord, OSError):
        return None
    return rec if rec is not None and rec.get("kind") == SUMMARY_KIND else None


def why_full(summary: dict[str, Any] | None, spec: dict[str, Any], at: float) -> str | None:
    """Why this run needs the full scan, or None when nothing a full scan looks at changed."""
    if summary is None:
        return "no summary of a clean full scan"
    if summary.get("spec") != spec_fields(spec):
        return "configuration changed"
    age = at - float(summary.get("full_scan_at") or 0.0)
    if not 0.0 <= age < FULL_SCAN_MAX_AGE:
        return "periodic full scan"
    if summary.get("index_status") not in QUICK_INDEX_STATUSES:
        return f"thread index was {summary.get('index_status')}"
    home, files = summary.get("codex_home"), summary.get("files")
    if not isinstance(home, str) or not isinstance(files, dict) or not isinstance(summary.get("sqlite_home"), str):
        return "summary incomplete"
    folders = hot_day_folders(home, at)
    if folders != summary.get("hot_folders"):
        return "day changed"
    if index_signature(summary["sqlite_home"]) != summary.get("index_signature"):
        return "thread index changed"
    for folder in folders:
        try:
            with os.scandir(folder) as it:
                names = [e.name for e in it]
        except OSError:
            continue  # the engine lists such a folder as empty
        for name in names:
            if maybe_rollout(name) and os.path.join(folder, name) not in files:
                return "new rollout"
    for path, seen in files.items():
        try:
            if file_sig(path) != seen:
                return "rollout changed"
        except OSError:
            return "a rollout could not be checked"  # the full scan reports it as a file error
    return None


def quick_result(summary: dict[str, Any]) -> dict[str, Any]:
    """What the child reports for a root where nothing changed."""
    return {
        "status": "ok",
        "mode": "quick",
        "full_reason": None,
        "counters": {},
        "files_watched": len(summary["files"]),
        "index_status": summary.get("index_status"),
        "index_detail": summary.get("index_detail"),
        "errors": [],
    }
