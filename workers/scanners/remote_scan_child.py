"""One bounded scan of one remote Codex home, run as its own short-lived process.

``python -m donebell.workers.scanners.remote_scan_child --state-dir DIR --spec JSON``

The ``remote-scanner`` role starts this for each ``watch_roots`` entry and kills it when it
outlives ``watch_remote_timeout_seconds``: a hung share or a suspended WSL distribution can stall
this process (even in an unkillable kernel wait) but never the role, the local scanner or
delivery. The spec carries everything the run needs (paths, origin, replay window, cursor
folder), so this process never loads the pydantic configuration; it holds no secrets. It prints
one JSON line: ``{"status": "ok"|"unavailable"|"failed", "mode": "quick"|"full", ...}``.

It starts once a minute per root, so its start-up is kept small: standard library and StateDir
only until a full scan is needed. A *quick* run compares the root with the summary its last
clean full scan left (stats only; :mod:`donebell.workers.scanners.remote_root_summary`) and ends there
when nothing changed; only otherwise are the scan engine, orjson and sqlite3 imported.

Belt and braces against orphans: the child arms ``SIGALRM`` a little past its budget, and on
Linux asks to be killed when its parent dies (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from donebell.shared.process.orphans import die_with_parent
from donebell.shared.statedir import StateDir, now
from donebell.workers.scanners.remote_root_summary import (
    SUMMARY_KEY,
    quick_result,
    read_summary,
    summary_record,
    why_full,
)

TYPE_CHECKING = False  # typing is not imported at run time: annotations only
if TYPE_CHECKING:
    from typing import Any

USAGE = "usage: python -m donebell.workers.scanners.remote_scan_child --state-dir DIR --spec JSON"


def root_hash(path: str) -> str:
    """The cursor namespace of a root: ``watch/remote/<root_hash(path)>``."""
    import hashlib  # the role computes it and passes it in the spec: the child never needs it

    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def sqlite_home_of(path: str, sqlite_path: str | None) -> str:
    """The folder holding ``state_5.sqlite``: ``sqlite_path`` (a folder, or a ``*.sqlite`` file in it)."""
    if not sqlite_path:
        return path
    return (os.path.dirname(sqlite_path) or ".") if sqlite_path.endswith(".sqlite") else sqlite_path


def _arm_self_destruct(budget: float, parent_pid: int | None) -> None:
    if hasattr(signal, "SIGALRM"):
        signal.alarm(int(budget) + 5)  # default action terminates, even inside a killable wait
    die_with_parent(parent_pid)


def run(state_dir: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Scan one root: quick when its summary says nothing changed, else in full."""
    path = spec["path"]
    if not os.path.isdir(path):
        return {"status": "unavailable", "detail": "root folder missing or unreachable"}
    folder = spec.get("cursor_folder") or f"watch/remote/{root_hash(path)}"
    state = StateDir(state_dir)
    state.fence_on_role_lock("remote-scanner")  # the role that started this run may lose its lock
    reason = "full scan of the whole archive" if spec.get("scope") == "all" else None
    if reason is None:
        summary = read_summary(state, folder)
        reason = why_full(summary, spec, now())
        if reason is None and summary is not None:
            return quick_result(summary)
    result = full_scan(state.ensure(), folder, spec)
    result["full_reason"] = reason
    return result


def full_scan(state: StateDir, folder: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run the scan engine over the root, then leave the summary the next quick run compares with."""
    from pathlib import Path

    from donebell.workers.agents.codex.scan_engine import ScanEngine, ScanOptions

    at = now()
    engine = ScanEngine(
        state,
        ScanOptions(
            source="remote-scanner",
            cursor_folder=folder,
            codex_home=Path(spec["path"]),
            sqlite_home=Path(sqlite_home_of(spec["path"], spec.get("sqlite_path"))),
            origin=spec.get("origin") or spec["path"],
            replay_seconds=float(spec.get("replay_seconds", 300.0)),
            include_message=bool(spec.get("include_message")),
            scope=spec.get("scope") or "hot",
            remap_index_paths=True,
        ),
    )
    report = engine.scan(full=True)
    health = engine.health()
    result = {
        "status": "ok",
        "mode": "full",
        "counters": dict(report.counters),
        "files_watched": report.files_watched,
        "index_status": health["index_status"],
        "index_detail": health["index_detail"],
        "errors": report.errors[-3:],
        "seconds": round(report.seconds, 4),
    }
    snapshot = engine.snapshot()
    try:
        if snapshot["clean"] and not report.errors:
            state.replace(folder, summary_record(spec, snapshot, result, at))
        else:
            state.remove(folder, SUMMARY_KEY)  # a failed file is retried by the next full scan
    except (OSError, ValueError) as exc:  # the scan itself succeeded; the summary is only a shortcut
        state.log(
            "warning", "remote root summary not written", folder=folder, error=f"{type(exc).__name__}: {exc}"[:200]
        )
        try:
            state.remove(folder, SUMMARY_KEY)
        except OSError:
            pass
    return result


def parse_args(argv: list[str]) -> tuple[str, str]:
    """``(state_dir, spec)`` from ``--state-dir DIR --spec JSON`` (argparse costs ~3 ms per run)."""
    values: dict[str, str] = {}
    items = iter(argv)
    for item in items:
        name, eq, value = item.partition("=")
        if name not in ("--state-dir", "--spec"):
            raise SystemExit(f"{USAGE}\nunexpected argument: {item[:80]}")
        following = value if eq else next(items, None)
        if following is None:
            raise SystemExit(f"{USAGE}\n{name} needs a value")
        values[name] = following
    if len(values) != 2:
        raise SystemExit(USAGE)
    return values["--state-dir"], values["--spec"]


def main(argv: list[str] | None = None) -> int:
    state_dir, raw_spec = parse_args(sys.argv[1:] if argv is None else argv)
    spec = json.loads(raw_spec)
    _arm_self_destruct(float(spec.get("budget", 30.0)), spec.get("parent_pid"))
    started = time.monotonic()
    try:
        result = run(state_dir, spec)
    except Exception as exc:  # noqa: BLE001 - reported to the role, which records it in health
        result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:300]}
    result["wall_seconds"] = round(time.monotonic() - started, 4)
    result["cpu_seconds"] = round(time.process_time(), 4)  # the whole run, interpreter start-up included
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0 if result["status"] != "failed" else 1


if __name__ == "__main__":
    sys.exit(main())
