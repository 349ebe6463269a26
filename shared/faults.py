"""Test-only fault injection, read from the environment (never set in production).

``DONEBELL_TEST_FAULT=<who>:<point>[,...]`` (or ``@<file>`` holding that text, read each time, so
a test can switch a fault off while processes keep running) makes the named process fail at the
named point: a role exiting at ``startup``, a gate probe worker hanging at ``hang``.
Standard library only.
"""

from __future__ import annotations

import os


def injected_fault(who: str, point: str) -> bool:
    """True if ``DONEBELL_TEST_FAULT`` asks ``who`` to fail at ``point``."""
    spec = os.environ.get("DONEBELL_TEST_FAULT", "")
    if spec.startswith("@"):
        try:
            with open(spec[1:], encoding="utf-8") as f:
                spec = f.read()
        except OSError:
            return False
    return f"{who}:{point}" in {item.strip() for item in spec.split(",")}
