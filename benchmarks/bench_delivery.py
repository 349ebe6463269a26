"""Delivery throughput: 1,000 queued outbox records drain to the local ntfy stand-in.

Target: >= 100 records/s over one keep-alive connection. The drain runs in a real
`donebell worker delivery --once` process against the stand-in on 127.0.0.1, with the full
durable path per record (read, render, POST, fsynced receipt, removal). Two figures:

* drain rate: records / (last request - first request), what the role sustains;
* end-to-end rate: records / whole process run, start-up (~0.3 s of imports) included.

Run: ``python benchmarks/bench_delivery.py`` (``DONEBELL_BENCH_RECORDS`` changes the count).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from support.delivery_kit import Env  # noqa: E402
from support.ntfy_standin import NtfyStandin  # noqa: E402

RECORDS = int(os.environ.get("DONEBELL_BENCH_RECORDS", "1000"))
TARGET_RATE = 100.0


def main() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="donebell-bench-") as tmp, NtfyStandin() as srv:
        env = Env(Path(tmp), server=srv.url, include_message=True)
        for i in range(RECORDS):
            env.queue(last_message=f"**Task {i} done**: all tests pass. " * 3)
        started = time.monotonic()
        run = env.run_cli("worker", "delivery", "--once", timeout=600)
        wall = time.monotonic() - started
        if run.returncode != 0:
            raise RuntimeError(f"delivery worker failed: {run.stderr.strip()}")
        sent = env.state.count("sent")
        requests = srv.requests
        span = requests[-1].arrived_monotonic - requests[0].arrived_monotonic if len(requests) > 1 else wall
        drain_rate = (len(requests) - 1) / span if span > 0 else float("inf")
        rows = [
            _row("drain rate (records/s)", drain_rate, TARGET_RATE),
            _row("end-to-end rate incl. start-up (records/s)", RECORDS / wall, TARGET_RATE),
            _row("connections used", srv.connections_opened, 1, higher_is_better=False),
            _row("records delivered", sent, RECORDS),
        ]
    for row in rows:
        ratio = f"  ratio {row['ratio']:.2f}" if "ratio" in row else ""
        print(f"{row['benchmark']}: {row['metric']} = {row['value']:.1f} (target {row['target']}){ratio}")
    return rows


def _row(metric: str, value: float, target: float, *, higher_is_better: bool = True) -> dict[str, Any]:
    row: dict[str, Any] = {"benchmark": "delivery", "metric": metric, "value": round(float(value), 2), "target": target}
    if value and target:
        row["ratio"] = round(value / target if higher_is_better else target / value, 3)
    return row


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
