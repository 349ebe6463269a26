"""One bounded scan of one remote Codex home, run as its own short-lived process.

``python -m donebell.workers.remote_scan_child --state-dir DIR --spec JSON``

The ``remote-scanner`` role starts this for each ``watch_roots`` entry and kills it when it
outlives ``watch_remote_timeout_seconds``: a hung share or a suspended WSL distribution can stall
this process (even in an unkillable kernel wait) but never the role, the local scanner or
delivery. The spec carries everything the run needs (paths, origin, replay window), so this
process never loads the pydantic configuration; it holds no secrets. It prints one JSON line:
``{"status": "ok"|"unavailable"|"failed", "counters": {...}, ...}``.

Belt and braces against orphans: the child arms ``SIGALRM`` a little past its budget, and on
Linux asks to be killed when its parent dies (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any


def root_hash(path: str) -> str:
    """The cursor namespace of a root: ``watch/remote/<root_hash(path)>``."""
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def sqlite_home_of(path: str, sqlite_path: str | None) -> str:
    """The folder holding ``state_5.sqlite``: ``sqlite_path`` (a folder, or a ``*.sqlite`` file in it)."""
    if not sqlite_path:
        return path
    return str(Path(sqlite_path).parent) if sqlite_path.endswith(".sqlite") else sqlite_path


def _arm_self_destruct(budget: float, parent_pid: int | None) -> None:
    if hasattr(signal, "SIGALRM"):
        signal.alarm(int(budget) + 5)  # default action terminates, even inside a killable wait
    if sys.platform.startswith("linux") and parent_pid:
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        if os.getppid() != parent_pid:
            os._exit(3)  # the parent is already gone


def run(state_dir: str, spec: dict[str, Any]) -> dict[str, Any]:
    from donebell.shared.statedir import StateDir
    from donebell.workers.scan_engine import ScanEngine, ScanOptions

    root = Path(spec["path"])
    if not root.is_dir():
        return {"status": "unavailable", "detail": "root folder missing or unreachable"}
    state = StateDir(state_dir).ensure()
    engine = ScanEngine(
        state,
        ScanOptions(
            source="remote-scanner",
            cursor_folder=f"watch/remote/{root_hash(spec['path'])}",
            codex_home=root,
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
    return {
        "status": "ok",
        "counters": dict(report.counters),
        "files_watched": report.files_watched,
        "index_status": health["index_status"],
        "index_detail": health["index_detail"],
        "errors": report.errors[-3:],
        "seconds": round(report.seconds, 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="donebell remote scan (one root, one shot)")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--spec", required=True, help="JSON: path, origin, sqlite_path, replay_seconds, ...")
    args = parser.parse_args(argv)
    spec = json.loads(args.spec)
    _arm_self_destruct(float(spec.get("budget", 30.0)), spec.get("parent_pid"))
    started = time.monotonic()
    try:
        result = run(args.state_dir, spec)
    except Exception as exc:  # noqa: BLE001 - reported to the role, which records it in health
        result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:300]}
    result["wall_seconds"] = round(time.monotonic() - started, 4)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0 if result["status"] != "failed" else 1


if __name__ == "__main__":
    sys.exit(main())
