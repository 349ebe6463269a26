"""The row a benchmark reports for a figure where lower is better (a time, a CPU cost)."""

from __future__ import annotations

from typing import Any


def lower_is_better(benchmark: str, metric: str, value: float, target: float | None, *, digits: int) -> dict[str, Any]:
    """A table row; with a target, ``ratio`` is target / value, so above 1 beats the target."""
    row: dict[str, Any] = {"benchmark": benchmark, "metric": metric, "value": round(value, digits), "target": target}
    if target and value > 0:
        row["ratio"] = round(target / value, 3)
    return row


def share_of_target(benchmark: str, metric: str, value: float, target: float | None) -> dict[str, Any]:
    """A table row for a budget (memory, idle CPU); with a target, ``ratio`` is value / target, so
    at most 1 stays within it."""
    row: dict[str, Any] = {"benchmark": benchmark, "metric": metric, "value": round(float(value), 4), "target": target}
    if target:
        row["ratio"] = round(float(value) / target, 3)
    return row
