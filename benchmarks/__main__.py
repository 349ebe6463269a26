"""Run every benchmark and print one table: ``python -m benchmarks [NAME ...] [--write]``.

``python -m benchmarks --compare REF [NAME ...]`` runs them on this tree and on git revision REF
alternately and exits 1 when a figure is worse beyond its measured noise (``benchmarks/compare.py``);
with ``--write`` that side-by-side table is what it stores.

Each ``benchmarks/bench_<name>.py`` exposes ``main() -> list[dict]`` returning rows with
``benchmark``, ``metric``, ``value``, ``target`` and optionally ``ratio`` (measured side by side
in the same run). ``--write`` stores the table with the machine's description in
docs/benchmarks.md, between its two ``--write`` markers (the page's other text stays).
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from donebell.shared import platform as host_platform

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "benchmarks.md"
WRITE_START = "<!-- python -m benchmarks --write: start -->"
WRITE_END = "<!-- python -m benchmarks --write: end -->"


def discover() -> list[str]:
    return sorted(p.stem[len("bench_") :] for p in HERE.glob("bench_*.py"))


def compile_package() -> None:
    """Write byte-code caches for donebell, as a real install has them.

    With ``PYTHONDONTWRITEBYTECODE`` set (as in some shells) every process the benchmarks start
    would otherwise recompile stale modules at start-up and inflate the CPU figures.
    """
    import compileall

    for name in ("shared", "workers", "supervisor"):
        compileall.compile_dir(str(HERE.parent / name), quiet=1)


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{host_platform.describe()}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def table(rows: list[dict[str, Any]]) -> str:
    head = ["benchmark", "metric", "value", "target", "ratio"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(h)) for h in head) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("names", nargs="*", help=f"subset of: {', '.join(discover())}")
    parser.add_argument("--write", action="store_true", help="store the table in docs/benchmarks.md")
    parser.add_argument("--compare", metavar="REF", help="also run each benchmark on git revision REF, alternately")
    parser.add_argument("--rounds", type=int, default=3, help="runs per side with --compare (default 3)")
    parser.add_argument("--tree", type=Path, help="with --compare: this other checkout instead of this one")
    args = parser.parse_args(argv)
    names = args.names or discover()
    if unknown := sorted(set(names) - set(discover())):
        parser.error(f"no benchmark named {', '.join(unknown)}; choose from {', '.join(discover())}")
    compile_package()
    if args.compare:
        if args.rounds < 2 or (args.write and args.tree):
            parser.error("--compare needs --rounds >= 2 (the noise is measured); --write compares this tree only")
        from benchmarks import compare

        options = ("--compare", args.compare, "--rounds", str(args.rounds))

        def write(text: str) -> None:
            write_table(text, names, options)
            print(f"wrote {DOC}", file=sys.stderr)

        return compare.main(args.compare, names, args.rounds, args.tree, write=write if args.write else None)
    rows: list[dict[str, Any]] = []
    failed = 0
    for name in names:
        started = time.monotonic()
        print(f"== {name}", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"benchmarks.bench_{name}")
            rows.extend(module.main())
        except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others
            failed += 1
            traceback.print_exc()
            rows.append({"benchmark": name, "metric": "FAILED", "value": None, "target": None})
        print(f"   {time.monotonic() - started:.1f} s", file=sys.stderr)
    text = table(rows)
    print(text)
    if args.write:
        write_table(text, names)
        print(f"wrote {DOC}", file=sys.stderr)
    return 1 if failed else 0


def write_table(text: str, names: list[str], options: tuple[str, ...] = ()) -> None:
    """Put the table between the page's two markers, so the prose around it survives a refresh;
    ``options`` are the command's others (``--compare REF --rounds N``), named in the block."""
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = " ".join(["python -m benchmarks", *options, "--write", *names])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    block = (
        f"{WRITE_START}\nProduced by `{command}` on {stamp} (load average at the end {load}).\n\n"
        f"Machine: {machine()}.\n\n{text}\n{WRITE_END}"
    )
    page = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Benchmarks\n"
    if WRITE_START in page and WRITE_END in page:
        before, rest = page.split(WRITE_START, 1)
        page = before + block + rest.split(WRITE_END, 1)[1]
    else:
        page = page.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(page, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
