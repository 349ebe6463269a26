"""Figures the reliability tests measure (kills survived, records checked, duplicates, ...).

Tests call :func:`record`; the suite's conftest prints them at the end of the run, and
``DONEBELL_FIGURES_FILE=<path>`` also appends them there as JSON lines (how docs/reliability.md
was filled). Under ``pytest -n`` the tests run in worker processes: the controller points the
variable at a file of its own when none is set (``tests/conftest.py``), the workers append to it,
and the controller prints what this run appended.
"""

from __future__ import annotations

import json
import os
from typing import Any

FIGURES: dict[str, dict[str, Any]] = {}
#: Read once at import: a test's own clean-up of ``DONEBELL_*`` variables must not lose its figures.
FIGURES_FILE = os.environ.get("DONEBELL_FIGURES_FILE")


def record(test: str, **values: Any) -> None:
    FIGURES.setdefault(test, {}).update(values)
    if FIGURES_FILE:
        with open(FIGURES_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": test, **values}, default=str) + "\n")


def read_since(path: str, offset: int) -> dict[str, dict[str, Any]]:
    """The figures appended to ``path`` after byte ``offset`` (this run's), by test."""
    found: dict[str, dict[str, Any]] = {}
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut by a worker killed mid-write: the rest still print
        if isinstance(entry, dict) and isinstance(entry.get("test"), str):
            found.setdefault(entry.pop("test"), {}).update(entry)
    return found
