"""Gate probe on a large rollout: the completion at the end of a 200 MB file, bounded vs full parse.

Builds a synthetic rollout from the real codex 0.171.0 record shapes (``tests/fixtures/codex/rollouts``):
many turns, each with tool output lines of a few KiB, the candidate's ``task_complete`` last.
Measures, side by side in one process:

* ``gate pass``: one ``run_gate_pass`` (strict) promoting that candidate, with cold caches: CPU
  seconds (``time.process_time``), peak traced memory (``tracemalloc``) and the RSS high-water delta;
* ``resume``: the file grows by one more turn and a second candidate is probed, resuming from the
  cached offset;
* ``full parse``: what a naive notifier does per completion: read the whole file and
  ``json.loads`` every line to find the turn's completion.

Targets: gate pass <= 0.1 CPU-s and <= 16 MiB extra memory; the ratio column is
full-parse / gate-pass. ``DONEBELL_BENCH_ROLLOUT_MB`` changes the size (default 200).
Run: ``python -m benchmarks gate_probe`` or ``python benchmarks/bench_gate_probe.py``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from donebell.shared import ingest, keys, records
from donebell.shared.config.model import Settings
from donebell.shared.statedir import StateDir
from donebell.workers.gate import _PERSISTENT, run_gate_pass

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "codex" / "rollouts" / "tool-exec-command.jsonl"
THREAD = "01a22be2-acdf-70b2-a78f-57049f1b5bda"
MIB = 1 << 20


def _turn_lines(template: list[dict[str, Any]], turn: str, pad: str) -> bytes:
    out = []
    for rec in template[1:]:
        rec = copy.deepcopy(rec)
        payload = rec.get("payload")
        if isinstance(payload, dict):
            for field in ("turn_id", "root_turn_id"):
                if field in payload:
                    payload[field] = turn
            if payload.get("type") == "function_call_output":
                payload["output"] = pad  # realistic bulk: command output
        out.append(json.dumps(rec, separators=(",", ":")))
    return ("\n".join(out) + "\n").encode()


def build(path: Path, size_mb: int) -> str:
    """Write a rollout of about ``size_mb`` MB; returns the last turn's id."""
    template = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    pad = "x" * 6000
    with open(path, "wb") as f:
        f.write((json.dumps(template[0], separators=(",", ":")) + "\n").encode())
        n = 0
        while f.tell() < size_mb * MIB:
            f.write(_turn_lines(template, f"turn-{n:07d}", pad))
            n += 1
        last = f"turn-{n:07d}"
        f.write(_turn_lines(template, last, pad))
    return last


def build_one_long_turn(path: Path, size_mb: int) -> str:
    """Worst case: the whole file is one turn, so its task_started is 200 MB back."""
    template = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    body = _turn_lines(template, "long-turn", "z" * 6000).splitlines(keepends=True)
    start, middle, end = body[0], [x for x in body[1:-1] if b"function_call_output" in x], body[-1]
    with open(path, "wb") as f:
        f.write((json.dumps(template[0], separators=(",", ":")) + "\n").encode() + start)
        while f.tell() < size_mb * MIB:
            f.writelines(middle)
        f.write(end)
    return "long-turn"


def _rss_mib() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS. Imported here: bench_completion imports this module,
    # and a --compare REF from before the platform seam has no donebell.shared.platform (Linux only then).
    try:
        from donebell.shared import platform as host_platform

        scale = 1 if host_platform.host() == "macos" else 1024
    except ImportError:
        scale = 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / MIB


def _candidate(state: StateDir, home: Path, rollout: Path, turn: str) -> str:
    key = keys.event_key("codex", THREAD, turn)
    cand = records.new_candidate(
        key=key,
        provider="codex",
        source="codex-stop",
        thread_id=THREAD,
        turn_id=turn,
        classification="root",
        transcript_path=str(rollout),
        codex_home=str(home),
    )
    ingest.submit_candidate(state, cand)
    return key


def full_parse(path: Path, turn: str) -> bool:
    """The naive way: the whole file in memory, every line parsed."""
    found = False
    with open(path, "rb") as f:
        data = f.read()
    for line in data.splitlines():
        rec = json.loads(line)
        payload = rec.get("payload") or {}
        if payload.get("type") == "task_complete" and payload.get("turn_id") == turn:
            found = True
    return found


def _gate_pass(
    state_root: Path, home: Path, rollout: Path, turn: str, settings: Settings, *, traced: bool
) -> tuple[float, float]:
    """One strict gate pass with cold caches over a fresh state directory: (CPU s, peak traced MiB)."""
    state = StateDir(state_root).ensure()
    _PERSISTENT.clear()
    key = _candidate(state, home, rollout, turn)
    if traced:
        tracemalloc.start()
    cpu = time.process_time()
    run_gate_pass(state, settings, time.time() + 1)
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] / MIB if traced else 0.0
    if traced:
        tracemalloc.stop()
    assert state.locate(key) == "outbox", "the probe must promote the completed turn"
    return cpu, peak


def _measure_resume(tmp: Path, home: Path, rollout: Path, turn: str, settings: Settings) -> float:
    """Growth: one more turn appended; the cached summary is extended by the new bytes only."""
    state = StateDir(tmp / "state-resume").ensure()
    _PERSISTENT.clear()
    _candidate(state, home, rollout, turn)
    run_gate_pass(state, settings, time.time() + 1)
    template = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    with open(rollout, "ab") as f:
        f.write(_turn_lines(template, "turn-grown", "y" * 6000))
    key = _candidate(state, home, rollout, "turn-grown")
    cpu = time.process_time()
    run_gate_pass(state, settings, time.time() + 1)
    cpu = time.process_time() - cpu
    assert state.locate(key) == "outbox"
    return cpu


def _measure_long_turn(tmp: Path, home: Path, rollout: Path, settings: Settings, size_mb: int) -> dict[str, float]:
    """The worst case in the rollout's place (the regular one is set aside, then put back)."""
    day = rollout.parent
    long_rollout = day / f"rollout-2026-11-30T09-56-46-{THREAD}.jsonl"
    rollout.rename(day / "moved.jsonl.bak")
    long_turn = build_one_long_turn(long_rollout, size_mb)
    cpu = _gate_pass(tmp / "state-long-False", home, long_rollout, long_turn, settings, traced=False)[0]
    peak = _gate_pass(tmp / "state-long-True", home, long_rollout, long_turn, settings, traced=True)[1]
    long_rollout.unlink()
    (day / "moved.jsonl.bak").rename(rollout)
    return {"long_cpu_s": cpu, "long_peak_mib": peak}


def _measure_full_parse(rollout: Path, turn: str) -> dict[str, float]:
    cpu = time.process_time()
    assert full_parse(rollout, turn)
    cpu = time.process_time() - cpu
    tracemalloc.start()
    full_parse(rollout, turn)
    peak = tracemalloc.get_traced_memory()[1] / MIB
    tracemalloc.stop()
    return {"full_cpu_s": cpu, "full_peak_mib": peak}


def measure(size_mb: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="donebell-bench-gate-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "codex"
        day = home / "sessions" / time.strftime("%Y/%m/%d", time.gmtime())
        day.mkdir(parents=True)
        rollout = day / f"rollout-2026-11-30T09-56-45-{THREAD}.jsonl"
        turn = build(rollout, size_mb)
        settings = Settings(idle_grace_seconds=0, topic="bench")
        results: dict[str, float] = {"size_mib": rollout.stat().st_size / MIB}

        def one_pass(traced: bool) -> tuple[float, float]:
            return _gate_pass(tmp / f"state-{time.monotonic_ns()}", home, rollout, turn, settings, traced=traced)

        rss_before = _rss_mib()
        cpus = [one_pass(False)[0] for _ in range(5)]
        results["gate_cpu_s"] = sorted(cpus)[len(cpus) // 2]
        results["gate_peak_mib"] = one_pass(True)[1]
        results["gate_rss_delta_mib"] = _rss_mib() - rss_before
        results["resume_cpu_s"] = _measure_resume(tmp, home, rollout, turn, settings)
        results.update(_measure_long_turn(tmp, home, rollout, settings, size_mb))
        results.update(_measure_full_parse(rollout, turn))
        return results


def main() -> list[dict[str, Any]]:
    size = int(os.environ.get("DONEBELL_BENCH_ROLLOUT_MB", "200"))
    r = measure(size)
    name = "gate_probe"
    rows: list[dict[str, Any]] = [
        {"benchmark": name, "metric": "rollout size MiB", "value": r["size_mib"], "target": None},
        {
            "benchmark": name,
            "metric": "gate pass CPU s (completion at the end)",
            "value": r["gate_cpu_s"],
            "target": "<= 0.1",
            "ratio": r["full_cpu_s"] / r["gate_cpu_s"],
        },
        {
            "benchmark": name,
            "metric": "gate pass peak traced MiB",
            "value": r["gate_peak_mib"],
            "target": "<= 16",
            "ratio": r["full_peak_mib"] / max(r["gate_peak_mib"], 1e-6),
        },
        {
            "benchmark": name,
            "metric": "gate pass RSS high-water delta MiB",
            "value": r["gate_rss_delta_mib"],
            "target": "<= 16",
        },
        {"benchmark": name, "metric": "resume after growth CPU s", "value": r["resume_cpu_s"], "target": "<= 0.1"},
        {
            "benchmark": name,
            "metric": "worst case: one turn spanning the file, CPU s (16 MiB scan cap)",
            "value": r["long_cpu_s"],
            "target": "<= 0.1",
        },
        {"benchmark": name, "metric": "worst case peak traced MiB", "value": r["long_peak_mib"], "target": "<= 16"},
        {"benchmark": name, "metric": "full parse CPU s (naive)", "value": r["full_cpu_s"], "target": None},
        {
            "benchmark": name,
            "metric": "full parse peak traced MiB (naive)",
            "value": r["full_peak_mib"],
            "target": None,
        },
    ]
    for row in rows:
        print(row)
    return rows


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
