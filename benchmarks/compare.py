"""``python -m benchmarks --compare REF``: every benchmark on this tree and on REF, alternately.

REF (any git revision) is checked out in a temporary ``git worktree`` and installed into its own
virtual environment with its own packaging (``pip install -e``, no dependencies: the environment
sees this interpreter's site-packages for those). Then each benchmark runs ``--rounds`` times on
each side, alternating the order round by round (A B, B A, ...) so a machine that slows down
during the run hurts both sides alike. Both sides run *this* tree's benchmark code, so the probe
is the same; only the donebell it imports and starts differs.

For every numeric figure it prints both medians, each side's spread (min-max over the rounds) and
the ratio this / REF. A figure is **worse** when its cost (a rate counts as time per unit) is
higher than REF's by more than the noise measured in this run (the larger relative spread of the
two sides' costs, at least ``MIN_TOLERANCE``) and the two sides' ranges do not overlap; then the
exit status is 1.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Below this relative difference a figure is never called worse, however tight its spread.
MIN_TOLERANCE = 0.10
MARK = "@@donebell-bench-rows@@ "
#: Run inside each side's interpreter: import this tree's benchmark, print its rows as JSON.
DRIVER = (
    "import json, sys; sys.path.insert(0, sys.argv[1]); import importlib; "
    f"rows = importlib.import_module('benchmarks.bench_' + sys.argv[2]).main(); print({MARK!r} + json.dumps(rows))"
)
#: Metrics where a bigger number is the better one; every other figure (time, CPU, memory) is a cost.
HIGHER_IS_BETTER = ("records/s", " rate")


@dataclass
class Side:
    label: str
    python: str
    runs: dict[tuple[str, str], list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    benchmark: str
    metric: str
    this: list[float]
    ref: list[float]

    @property
    def higher_is_better(self) -> bool:
        return any(word in self.metric for word in HIGHER_IS_BETTER)

    @property
    def ratio(self) -> float | None:
        ref = statistics.median(self.ref)
        return statistics.median(self.this) / ref if ref else None

    @property
    def costs(self) -> tuple[list[float], list[float]]:
        """Both sides as costs: a rate becomes seconds per unit, so a slowdown reads the same way
        for every metric and the noise is not bounded by 100 % (a rate cannot drop below zero)."""
        if not self.higher_is_better:
            return self.this, self.ref
        return [_per_unit(v) for v in self.this], [_per_unit(v) for v in self.ref]

    @property
    def noise(self) -> float:
        spreads = [_spread_of(side) for side in self.costs]
        return max([MIN_TOLERANCE, *(s for s in spreads if math.isfinite(s))])

    @property
    def worse(self) -> bool:
        this, ref = self.costs
        ref_median = statistics.median(ref)
        if not ref_median:
            return False
        return statistics.median(this) / ref_median > 1 + self.noise and min(this) > max(ref)


def _per_unit(rate: float) -> float:
    return 1 / rate if rate > 0 else math.inf


def _spread_of(values: list[float]) -> float:
    median = statistics.median(values)
    return (max(values) - min(values)) / abs(median) if median and math.isfinite(median) else math.nan


def build_env(tree: Path, into: Path) -> str:
    """A virtual environment at ``into`` with ``tree`` installed editable; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(into)], check=True)
    python = str(into / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Dependencies (and pip itself) come from this interpreter's site-packages, appended after
    # the new environment's own: REF's donebell is the one its editable install maps.
    Path(purelib, "_donebell_compare_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    install = [python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(tree)]
    if subprocess.run([*install, "--no-build-isolation"], capture_output=True).returncode != 0:
        subprocess.run(install, check=True)  # REF's build backend is not here: let pip fetch it
    return python


@contextmanager
def ref_checkout(ref: str) -> Iterator[tuple[str, Path]]:
    """REF checked out in a temporary worktree of this repository: (its commit, its folder)."""
    repo = HERE.parent
    sha = _git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}")
    tmp = Path(tempfile.mkdtemp(prefix="donebell-compare-"))
    tree = tmp / "tree"
    _git(repo, "worktree", "add", "--detach", "--quiet", str(tree), sha)
    try:
        yield sha, tree
    finally:
        _git(repo, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(tmp, ignore_errors=True)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def run_once(side: Side, name: str) -> None:
    """One run of benchmark ``name`` with ``side``'s interpreter; its numeric rows recorded."""
    print(f"== {name} on {side.label}", file=sys.stderr, flush=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(
        [side.python, "-c", DRIVER, str(HERE.parent), name],
        cwd=HERE.parent,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"benchmark {name} failed on {side.label} (exit {proc.returncode})")
    for row in json.loads(lines[-1][len(MARK) :]):
        value = row.get("value")
        if isinstance(value, int | float) and not isinstance(value, bool):
            side.runs.setdefault((str(row["benchmark"]), str(row["metric"])), []).append(float(value))


def compare(this: Side, ref: Side, names: list[str], rounds: int) -> list[Verdict]:
    for name in names:
        for round_no in range(rounds):
            for side in (this, ref) if round_no % 2 == 0 else (ref, this):
                run_once(side, name)
    return [Verdict(b, m, v, ref.runs[(b, m)]) for (b, m), v in this.runs.items() if (b, m) in ref.runs]


def table(verdicts: list[Verdict], ref_label: str) -> str:
    head = ["benchmark", "metric", "this tree (min-max)", f"{ref_label} (min-max)", "this / ref", "noise", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in verdicts:
        ratio = "" if v.ratio is None else f"{v.ratio:.3g}"
        verdict = "WORSE" if v.worse else "within noise or better"
        cells = [v.benchmark, v.metric, _spread(v.this), _spread(v.ref), ratio, f"±{v.noise:.0%}", verdict]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.4g} ({min(values):.4g}-{max(values):.4g})"


def main(
    ref: str, names: list[str], rounds: int, tree: Path | None = None, write: Callable[[str], None] | None = None
) -> int:
    """Compare ``tree`` (default: this checkout, with this interpreter) against ``ref``; exit status.
    ``write`` receives the table (``--write``: docs/benchmarks.md), verdicts and all."""
    with ref_checkout(ref) as (sha, ref_tree), tempfile.TemporaryDirectory(prefix="donebell-compare-env-") as envs:
        ref_side = Side(f"{ref} ({sha[:7]})", build_env(ref_tree, Path(envs) / "ref"))
        this_python = sys.executable if tree is None else build_env(tree, Path(envs) / "this")
        this_side = Side("this tree" if tree is None else str(tree), this_python)
        verdicts = compare(this_side, ref_side, names, rounds)
    text = table(verdicts, ref_side.label)
    print(text)
    if write is not None:
        write(text)
    worse = [v for v in verdicts if v.worse]
    for v in worse:
        print(
            f"WORSE: {v.benchmark}: {v.metric}: {v.ratio:.3g}x {ref} beyond the noise ±{v.noise:.0%}", file=sys.stderr
        )
    return 1 if worse else 0
