"""A 200 MB Claude transcript with the completion at the end: what the scanner and the gate pay.

Builds one main-session transcript of 200 MB (2.1.332-sized records: ~48 KB attachments between
prompts) whose goal was set near the start and met in the last prompt, 2 MiB before its final reply, lets the local scanner's
Claude tailer index it as it grows (its cursor sits at the end), then appends the final reply and
measures, side by side in one run:

* scanner: the pass that reads the appended completion and submits the candidate;
* gate: one pass that decides that candidate (index-bounded reverse read, goal met);
* hook baseline: the UserPromptSubmit goal-marker lookup with the marker ~200 MB back (index);
* naive: the gate's reverse scan without the index (its 16 MiB cap), for the ratio.

CPU is ``time.process_time``; memory is tracemalloc's peak. Targets (issue 13): <= 0.02 CPU-s and
<= 8 MiB for the scanner and the gate. Run: ``python -m benchmarks claude_transcript``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from donebell.shared.config.model import Settings
from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from donebell.workers.agents.claude.goal_status import newest_goal_marker
from donebell.workers.agents.claude.outcome import goal_from_index, transcript_index
from donebell.workers.agents.claude.prompt_view import apply_index, index_cap, read_view
from donebell.workers.agents.claude.tail import ClaudeTail
from donebell.workers.gate import run_gate_pass

SIZE = 200 << 20
SESSION = "b3c4d5e6-0000-4000-8000-000000000200"
TARGET_CPU, TARGET_MIB = 0.02, 8.0


def _rec(kind: str, **fields: Any) -> bytes:
    return json.dumps({"type": kind, "isSidechain": False, "sessionId": SESSION, **fields}).encode() + b"\n"


def _build(path: Path) -> bytes:
    """Write ~SIZE bytes of history; return the final reply line (appended later)."""
    blob = _rec("attachment", attachment={"type": "prompt_snapshot", "blob": "x" * (48 << 10)})
    with path.open("wb") as f:
        f.write(_rec("user", promptId="p0", uuid="u0", message={"role": "user", "content": "/goal c"}))
        f.write(_rec("attachment", uuid="g-set", attachment={"type": "goal_status", "met": False, "sentinel": True}))
        written, n = 0, 0
        while written < SIZE - (1 << 20):
            if n % 200 == 0:
                f.write(_rec("user", promptId=f"p{n // 200 + 1}", uuid=f"u{n}", message={"content": "go on"}))
            f.write(blob)
            written += len(blob)
            n += 1
        f.write(_rec("user", promptId="final", uuid="u-final", message={"role": "user", "content": "finish"}))
        f.write(_rec("attachment", uuid="g-met", attachment={"type": "goal_status", "met": True}))
        for _ in range((2 << 20) // len(blob) + 1):  # the last prompt's tool output: marker 2 MiB back
            f.write(blob)
    content = [{"type": "text", "text": "all done"}]
    return _rec("assistant", uuid="a-final", message={"stop_reason": "end_turn", "content": content})


def _measure(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    tracemalloc.start()
    cpu = time.process_time()
    result = fn()
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] / (1 << 20)
    tracemalloc.stop()
    return cpu, peak, result


def main() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        state = StateDir(root / "state").ensure()
        claude_dir = root / "claude"
        (claude_dir / "projects").mkdir(parents=True)
        tail = ClaudeTail(state, claude_dir, idle_grace=0.0, origin=None, include_message=False)
        tail.scan(full=True)
        path = claude_dir / "projects" / "-bench" / f"{SESSION}.jsonl"
        path.parent.mkdir()
        path.write_bytes(b"")
        tail.scan(full=False)  # seen from its first byte, then indexed as it grows
        final = _build(path)
        tail.scan(full=False)
        with path.open("ab") as f:
            f.write(final)
        old = time.time() - 10
        os.utime(path, (old, old))
        rows.append({"benchmark": "claude_transcript", "metric": "transcript MiB", "value": path.stat().st_size >> 20})

        cpu, peak, report = _measure(lambda: tail.scan(full=False))
        assert report.counters.get("claude_created") == 1, report.counters
        rows += _rows("scanner pass reading the completion", cpu, peak)

        key = event_key("claude", SESSION, "final")
        transcript = str(path)

        def gate_transcript_read() -> Any:
            index = transcript_index(state, transcript)
            view = read_view(transcript, "final", index_cap(index, "final", os.stat(transcript).st_size))
            return view if index is None else (apply_index(view, index, "final") and view)

        cpu, peak, view = _measure(gate_transcript_read)
        assert view and view.reached_prompt and view.marker is not None and view.marker.state == "met"
        rows += _rows("gate: transcript read for the candidate (index + tail)", cpu, peak)

        settings = Settings(topic="bench", idle_grace_seconds=0.0)
        run_gate_pass(StateDir(root / "warm").ensure(), settings, time.time())  # imports, not the file
        cpu, peak, _ = _measure(lambda: run_gate_pass(state, settings, time.time() + 5))
        assert state.locate(key) == "outbox", state.locate(key)
        rows += _rows("whole gate pass incl. promotion (fsync)", cpu, peak, target=False)

        def baseline() -> Any:
            marker, scan = newest_goal_marker(str(path))
            return goal_from_index(state, str(path), scan) if marker is None else (marker, scan)

        cpu, peak, (marker, scan) = _measure(baseline)
        assert scan["status"] == "found-in-index" and marker["uuid"] == "g-met", scan
        rows += _rows("hook goal baseline, marker 2 MiB back", cpu, peak, target=False)

        naive, npeak, view = _measure(lambda: read_view(str(path), "p0"))
        assert not view.reached_prompt
        rows.append({
            "benchmark": "claude_transcript", "metric": "gate reverse scan without the index, CPU s (16 MiB cap)",
            "value": round(naive, 6), "target": "", "ratio": "",
        })  # fmt: skip
        rows.append({"benchmark": "claude_transcript", "metric": "  its peak traced MiB", "value": round(npeak, 3)})
    return rows


def _rows(what: str, cpu: float, peak: float, *, target: bool = True) -> list[dict[str, Any]]:
    tc, tm = (f"<= {TARGET_CPU}", f"<= {TARGET_MIB:g}") if target else ("", "")
    return [
        {"benchmark": "claude_transcript", "metric": f"{what}, CPU s", "value": round(cpu, 6), "target": tc,
         "ratio": round(TARGET_CPU / cpu, 1) if target and cpu else ""},
        {"benchmark": "claude_transcript", "metric": f"{what}, peak traced MiB", "value": round(peak, 3), "target": tm,
         "ratio": round(TARGET_MIB / peak, 1) if target and peak else ""},
    ]  # fmt: skip


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for row in main():
        print(row)
    sys.exit(0)
