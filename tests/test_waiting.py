"""The one wait-for-condition helper: returns what the condition produced, or fails saying what never happened."""

from __future__ import annotations

import threading
import time

import pytest
from support.waiting import wait_for


def test_returns_the_first_truthy_value_another_thread_produces() -> None:
    """The value comes back as soon as it appears, long before the deadline."""
    box: list[int] = []
    timer = threading.Timer(0.2, box.append, args=(7,))
    timer.start()
    started = time.monotonic()
    try:
        assert wait_for(lambda: box and box[0], timeout=10, what="the value") == 7
    finally:
        timer.cancel()
    assert time.monotonic() - started < 5


def test_a_timeout_names_the_condition_and_the_state_at_that_moment() -> None:
    """After the deadline: an AssertionError with `what`, the timeout and `detail()` read at failure."""
    reads: list[float] = []

    def counts() -> dict[str, int]:
        reads.append(time.monotonic())
        return {"pending": 3}

    started = time.monotonic()
    with pytest.raises(AssertionError) as failure:
        wait_for(lambda: None, timeout=0.2, what="a record", detail=counts)
    assert "timed out after 0.2s waiting for a record" in str(failure.value)
    assert "{'pending': 3}" in str(failure.value)
    assert len(reads) == 1 and reads[0] - started >= 0.2  # read once, at the deadline
