"""Figures the reliability tests measure (kills survived, records checked, duplicates, ...).

Tests call :func:`record`; the suite's conftest prints them at the end of the run, and
``DONEBELL_FIGURES_FILE=<path>`` also appends them there as JSON lines (how docs/reliability.md
was filled).
"""

from __future__ import annotations

import json
import os
from typing import Any

FIGURES: dict[str, dict[str, Any]] = {}


def record(test: str, **values: Any) -> None:
    FIGURES.setdefault(test, {}).update(values)
    path = os.environ.get("DONEBELL_FIGURES_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": test, **values}, default=str) + "\n")
