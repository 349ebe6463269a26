"""`python benchmarks/bench_X.py --help` prints its description and exits; it never starts the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_help_describes_and_does_not_run(script: Path, tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage:") and res.stderr == ""
    first_doc_line = (script.read_text().split('"""')[1].strip().splitlines() or [""])[0]
    assert first_doc_line[:40] in res.stdout
    assert list(tmp_path.iterdir()) == []  # nothing was measured, nothing written


@pytest.mark.parametrize("script", BENCHMARKS[:1], ids=[p.stem for p in BENCHMARKS[:1]])
def test_an_unknown_argument_is_refused(script: Path) -> None:
    res = subprocess.run([sys.executable, str(script), "--bogus"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "unrecognized arguments" in res.stderr


def test_the_crash_point_count_runs_against_the_current_command_table(tmp_path: Path) -> None:
    """The reliability benchmark's operation count runs each process through the CLI by import
    (the house move once left it importing the old module: every run died in an IndexError)."""
    sys.path.insert(0, str(BENCHMARKS[0].parents[1]))
    try:
        from benchmarks.bench_reliability import _crash_points
    finally:
        sys.path.pop(0)
    counts = {row["metric"]: row["value"] for row in _crash_points(tmp_path)}
    assert len(counts) == 3 and all(isinstance(n, int) and n > 5 for n in counts.values()), counts
