"""Tap -> agent unblocked, with the real Codex CLI under `donebell run` (issue 28's "done when").

A task asks for permission (``codex exec --approve-for-me``, one escalated call, donebell's own
PermissionRequest hook installed and waiting, ``approvals_enabled``); when its needs-you push has
arrived at the ntfy stand-in, the benchmark taps Allow exactly as the ntfy app does (the `http`
action's POST to the reply topic). Figures per task, from the moment the tap's POST returned:

* **tap -> hook answered**: the waiting hook's log line ``approval: allow from the phone`` (the
  stand-in's stream to the wake role, the ticket's verification, the answer's durable write, the
  hook's next 50 ms look);
* **tap -> agent unblocked**: the allowed command has run (the marker file it creates: its mtime).

Setup as ``bench_approvals``: the e2e suite's product helpers (a temp state dir and config, `donebell
install --service none`, a real supervisor with the wake role subscribed to the stand-in, the CLI
against its scripted model server). One warm-up task, then ``DONEBELL_BENCH_TAP_TASKS`` (8) measured
ones, one after the other. Target: none named; for scale, the agent's own share (an allow printed ->
the command ran) is ``bench_approvals``' last figure.

Run: ``python benchmarks/bench_approval_tap.py`` or ``python -m benchmarks approval_tap``.
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
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from e2e import approval_agents as aa  # noqa: E402
from e2e.agent_proc import start_agent  # noqa: E402
from e2e.product_scenarios import codex_product, log_entries  # noqa: E402
from e2e.test_approvals_answer_e2e import approvals, button  # noqa: E402
from e2e.test_wake import tap  # noqa: E402
from support import npm_clis  # noqa: E402
from support.fake_responses import FakeResponses  # noqa: E402

from benchmarks.rows import lower_is_better  # noqa: E402

TASKS = int(os.environ.get("DONEBELL_BENCH_TAP_TASKS", "8"))


def _task(product: Any, home: Any, i: int) -> dict[str, float]:
    marker = home.workdir / aa.MARKER
    marker.unlink(missing_ok=True)
    seen = {m.get("id") for m in product.messages()}
    agent = start_agent(aa.codex_asking_argv(f"needs approval {i}"), cwd=home.workdir, env=home.env)
    deadline = time.monotonic() + 60
    while True:
        fresh = [
            m for m in product.messages() if m.get("id") not in seen and (m.get("tags") or [""])[0] == "raising_hand"
        ]
        if fresh:
            break
        assert time.monotonic() < deadline, product.diagnostics()
        time.sleep(0.01)
    tap(button(fresh[0], "Allow"))
    tapped = time.time()
    run = agent.wait(90)
    assert not run.timed_out and marker.exists(), run.describe()
    answered = [e["ts"] for e in log_entries(product, hook="codex-permission", msg="approval: allow from the phone")]
    return {
        "tap_to_hook": (max(answered) - tapped) * 1000,
        "tap_to_unblocked": (marker.stat().st_mtime - tapped) * 1000,
    }


def measure() -> list[dict[str, Any]]:
    samples: dict[str, list[float]] = {"tap_to_hook": [], "tap_to_unblocked": []}
    script = {**aa.codex_asking_script()}
    with tempfile.TemporaryDirectory(prefix="donebell-bench-tap-") as tmp:
        for i in range(TASKS + 1):
            with (
                FakeResponses(script) as server,
                codex_product(Path(tmp) / f"t{i}", server, config=approvals()) as (product, home),
            ):
                figures = _task(product, home, i)
            if i:  # the first is the warm-up
                for name, value in figures.items():
                    samples[name].append(value)
    who = f"codex {npm_clis.CODEX_VERSION}"
    rows = []
    for name, label in (("tap_to_hook", "tap -> hook answered"), ("tap_to_unblocked", "tap -> agent unblocked")):
        values = samples[name]
        median, high = statistics.median(values), max(values)
        print(f"{who}: {label}: median {median:.1f} ms, max {high:.1f} ms ({len(values)} taps)")
        rows.append(lower_is_better("approvals", f"{who}: {label}, median ms", median, None, digits=1))
        rows.append(lower_is_better("approvals", f"{who}: {label}, max ms", high, None, digits=1))
    return rows


def main() -> list[dict[str, Any]]:
    if npm_clis.skip_reason() is not None:
        raise RuntimeError(npm_clis.skip_reason())
    return measure()


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for r in main():
        print(r)
