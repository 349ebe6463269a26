"""End-to-end notification latency with the real Claude Code CLI under `donebell run`.

The Claude twin of ``bench_e2e_latency``: from the transcript's last write (its mtime once the
task is over: the quiet window the gate waits starts there) to the moment the ntfy stand-in
receives the POST, minus ``idle_grace_seconds`` (0.5, the e2e suite's ``FAST_CONFIG``). Target:
median <= 20 ms after the grace.

Setup: the e2e suite's product helpers, ``donebell install --service none --claude``, a real
supervisor, the in-process ntfy stand-in and ``claude -p`` against the scripted Messages server.
The first task after the service started is its own row (the first notification pays what the
roles load on first use); then DONEBELL_BENCH_E2E_TASKS (10) measured ones, one after the other.

Run: ``python benchmarks/bench_e2e_claude.py`` or ``python -m benchmarks e2e_claude``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests"):  # ROOT for benchmarks.rows when run as a script
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from e2e.harness import ClaudeHome, run_claude  # noqa: E402
from e2e.notes import FAST_CONFIG  # noqa: E402
from e2e.product import Product  # noqa: E402
from e2e.product_scenarios import claude_product  # noqa: E402
from support import npm_clis  # noqa: E402
from support.fake_messages import FakeMessages, Text  # noqa: E402

from benchmarks.rows import lower_is_better  # noqa: E402

TASKS = int(os.environ.get("DONEBELL_BENCH_E2E_TASKS", "10"))
TARGET_MS = 20.0
GRACE = float(FAST_CONFIG["idle_grace_seconds"])


def one_task(product: Product, home: ClaudeHome, server: FakeMessages, nth: int) -> float:
    """Run one task; ms from its transcript's last write to its POST, minus the grace."""
    before = set(home.transcripts())
    server.add("main", Text(f"task {nth} done"))
    run = run_claude(home, f"task {nth}")
    assert run.returncode == 0, run.describe()
    product.standin.wait_for_messages(nth + 1, timeout=30)
    [transcript] = set(home.transcripts()) - before
    message = product.messages()[nth]
    assert message["message"].startswith(f"task {nth} done"), message
    post = next(r for r in product.standin.requests if message["id"] in r.message_ids)
    return (post.arrived_wall - transcript.stat().st_mtime - GRACE) * 1000


def main() -> list[dict[str, Any]]:
    if npm_clis.skip_reason() is not None:
        raise RuntimeError(npm_clis.skip_reason())
    with (
        tempfile.TemporaryDirectory(prefix="donebell-bench-e2e-claude-") as tmp,
        FakeMessages({"main": []}) as server,
        claude_product(Path(tmp), server) as (product, home),
    ):
        first = one_task(product, home, server, 0)
        samples = [one_task(product, home, server, i) for i in range(1, TASKS + 1)]
        time.sleep(1.0)
        extra = len(product.messages()) - (TASKS + 1)
    median = statistics.median(samples)
    p90 = statistics.quantiles(samples, n=10)[-1] if len(samples) > 1 else samples[0]
    print(
        f"e2e latency over {TASKS} Claude tasks (idle_grace_seconds {GRACE} subtracted): median {median:.0f} ms, "
        f"p90 {p90:.0f} ms, first after start {first:.0f} ms; samples {', '.join(f'{v:.0f}' for v in samples)}"
    )
    return [
        _row("median ms after the transcript's last write, minus idle_grace", median, TARGET_MS),
        _row("p90 ms after the transcript's last write, minus idle_grace", p90, None),
        _row("first task after the service started: ms after the last write, minus idle_grace", first, None),
        _row("extra notifications", extra, None),
    ]


def _row(metric: str, value: float, target: float | None) -> dict[str, Any]:
    return lower_is_better("e2e_claude", metric, value, target, digits=1)


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for r in main():
        print(r)
