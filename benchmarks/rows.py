"""The row a benchmark reports for a figure where lower is better (a time, a CPU cost)."""

from __future__ import annotations

from typing import Any


def lower_is_better(benchmark: str, metric: str, value: float, target: float | None, *, digits: int) -> dict[str, Any]:
    """A table row; with a target, ``ratio`` is target / value, so above 1 beats the target."""
    row: dict[str, Any] = {"benchmark": benchmark, "metric": metric, "value": round(value, digits), "target": target}
    if target and value > 0:
        row["ratio"] = round(target / value, 3)
    return row
