"""End-to-end notification latency with the real GitHub Copilot CLI under `donebell run`.

The Copilot twin of ``bench_e2e_claude``: from the task's end to the moment the ntfy stand-in
receives the POST, minus ``idle_grace_seconds`` (0.5, the e2e suite's ``FAST_CONFIG``). "The task's
end" is the root's last ``assistant.turn_end`` record of the session log (its own ``timestamp``:
when Copilot ended the turn, ~20-50 ms before the ``agentStop`` hook starts); the log's last write
(``session.shutdown`` as ``copilot -p`` exits) is a second figure. Target: median <= 20 ms after the
grace, as for Claude Code.

Setup: the e2e suite's Copilot helpers (``tests/e2e/copilot_*.py``): ``donebell install --service
none --copilot``, a real supervisor, the in-process ntfy stand-in and ``copilot -p`` against the
scripted Messages server. The first task after the service started is its own row; then
DONEBELL_BENCH_E2E_TASKS (10) measured ones, one after the other, each its own session.

Run: ``python benchmarks/bench_e2e_copilot.py`` or ``python -m benchmarks e2e_copilot``.
"""

from __future__ import annotations

import argparse
import datetime as dt
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

from e2e.copilot_harness import CopilotHome, run_copilot  # noqa: E402
from e2e.copilot_product import copilot_product  # noqa: E402
from e2e.notes import FAST_CONFIG  # noqa: E402
from e2e.product import Product  # noqa: E402
from support import npm_clis  # noqa: E402
from support.fake_copilot import FakeCopilot, Text  # noqa: E402

from benchmarks.rows import lower_is_better  # noqa: E402

TASKS = int(os.environ.get("DONEBELL_BENCH_E2E_TASKS", "10"))
TARGET_MS = 20.0
GRACE = float(FAST_CONFIG["idle_grace_seconds"])


def turn_end(home: CopilotHome, session: str) -> float:
    """Epoch seconds of the session's last root ``assistant.turn_end`` (a subagent's has a parent call)."""
    ends = [
        e
        for e in home.events(session)
        if e.get("type") == "assistant.turn_end" and not (e.get("data") or {}).get("parentToolCallId")
    ]
    assert ends, f"no root assistant.turn_end in {session}'s log"
    return dt.datetime.fromisoformat(str(ends[-1]["timestamp"]).replace("Z", "+00:00")).timestamp()


def one_task(product: Product, home: CopilotHome, server: FakeCopilot, nth: int) -> tuple[float, float]:
    """Run one task; ms from its turn's end and from its log's last write to its POST, minus the grace."""
    before = set(home.session_ids())
    server.add("main", Text(f"task {nth} done"))
    run = run_copilot(home, f"task {nth}")
    assert run.returncode == 0, run.describe()
    product.standin.wait_for_messages(nth + 1, timeout=30)
    [session] = set(home.session_ids()) - before
    message = product.messages()[nth]
    assert message["message"].startswith(f"task {nth} done"), message
    post = next(r for r in product.standin.requests if message["id"] in r.message_ids)
    log = home.copilot_home / "session-state" / session / "events.jsonl"
    return (
        (post.arrived_wall - turn_end(home, session) - GRACE) * 1000,
        (post.arrived_wall - log.stat().st_mtime - GRACE) * 1000,
    )


def main() -> list[dict[str, Any]]:
    if npm_clis.skip_reason() is not None:
        raise RuntimeError(npm_clis.skip_reason())
    with (
        tempfile.TemporaryDirectory(prefix="donebell-bench-e2e-copilot-") as tmp,
        FakeCopilot({"main": []}) as server,
        copilot_product(Path(tmp), server) as (product, home),
    ):
        first, _ = one_task(product, home, server, 0)
        samples = [one_task(product, home, server, i) for i in range(1, TASKS + 1)]
        time.sleep(1.0)
        extra = len(product.messages()) - (TASKS + 1)
    after_end = [s for s, _ in samples]
    after_write = [w for _, w in samples]
    median = statistics.median(after_end)
    p90 = statistics.quantiles(after_end, n=10)[-1] if len(after_end) > 1 else after_end[0]
    print(
        f"e2e latency over {TASKS} Copilot tasks (idle_grace_seconds {GRACE} subtracted): median {median:.0f} ms "
        f"after the turn's end, {statistics.median(after_write):.0f} ms after the log's last write, p90 {p90:.0f} ms, "
        f"first after start {first:.0f} ms; samples {', '.join(f'{v:.0f}' for v in after_end)}"
    )
    return [
        _row("median ms after the root's last assistant.turn_end, minus idle_grace", median, TARGET_MS),
        _row("p90 ms after the root's last assistant.turn_end, minus idle_grace", p90, None),
        _row("median ms after the session log's last write, minus idle_grace", statistics.median(after_write), None),
        _row("first task after the service started: ms after the turn's end, minus idle_grace", first, None),
        _row("extra notifications", extra, None),
    ]


def _row(metric: str, value: float, target: float | None) -> dict[str, Any]:
    return lower_is_better("e2e_copilot", metric, value, target, digits=1)


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for r in main():
        print(r)
