"""The probe worker: evaluates one watch root's candidates so the delivery process never reads them.

``python -m donebell.workers.gate.remote_worker --state-dir DIR --root PATH --parent-pid PID``

Started by :mod:`~donebell.workers.gate.remote_pool` (one per root, on demand), it reads one JSON
request per line on stdin::

    {"id": 7, "now": 1764500000.0, "settings": {...}, "groups": [[record, ...], ...]}

and answers one JSON line on stdout::

    {"id": 7, "results": [{"key", "first": verdict, "second": verdict | null}], "done_mono": t}

``first`` is the gate's decision on the record; ``second`` is the *second fresh snapshot* (a new
evaluation with nothing cached) taken right after a ``promote``, which the delivery process uses as
the recheck of its revision-safe commit (the commit itself, under the key's mutation lock, reads
only the local state directory). A promotion also gets the thread title (``include_thread_title``)
so that the send never opens the root's SQLite. This process may hang in the kernel on a dead
share: that is its job. It exits at the end of stdin, and on Linux when its parent dies.

No pydantic here: the settings arrive as plain JSON and the gate reads them as attributes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from types import SimpleNamespace
from typing import Any

from donebell.shared.faults import injected_fault
from donebell.shared.process.orphans import die_with_parent
from donebell.shared.statedir import StateDir
from donebell.workers.gate.decide import safe_evaluate
from donebell.workers.gate.remote import TITLE_FIELD, to_wire
from donebell.workers.kit.gate_context import GateContext


def _title(record: dict[str, Any]) -> str | None:
    from donebell.workers.agents.registry import agent

    found = agent(record.get("provider"))
    try:
        return found.lookup_title(record) if found is not None else None
    except Exception:  # noqa: BLE001 - a title is decoration: never a reason to fail the probe
        return None


def answer(state: StateDir, request: dict[str, Any], persistent: dict[Any, Any]) -> dict[str, Any]:
    """Evaluate every record of ``request``; one result per record, in order."""
    if injected_fault("gate-remote-worker", "hang"):  # test seam: a share that never answers
        time.sleep(3600)
    settings: Any = SimpleNamespace(**request["settings"])
    ctx = GateContext(state, settings, float(request["now"]), {}, persistent)
    try:
        results = [_judged(ctx, record, settings) for group in request["groups"] for record in group]
    finally:
        ctx.close()  # the share's databases stay open for one request only
    return {"id": request["id"], "results": results, "done_mono": time.monotonic()}


def _judged(ctx: GateContext, record: dict[str, Any], settings: Any) -> dict[str, Any]:
    """One record's decision and, for a promotion, its second fresh snapshot, as sent on the wire."""
    first = safe_evaluate(record, ctx)
    second = safe_evaluate(record, ctx.fresh()) if first.action == "promote" else None
    if second is not None and second.action == "promote":
        if getattr(settings, "include_thread_title", False):
            title = _title(record)
            if title:
                second.fields[TITLE_FIELD] = title
    return {"key": record["key"], "first": to_wire(first), "second": to_wire(second) if second else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="donebell gate remote probe worker")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--root", required=True, help="the watch root (for process listings and logs)")
    parser.add_argument("--parent-pid", type=int, default=None)
    args = parser.parse_args(argv)
    die_with_parent(args.parent_pid)
    state = StateDir(args.state_dir)
    persistent: dict[Any, Any] = {}  # tail caches of this root's rollouts, for this worker's life
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request: Any = None
        try:
            request = json.loads(line)
            reply = answer(state, request, persistent)
        except Exception as exc:  # noqa: BLE001 - reported to the pool, which records it
            ident = request.get("id") if isinstance(request, dict) else None
            reply = {"id": ident, "error": f"{type(exc).__name__}: {exc}"[:300], "done_mono": time.monotonic()}
        out.write(json.dumps(reply, default=str).encode("utf-8") + b"\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
