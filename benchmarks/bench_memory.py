"""Memory of the service: roles forked from the preloaded supervisor against roles exec'd, side by side.

Targets (issue 29): the whole tree of ``donebell run`` <= 60 MiB with the default roles and <= 90
MiB with every role on (wake included); issue 38: <= 40 MiB for the default config's service (no
remote root watched: the supervisor and 3 roles). Per process it prints RSS, USS (pages only that process
maps) and PSS (each shared page divided among its sharers); the sums are compared with the
targets in PSS, the memory the tree really occupies: forked roles share the supervisor's pages,
and RSS counts those once per process, so the RSS sum overstates a forked tree (it is printed
too). PSS also hands part of a library's pages to other programs mapping it (any other Python on
the machine), so as root it prints the strictest figure as well: the distinct page frames the
tree maps, each counted once, as if donebell ran alone (``tests/support/page_frames.py``). ``DONEBELL_ROLE_START=exec`` (each role its own interpreter, how every role started before
the fork) is the "before" column, measured in the same run.

Each run is a real ``donebell run`` over a temp state dir, Codex home (100 archived rollouts)
and a remote root (so the remote-scanner runs); once every role counted a pass it settles
``DONEBELL_BENCH_MEMORY_SETTLE`` seconds (5) before the reading.

Run: ``python benchmarks/bench_memory.py`` or ``python -m benchmarks memory``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests"):  # ROOT for the other benchmarks' helpers when run as a script
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from support.codex_home import make_codex_home  # noqa: E402
from support.page_frames import distinct_frames_mib  # noqa: E402

from benchmarks.bench_footprint import _wait_ready  # noqa: E402
from benchmarks.rows import share_of_target  # noqa: E402

MIB = 1 << 20
SETTLE = float(os.environ.get("DONEBELL_BENCH_MEMORY_SETTLE", "5"))
WAKE = {"wake_enabled": True, "wake_topic": "wake-bench-topic-m3", "wake_allow_unauthenticated": True}
TARGETS = {"default roles": 60.0, "every role (wake on)": 90.0, "default config (no remote root)": 40.0}
#: What each configuration runs: (wake on, a remote root watched). The default config watches no
#: remote root, so its service is the supervisor and 3 roles (issue 38's "default service").
CONFIGS = {
    "default config (no remote root)": (False, False),
    "default roles": (False, True),
    "every role (wake on)": (True, True),
}


def measure(
    with_wake: bool, start: str, remote: bool = True
) -> tuple[dict[str, tuple[float, float, float]], float | None]:
    """``title -> (RSS, USS, PSS)`` in MiB of every process of a settled ``donebell run``, and
    the MiB of distinct page frames the whole tree maps (None unless root)."""
    with tempfile.TemporaryDirectory(prefix="donebell-bench-memory-") as tmp:
        base = Path(tmp)
        config: dict[str, object] = {"server": "http://127.0.0.1:9", "topic": "bench"}
        if remote:
            config["watch_roots"] = [str(make_codex_home(base / "r"))]
        if with_wake:
            config.update(WAKE)
        (base / "config.json").write_text(json.dumps(config))
        os.chmod(base / "config.json", 0o600)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
        env.update(DONEBELL_STATE_DIR=str(base / "state"), DONEBELL_CONFIG=str(base / "config.json"))
        env.update(CODEX_HOME=str(make_codex_home(base / "codex", 100)), CLAUDE_CONFIG_DIR=str(base / "claude"))
        env["COPILOT_HOME"] = str(base / "copilot")  # not the real ~/.copilot: its scanner watches it
        env["DONEBELL_ROLE_START"] = start
        proc = subprocess.Popen(
            [sys.executable, "-m", "donebell.supervisor.cli", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_ready(base / "state" / "health" / "supervisor.json")
            time.sleep(SETTLE)
            sup = psutil.Process(proc.pid)
            out = {}
            tree = [sup, *sup.children(recursive=True)]
            for p in tree:
                info = p.memory_full_info()
                out[" ".join(p.cmdline()).strip()] = (info.rss / MIB, info.uss / MIB, info.pss / MIB)
            return out, distinct_frames_mib(p.pid for p in tree)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def main() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for label, (wake, remote) in CONFIGS.items():
        measured = {start: measure(wake, start, remote) for start in ("exec", "fork")}
        runs = {start: tree for start, (tree, _) in measured.items()}
        for start, tree in runs.items():
            print(f"\n{label}, roles started by {start}:")
            for title, (rss, uss, pss) in tree.items():
                print(f"  {title[:32]:<32} RSS {rss:6.1f}  USS {uss:6.1f}  PSS {pss:6.1f} MiB")
        totals = {start: [sum(v[i] for v in tree.values()) for i in range(3)] for start, tree in runs.items()}
        for i, figure in enumerate(("RSS", "USS", "PSS")):
            for start in ("exec", "fork"):
                target = TARGETS[label] if (figure, start) == ("PSS", "fork") else None
                rows.append(_row(f"{label}, {start}", f"total {figure} (MiB)", totals[start][i], target))
            rows.append(_row(label, f"total {figure} fork / exec", totals["fork"][i] / totals["exec"][i], None))
        for start, (_, frames) in measured.items():
            if frames is not None:  # (root only)
                target = TARGETS[label] if start == "fork" else None
                rows.append(_row(f"{label}, {start}", "distinct page frames of the tree (MiB)", frames, target))
    print()
    for row in rows:
        ratio = f"  ratio {row['ratio']:.2f}" if "ratio" in row else ""
        print(f"memory ({row['benchmark']}): {row['metric']} = {row['value']:.4g} (target {row['target']}){ratio}")
    return rows


def _row(name: str, metric: str, value: float, target: float | None) -> dict[str, Any]:
    return share_of_target(name, metric, value, target)


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
