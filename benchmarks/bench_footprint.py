"""Footprint: the supervisor and its roles sitting idle, with 100 and with 10,000 archived rollouts.

Targets: the default config's service (no remote root: supervisor, delivery, local scanner,
maintenance) <= 0.02 CPU-s per 60 s for the whole process tree, the same at 10,000 archived
rollouts as at 100 (within 1.2x; issue 38); with a remote root watched too, <= 0.1 CPU-s per 60 s,
<= 35 MiB RSS per process and <= 150 MiB in all (issue 29).

Each run is a real ``donebell run`` over a temp ``CODEX_HOME`` holding a real thread index and N
small archived rollouts (and, in the second configuration, a second such home as the
remote-scanner's ``watch_roots``). Once
every role counted a pass, it settles ``DONEBELL_BENCH_SETTLE`` seconds (10), then the CPU time
of every process in the tree (plus reaped children, so a restarting role is not hidden) is read
before and after ``DONEBELL_BENCH_SECONDS`` (60). RSS is per process; USS (memory unique to the
process: shared libraries and the page cache not counted) and PSS (shared pages divided among
their sharers; its sum is what the tree occupies) are printed beside it.

Then, unless ``DONEBELL_BENCH_IMPORTS=0``, what each import costs in a fresh interpreter (RSS and
time), so the RSS rows can be read: which module pushes a role over its budget.

Run: ``python benchmarks/bench_footprint.py`` or ``python -m benchmarks footprint``.
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
for extra in (ROOT, ROOT / "tests"):  # ROOT for benchmarks.rows when run as a script
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from support.codex_home import make_codex_home  # noqa: E402

from benchmarks.rows import share_of_target  # noqa: E402

SECONDS = float(os.environ.get("DONEBELL_BENCH_SECONDS", "60"))
SETTLE = float(os.environ.get("DONEBELL_BENCH_SETTLE", "10"))
SIZES = (100, 10_000)
MIB = 1 << 20
IMPORTS = (
    "json",
    "sqlite3",
    "orjson",
    "psutil",
    "filelock",
    "setproctitle",
    "httpx",
    "pydantic",
    "pydantic_settings",
    "donebell.shared.config.model",
    "donebell.workers.role",
    "donebell.supervisor.run",
    "donebell.workers.maintenance.role",
    "donebell.workers.scanners.local",
    "donebell.workers.scanners.remote",
    "donebell.workers.delivery.role",
)


def _tree(sup: psutil.Process) -> list[psutil.Process]:
    try:
        return [sup, *sup.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _title(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline()).strip() or proc.name()
    except psutil.Error:
        return "?"


def _own_cpu(proc: psutil.Process) -> float:
    """CPU seconds of one live process: nanosecond schedstat on Linux (cpu_times ticks are 10 ms)."""
    try:
        return sum(int(p.read_text().split()[0]) for p in Path(f"/proc/{proc.pid}/task").glob("*/schedstat")) / 1e9
    except (OSError, ValueError, IndexError):
        t = proc.cpu_times()
        return float(t.user + t.system)


def _cpu(sup: psutil.Process) -> tuple[dict[tuple[int, float], float], dict[tuple[int, float], float]]:
    """Each live process's own CPU, and the CPU of the children it reaped (one-shot runs, restarts)."""
    own: dict[tuple[int, float], float] = {}
    reaped: dict[tuple[int, float], float] = {}
    for proc in _tree(sup):
        try:
            key = (proc.pid, proc.create_time())
            own[key] = _own_cpu(proc)
            t = proc.cpu_times()
            reaped[key] = t.children_user + t.children_system
        except psutil.Error:
            continue
    return own, reaped


def measure(archived: int, extra_env: dict[str, str] | None = None, *, remote_root: bool = True) -> dict[str, Any]:
    """The idle tree over ``archived`` rollouts (``extra_env``: e.g. ``DONEBELL_FORCE_PORTABLE``),
    with a remote root of as many rollouts watched, or (``remote_root`` False) the default config's
    service: no remote root, so no remote-scanner."""
    with tempfile.TemporaryDirectory(prefix="donebell-footprint-") as tmp:
        base = Path(tmp)
        env = _service_env(base, archived, remote_root, extra_env or {})
        proc = subprocess.Popen(
            [sys.executable, "-m", "donebell.supervisor.cli", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(base / "run.err", "wb"),
        )
        sup = psutil.Process(proc.pid)
        try:
            _wait_ready(base / "state" / "health" / "supervisor.json")
            time.sleep(SETTLE)
            health = base / "state" / "health" / "remote-scanner.json"
            runs0 = _remote_runs(health)
            cpu0, reaped0 = _cpu(sup)
            time.sleep(SECONDS)
            cpu1, reaped1 = _cpu(sup)
            runs = _remote_runs(health) - runs0
            rss, uss, pss = {}, {}, {}
            for p in _tree(sup):
                try:
                    info = p.memory_full_info()
                    rss[_title(p)], uss[_title(p)] = info.rss / MIB, info.uss / MIB
                    pss[_title(p)] = getattr(info, "pss", info.uss) / MIB  # PSS: Linux only
                except psutil.Error:
                    continue
            titles = {k: _title_of(k[0]) for k in cpu1}
            supervisor = json.loads((base / "state" / "health" / "supervisor.json").read_text())
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        per_process = {k: cpu1[k] - cpu0.get(k, 0.0) + reaped1[k] - reaped0.get(k, 0.0) for k in cpu1}
        total = sum(per_process.values())
        # The remote-scanner's root runs are its reaped children: their CPU, per run.
        runs_cpu = sum(reaped1[k] - reaped0.get(k, 0.0) for k in cpu1 if "remote-scanner" in titles[k])
        return {
            "cpu_per_60s": total * 60.0 / SECONDS,
            "cpu_by_process": {titles[k]: v * 60.0 / SECONDS for k, v in per_process.items()},
            "rss": rss,
            "uss": uss,
            "pss": pss,
            "restarts": {n: e.get("restarts") for n, e in supervisor.get("roles", {}).items()},
            "states": {n: e.get("state") for n, e in supervisor.get("roles", {}).items()},
            # The remote-scanner starts one child per root every watch_scan_seconds (60 s): a 60 s
            # window holds one or two of them. Normalized: the rest of the tree + one run's cost.
            "remote_runs": runs,
            "cpu_per_60s_one_remote_run": (total - runs_cpu) * 60.0 / SECONDS + runs_cpu / runs if runs else None,
            "cpu_per_remote_run": runs_cpu / runs if runs else None,
        }


def _service_env(base: Path, archived: int, remote_root: bool, extra_env: dict[str, str]) -> dict[str, str]:
    """A config, state dir and agent homes under ``base``; the service's environment."""
    codex = make_codex_home(base / "codex", archived)
    settings: dict[str, Any] = {"server": "http://127.0.0.1:9", "topic": "bench"}
    if remote_root:
        settings["watch_roots"] = [str(make_codex_home(base / "remote", archived))]
    config = base / "config.json"
    config.write_text(json.dumps(settings))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
    env.update(DONEBELL_STATE_DIR=str(base / "state"), DONEBELL_CONFIG=str(config), CODEX_HOME=str(codex))
    env.update(CLAUDE_CONFIG_DIR=str(base / "claude"), COPILOT_HOME=str(base / "copilot"), **extra_env)
    return env


def _remote_runs(health: Path) -> int:
    try:
        return int(json.loads(health.read_text()).get("counters", {}).get("runs", 0))
    except (OSError, ValueError):
        return 0


def _title_of(pid: int) -> str:
    try:
        return _title(psutil.Process(pid))
    except psutil.Error:
        return f"pid {pid} (exited)"


def _wait_ready(path: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if json.loads(path.read_text()).get("ready_at"):
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError("the supervisor did not report ready")


def import_costs() -> list[dict[str, Any]]:
    """RSS and wall time of importing each module alone in a fresh interpreter."""
    probe = (
        "import resource, sys, time; t = time.perf_counter(); import {m}; "
        "print(time.perf_counter() - t, open('/proc/self/statm').read().split()[1])"
    )
    rows: list[dict[str, Any]] = []
    for module in ("", *IMPORTS):
        code = probe.format(m=module) if module else probe.replace("import {m}; ", "")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            rows.append({"module": module, "error": res.stderr.strip().splitlines()[-1:]})
            continue
        seconds, pages = res.stdout.split()
        rows.append(
            {
                "module": module or "(bare interpreter)",
                "seconds": float(seconds),
                "rss_mib": int(pages) * os.sysconf("SC_PAGE_SIZE") / MIB,
            }
        )
    return rows


def _default_config_rows() -> list[dict[str, Any]]:
    """Issue 38: the default config's service (supervisor, delivery, local scanner, maintenance)
    idle at <= 0.02 CPU-s per 60 s, the same at 10,000 archived rollouts as at 100."""
    plain = {n: measure(n, remote_root=False) for n in SIZES}
    rows: list[dict[str, Any]] = []
    for n in SIZES:
        rows.append(
            _row(
                f"default config (no remote root): tree CPU-s per 60 s idle @{n} archived",
                plain[n]["cpu_per_60s"],
                0.02,
            )
        )
    low, high = (plain[n]["cpu_per_60s"] for n in SIZES)
    rows.append(_row("default config: CPU ratio 10,000 / 100 archived", high / low if low else float("inf"), 1.2))
    for n in SIZES:
        print(f"\ndefault config, @{n} archived rollouts: CPU s/60s by process:")
        for title, cpu in sorted(plain[n]["cpu_by_process"].items()):
            print(f"  {title[:48]:<48} {cpu:.4f}")
    return rows


def main() -> list[dict[str, Any]]:
    rows = _default_config_rows()
    # Issue 29's configuration: a remote root watched too (its scanner runs a child once a minute).
    results = {n: measure(n) for n in SIZES}
    low, high = (results[n]["cpu_per_60s_one_remote_run"] or results[n]["cpu_per_60s"] for n in SIZES)
    for n in SIZES:
        r = results[n]
        rows.append(_row(f"tree CPU-s per 60 s idle @{n} archived", r["cpu_per_60s"], 0.1))
        remote = sum(v for k, v in r["cpu_by_process"].items() if "remote-scanner" in k)
        rows.append(_row(f"  of which remote-scanner (+ its {r['remote_runs']} root runs) @{n}", remote, None))
        if r["cpu_per_remote_run"] is not None:
            rows.append(_row(f"  CPU-s of one remote root run (child process) @{n}", r["cpu_per_remote_run"], None))
        if r["cpu_per_60s_one_remote_run"] is not None:
            rows.append(
                _row(f"tree CPU-s per 60 s, one remote run per 60 s @{n}", r["cpu_per_60s_one_remote_run"], 0.1)
            )
        rows.append(_row(f"max RSS per process (MiB) @{n}", max(r["rss"].values()), 35))
        rows.append(_row(f"total RSS (MiB) @{n}", sum(r["rss"].values()), 150))
        rows.append(_row(f"total USS (MiB) @{n}", sum(r["uss"].values()), None))
        # The memory budget of issue 29 (default roles): PSS counts the pages the roles share with
        # the supervisor they were forked from once, where the RSS sum counts them per process.
        rows.append(_row(f"total PSS (MiB) @{n}", sum(r["pss"].values()), 60))
    rows.append(_row("CPU ratio 10,000 / 100 archived (one remote run each)", high / low if low else float("inf"), 1.2))
    for n in SIZES:
        r = results[n]
        print(f"\n@{n} archived rollouts: roles {r['states']}, restarts {r['restarts']}")
        for title in sorted(r["rss"]):
            cpu = r["cpu_by_process"].get(title, 0.0)
            print(
                f"  {title[:48]:<48} RSS {r['rss'][title]:6.1f} MiB  USS {r['uss'][title]:6.1f} MiB  "
                f"PSS {r['pss'][title]:6.1f} MiB  CPU {cpu:.4f} s/60s"
            )
    if os.environ.get("DONEBELL_BENCH_IMPORTS", "1") != "0":
        print("\nimport cost in a fresh interpreter (RSS after import, wall time):")
        for item in import_costs():
            if "error" in item:
                print(f"  {item['module']:<34} not importable: {item['error']}")
            else:
                print(f"  {item['module']:<34} {item['rss_mib']:6.1f} MiB  {item['seconds'] * 1000:6.0f} ms")
    print()
    for row in rows:
        ratio = f"  ratio {row['ratio']:.2f}" if "ratio" in row else ""
        print(f"{row['benchmark']}: {row['metric']} = {row['value']:.4g} (target {row['target']}){ratio}")
    return rows


def _row(metric: str, value: float, target: float | None) -> dict[str, Any]:
    return share_of_target("footprint", metric, value, target)


if __name__ == "__main__":
    # --help (or any argument) must never start a run that takes minutes.
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
