"""One completion at the end of a big rollout: CPU seconds of the whole service tree.

A real ``donebell run`` (supervisor and default roles) over a temp ``CODEX_HOME`` whose live
rollout (``sessions/YYYY/MM/DD``, today) holds a turn still running after ``SIZE`` of earlier
turns (real codex 0.171.0 record shapes, as ``bench_gate_probe`` builds them). Once the service
settled (``DONEBELL_BENCH_SETTLE`` seconds, 5), the turn's ``task_complete`` line is appended, as
Codex writes it, and nothing else: the local scanner has to notice it (no hook). The figure is
the CPU time of every process of the tree (plus the children it reaped) from the append until
``DONEBELL_BENCH_AFTER`` (1 s) after the ntfy stand-in received the POST; the idle tree's CPU over
a window of the same length, measured just before, is printed beside it. Then a second turn is
appended to the same file and completed the same way: the first completion after a start pays
what the roles load on first use (the gate's Codex modules), every later one does not.

Sizes: ``DONEBELL_BENCH_COMPLETION_MB`` (``1,200,2048``). A size of 1 GiB or more gets a sparse
prefix (a hole after ``session_meta``, then 8 MiB of real turns), so a 2 GB file costs no disk and
no time to write; what is read of it is what donebell reads. Target: <= 0.03 CPU-s at every
size, flat in the rollout's size.

Side by side: ``DONEBELL_BENCH_BASELINE=/other/checkout/.venv/bin/python`` runs that tree's
``donebell`` the same way, alternating with this tree ``DONEBELL_BENCH_ROUNDS`` times (1).

Run: ``python -m benchmarks completion`` or ``python benchmarks/bench_completion.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from support.ntfy_standin import NtfyStandin  # noqa: E402

from benchmarks.bench_footprint import _cpu, _wait_ready  # noqa: E402
from benchmarks.bench_gate_probe import FIXTURE, THREAD, _turn_lines  # noqa: E402
from benchmarks.rows import lower_is_better  # noqa: E402

MIB = 1 << 20
SIZES = tuple(int(s) for s in os.environ.get("DONEBELL_BENCH_COMPLETION_MB", "1,200,2048").split(",") if s)
SETTLE = float(os.environ.get("DONEBELL_BENCH_SETTLE", "5"))
AFTER = float(os.environ.get("DONEBELL_BENCH_AFTER", "1"))
BASELINE = os.environ.get("DONEBELL_BENCH_BASELINE") or None
ROUNDS = max(1, int(os.environ.get("DONEBELL_BENCH_ROUNDS", "1")))
TARGET_CPU_S = 0.03
SPARSE_FROM_MB = 1024
DENSE_TAIL = 8 * MIB
SETTLE_NEXT = 1.5  # the next turn's records are read before its completion is appended


def build(path: Path, size_mb: int) -> bytes:
    """Write the rollout with its last turn still running; returns the line that completes it."""
    template = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    pad = "x" * 6000
    target = size_mb * MIB
    with open(path, "wb") as f:
        f.write((json.dumps(template[0], separators=(",", ":")) + "\n").encode())
        if size_mb >= SPARSE_FROM_MB:
            f.seek(target - DENSE_TAIL)  # a hole: no disk, no writing time
            f.write(b"\n")
        n = 0
        while f.tell() < target:
            f.write(_turn_lines(template, f"turn-{n:07d}", pad))
            n += 1
        lines = _turn_lines(template, f"turn-{n:07d}", pad).splitlines(keepends=True)
        f.writelines(lines[:-1])
    assert b'"task_complete"' in lines[-1]
    return lines[-1]


def _next_turn() -> list[bytes]:
    template = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    return _turn_lines(template, "turn-next", "y" * 6000).splitlines(keepends=True)


NEXT_TURN = _next_turn()


def _stamped(line: bytes) -> bytes:
    """The line with the current time as its ``timestamp``, as Codex writes a fresh record."""
    record = json.loads(line)
    record["payload"]["started_at"] = record["payload"]["completed_at"] = int(time.time())
    record["timestamp"] = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def _tree_cpu(sup: psutil.Process) -> float:
    own, reaped = _cpu(sup)
    return sum(own.values()) + sum(reaped.values())


def _by_role(sup: psutil.Process) -> dict[str, float]:
    """Each process's CPU (own and reaped children), named by its role."""
    own, reaped = _cpu(sup)
    names = {p.pid: _role_name(p) for p in [sup, *sup.children(recursive=True)]}
    return {names.get(k[0], str(k[0])): own[k] + reaped.get(k, 0.0) for k in own}


def _role_name(proc: psutil.Process) -> str:
    try:
        title = " ".join(proc.cmdline())
    except psutil.Error:
        return str(proc.pid)
    return title.removeprefix("donebell: ").split(" ")[0] if title.startswith("donebell: ") else title


def measure(size_mb: int, python: str = sys.executable, extra_env: dict[str, str] | None = None) -> dict[str, float]:
    """One service over one big rollout: two completions' tree CPU and latency, the idle CPU
    (``extra_env``: e.g. ``DONEBELL_FORCE_PORTABLE``, for ``bench_portable``)."""
    donebell = str(Path(python).parent / "donebell")
    with tempfile.TemporaryDirectory(prefix="donebell-completion-") as tmp, NtfyStandin() as standin:
        base = Path(tmp)
        folder = base / "codex" / "sessions" / dt.datetime.now().strftime("%Y/%m/%d")
        folder.mkdir(parents=True)
        stamp = dt.datetime.now().strftime("%Y-%m-%dT%H-%M-%S")
        rollout = folder / f"rollout-{stamp}-{THREAD}.jsonl"
        completion = build(rollout, size_mb)
        config = base / "config.json"
        config.write_text(json.dumps({"server": standin.url, "topic": "bench", "idle_grace_seconds": 0.5}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
        env.update(DONEBELL_STATE_DIR=str(base / "state"), DONEBELL_CONFIG=str(config))
        env.update(
            CODEX_HOME=str(base / "codex"), CLAUDE_CONFIG_DIR=str(base / "claude"), COPILOT_HOME=str(base / "copilot")
        )
        env.update(extra_env or {})
        with open(base / "run.err", "wb") as err:
            proc = subprocess.Popen([donebell, "run"], env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        sup = psutil.Process(proc.pid)
        try:
            _wait_ready(base / "state" / "health" / "supervisor.json")
            time.sleep(SETTLE)
            idle0, idle_started = _tree_cpu(sup), time.monotonic()
            time.sleep(1.5)
            idle = (_tree_cpu(sup) - idle0) / (time.monotonic() - idle_started)
            first = _complete(sup, standin, rollout, completion, 1, f"{size_mb} MB, first")
            # A second turn in the same file: what every completion after the first costs.
            with open(rollout, "ab") as f:
                f.writelines(NEXT_TURN[:-1])
            time.sleep(SETTLE_NEXT)
            second = _complete(sup, standin, rollout, NEXT_TURN[-1], 2, f"{size_mb} MB, next")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        extra = len(standin.messages()) - 2
    return {
        "cpu_s": first["cpu_s"],
        "cpu_next_s": second["cpu_s"],
        "idle_cpu_s": idle * first["window_s"],
        "latency_s": first["latency_s"],
        "latency_next_s": second["latency_s"],
        "extra": extra,
    }


def _complete(
    sup: psutil.Process, standin: NtfyStandin, rollout: Path, line: bytes, nth: int, label: str
) -> dict[str, float]:
    """Append the completing line; the tree's CPU until AFTER seconds past the nth notification."""
    cpu0, roles0 = _tree_cpu(sup), _by_role(sup)
    appended = time.monotonic()
    with open(rollout, "ab") as f:
        f.write(_stamped(line))
    standin.wait_for_messages(nth, timeout=float(os.environ.get("DONEBELL_BENCH_WAIT", "60")))
    latency = time.monotonic() - appended
    time.sleep(AFTER)
    window = time.monotonic() - appended
    cpu = _tree_cpu(sup) - cpu0
    roles = {name: round(v - roles0.get(name, 0.0), 4) for name, v in _by_role(sup).items()}
    print(f"   {label} completion, CPU s by process: {roles}", file=sys.stderr)
    return {"cpu_s": cpu, "latency_s": latency, "window_s": window}


def main() -> list[dict[str, Any]]:
    sides = [("this tree", sys.executable)] + ([("baseline", BASELINE)] if BASELINE else [])
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(ROUNDS):
        for size in SIZES:
            for side, python in sides:
                r = measure(size, python)
                runs.setdefault((side, size), []).append(r)
                print(f"{side:<9} {size:>5} MB: {json.dumps({k: round(v, 4) for k, v in r.items()})}", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    for size in SIZES:
        this = _median(runs[("this tree", size)])
        rows.append(_row(f"{size} MB rollout: whole-tree CPU s for one completion", this["cpu_s"], TARGET_CPU_S))
        rows.append(_row(f"{size} MB rollout: the same for the next completion", this["cpu_next_s"], TARGET_CPU_S))
        rows.append(_row(f"{size} MB rollout: idle tree CPU s over the same window", this["idle_cpu_s"], None))
        rows.append(_row(f"{size} MB rollout: s from the append to the POST (grace 0.5)", this["latency_s"], None))
        rows.append(_row(f"{size} MB rollout: s from the append to the POST, next", this["latency_next_s"], None))
        rows.append(_row(f"{size} MB rollout: extra notifications", this["extra"], 0))
        if BASELINE:
            base = _median(runs[("baseline", size)])
            row = _row(f"{size} MB rollout: baseline whole-tree CPU s for one completion", base["cpu_s"], None)
            row["ratio"] = round(base["cpu_s"] / this["cpu_s"], 3) if this["cpu_s"] > 0 else None
            rows.append(row)
            rows.append(_row(f"{size} MB rollout: baseline s from the append to the POST", base["latency_s"], None))
            row = _row(f"{size} MB rollout: baseline CPU s for the next completion", base["cpu_next_s"], None)
            row["ratio"] = round(base["cpu_next_s"] / this["cpu_next_s"], 3) if this["cpu_next_s"] > 0 else None
            rows.append(row)
    if len(SIZES) > 1:
        small, large = (_median(runs[("this tree", s)])["cpu_s"] for s in (SIZES[0], SIZES[-1]))
        rows.append(_row(f"CPU ratio {SIZES[-1]} MB / {SIZES[0]} MB", large / small if small else 0.0, 1.5))
    return rows


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def _row(metric: str, value: float, target: float | None) -> dict[str, Any]:
    return lower_is_better("completion", metric, value, target, digits=4)


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for r in main():
        print(r)
