"""Hook time-to-durable: from exec of the installed Claude StopFailure hook to its durable candidate.

Claude Code 2.1.332 sends a print-mode StopFailure hook SIGTERM 22–29 ms after starting it and
SIGKILL ~1.5 s later, so what matters is how long the hook needs until its candidate is durable
(written, fsynced, renamed into ``pending/``) and that a SIGTERM in between does not stop it.
Each run starts the command exactly as ``donebell install --claude`` writes it (``/bin/sh``
signal shield, then the ``donebell`` console script) with the recorded StopFailure payload of a
fresh, announced prompt (its UserPromptSubmit ran first, untimed). Durable = the timestamp of the
hook's ``claude claude-stopfailure: created`` log line, written right after the candidate's
rename (ms resolution). Three kinds of run are interleaved, so machine noise hits them alike:

* ``base``: ``python -I -c pass`` wall time, the interpreter's own start-up;
* ``quiet``: no signal;
* ``SIGTERM at 25 ms``: as Claude does (and SIGKILL 1.5 s later, if the hook still ran); the
  runs that left no candidate are counted;
* the same SIGTERM against the bare ``donebell hook claude`` (no shell shield, what earlier
  installs wrote): how many runs a signal during interpreter start-up still kills.

Installs as in ``bench_hook``: a throwaway wheel install (``installed``) and this editable venv.
``python -m benchmarks hook_durable``; ``DONEBELL_BENCH_RUNS`` sets the runs (default 60).
"""

from __future__ import annotations

import argparse
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

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_hook import interpreters

REPO = Path(__file__).resolve().parents[1]
EVENTS = REPO / "tests" / "fixtures" / "hooks" / "claude" / "print-apierror529" / "hooks.jsonl"
SIGTERM_AT = 0.025  # Claude 2.1.332: 22-29 ms after the hook starts
SIGKILL_AFTER = 1.5
CREATED = "claude claude-stopfailure: created"


def _shielded(script: Path) -> list[str]:
    from donebell.workers.agents.claude.install import claude_group

    [handler] = claude_group("StopFailure", str(script), exec_form=True)["hooks"]
    return [handler["command"], *handler["args"]]


class Setup:
    def __init__(self, label: str, python: Path, tmp: Path) -> None:
        self.label, self.python = label, python
        root = tmp / label
        root.mkdir(parents=True)
        self.state = root / "state"
        (root / "config.json").write_text("{}")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env.update(
            {
                "DONEBELL_STATE_DIR": str(self.state),
                "DONEBELL_CONFIG": str(root / "config.json"),
                "CLAUDE_CONFIG_DIR": str(root / "claude"),
                "DONEBELL_KICK_COMMAND": "off",
                "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
            }
        )
        events = [json.loads(line)["payload"] for line in EVENTS.read_text().splitlines() if line.strip()]
        self.prompt = next(e for e in events if e["hook_event_name"] == "UserPromptSubmit")
        self.failure = next(e for e in events if e["hook_event_name"] == "StopFailure")
        self.command = _shielded(python.parent / "donebell")
        self.bare = [str(python.parent / "donebell"), "hook", "claude"]

    def announce(self, session: str) -> bytes:
        """Run the prompt's UserPromptSubmit (untimed); return the StopFailure payload."""
        data = json.dumps({**self.prompt, "session_id": session}).encode()
        subprocess.run(self.command, input=data, env=self.env, check=True, capture_output=True)
        return json.dumps({**self.failure, "session_id": session}).encode()

    def created_at(self, session: str) -> float | None:
        """The log timestamp of this session's durable candidate, if it was written."""
        for line in (self.state / "notify.log").read_text().splitlines():
            if session in line and CREATED in line:
                return float(json.loads(line)["ts"])
        return None


def _run(setup: Setup, payload: bytes, sigterm: bool, command: list[str] | None = None) -> float:
    """Start the hook, optionally SIGTERM it like Claude; return its exec time (epoch seconds)."""
    started = time.time()
    proc = subprocess.Popen(
        command or setup.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=setup.env,
    )
    assert proc.stdin is not None
    proc.stdin.write(payload)
    proc.stdin.close()
    if sigterm:
        time.sleep(max(0.0, started + SIGTERM_AT - time.time()))
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=SIGKILL_AFTER)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()
    return started


def _base(python: Path) -> float:
    started = time.perf_counter()
    subprocess.run([str(python), "-I", "-c", "pass"], check=True)
    return time.perf_counter() - started


def measure(setup: Setup, runs: int) -> dict[str, Any]:
    base: list[float] = []
    durable: dict[bool, list[float]] = {False: [], True: []}
    lost = bare_lost = 0
    for run in range(-2, runs):  # two warm-up rounds (byte-code caches, page cache)
        for sigterm in (False, True):
            session = f"bench-{setup.label}-{run}-{int(sigterm)}"
            payload = setup.announce(session)
            started = _run(setup, payload, sigterm)
            created = setup.created_at(session)
            if run < 0:
                continue
            if created is None:
                lost += sigterm
                continue
            durable[sigterm].append(created - started)
        session = f"bench-{setup.label}-{run}-bare"
        _run(setup, setup.announce(session), True, setup.bare)
        if run >= 0:
            bare_lost += setup.created_at(session) is None
            base.append(_base(setup.python))
    return {"base": base, "quiet": durable[False], "sigterm": durable[True], "lost": lost, "bare_lost": bare_lost}


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) > 1 else values[0]


def main() -> list[dict[str, Any]]:
    runs = int(os.environ.get("DONEBELL_BENCH_RUNS", "60"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-hook-durable-") as name:
        tmp = Path(name)
        setups = [Setup(label, python, tmp) for label, python in interpreters(tmp)]
        results = {setup.label: measure(setup, runs) for setup in setups}
    for label, result in results.items():
        base = statistics.median(result["base"])
        row = {"benchmark": "hook_durable"}
        rows.append({**row, "metric": f"{label}: python -I -c pass wall, median (ms)", "value": base * 1000})
        for kind, title in (("quiet", "no signal"), ("sigterm", f"SIGTERM at {SIGTERM_AT * 1000:.0f} ms")):
            values = result[kind]
            if not values:
                rows.append({**row, "metric": f"{label}: StopFailure time-to-durable, {title}", "value": None})
                continue
            median, p99 = statistics.median(values), _p99(values)
            rows.append(
                {
                    **row,
                    "metric": f"{label}: StopFailure time-to-durable, {title}, median (ms)",
                    "value": median * 1000,
                    "ratio": round(median / base, 2),
                }
            )
            rows.append(
                {
                    **row,
                    "metric": f"{label}: StopFailure time-to-durable, {title}, p99 (ms)",
                    "value": p99 * 1000,
                    "target": "< 1500 (Claude's SIGKILL)",
                    "ratio": round(p99 / base, 2),
                }
            )
        rows.append(
            {
                **row,
                "metric": f"{label}: of {runs} runs SIGTERMed at 25 ms, left no candidate",
                "value": result["lost"],
                "target": "0",
            }
        )
        rows.append(
            {
                **row,
                "metric": f"{label}: the same without the shell shield (bare console script)",
                "value": result["bare_lost"],
            }
        )
    for line in rows:
        print(line)
    return rows


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
