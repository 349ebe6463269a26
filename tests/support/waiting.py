"""Wait for a condition another process produces, instead of sleeping a fixed time and hoping.

A fixed sleep before an assertion is either too short on a loaded machine (the test flakes) or
too long everywhere else (the suite crawls); polling a predicate under a deadline is neither.
Sleeps that deliberately let time pass (to prove something did NOT happen, or to age a file)
stay plain ``time.sleep`` calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T | None | Literal[False]],
    timeout: float = 15.0,
    what: str = "condition",
    *,
    detail: Callable[[], object] | None = None,
) -> T:
    """Poll ``predicate`` until it returns a truthy value and return that value.

    Fails with ``what``, the timeout and ``detail()`` (the state worth seeing, read at the moment
    of failure) once the deadline passes, so a red test says what never happened rather than
    which assertion saw stale state.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            suffix = "" if detail is None else f": {detail()!r}"
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{suffix}")
        time.sleep(0.05)
