"""httpx without its command-line entry point, the one way donebell imports httpx.

``import httpx`` tries ``httpx._main`` (the ``httpx`` console command), which imports ``click``
and ``pygments`` whenever they happen to be installed beside it (pytest brings pygments, pipx
brings click) and gives up only at ``rich``: ~2.3 MiB and a few ms in every process that talks
HTTP, for a command donebell never runs (docs/benchmarks.md, "Memory of the service"). Marking
the submodule absent makes httpx take its own fallback (a ``main`` that explains the missing
extra), exactly as in an environment without those packages.
"""

from __future__ import annotations

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: "known absent" to the import system

import httpx  # noqa: E402

__all__ = ["httpx"]
