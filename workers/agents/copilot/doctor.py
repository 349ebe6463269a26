"""doctor's ``copilot_hooks`` check: donebell's hook file in ``$COPILOT_HOME/hooks/`` (its shape:
the folder's :mod:`.wiring`), each event's command, and the permission hook's timeout.

``permissionRequest`` is needed (and checked) only with approvals on. Copilot's hook timeouts
fail OPEN: a ``permissionRequest`` hook still waiting for the phone when its ``timeoutSec`` ends
lets the tool call run unasked. So the installed timeout must exceed the configured
``approval_wait_seconds``; a shorter one fails the check.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from donebell.workers.agents.copilot import wiring
from donebell.workers.agents.copilot.paths import copilot_home_str
from donebell.workers.kit.install.checks import FAIL, OK, SKIP, WARN, Check
from donebell.workers.kit.install.managed import is_managed_argv, split_command

FIX = "run `donebell install --copilot`"
#: The permission hook must outlive the phone wait by this much (start-up, the answer's write).
TIMEOUT_MARGIN = 5.0


def check_copilot(approval_wait: float | None) -> list[Check]:
    """``copilot_hooks``; ``approval_wait`` is the configured phone wait when approvals are on."""
    home = Path(copilot_home_str())
    path = Path(wiring.hook_file(str(home)))
    if not home.is_dir():
        return [Check("copilot_hooks", SKIP, f"Copilot CLI not found ({home})")]
    try:
        found = wiring.entries(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        return [Check("copilot_hooks", WARN, "Copilot CLI is not wired to donebell", FIX, {"file": str(path)})]
    except (OSError, ValueError) as exc:
        return [Check("copilot_hooks", FAIL, f"{path}: unreadable or invalid ({exc}): Copilot skips it", FIX)]
    managed = {event: _managed(found.get(event, []), event) for event in wiring.EVENTS}
    details: dict[str, Any] = {"file": str(path), "events": [e for e, hs in managed.items() if hs]}
    broken = [p for hs in managed.values() for h in hs if (p := _missing_program(h))]
    if broken:
        return [Check("copilot_hooks", FAIL, f"Copilot runs a donebell that does not exist: {broken[0]}", FIX, details)]
    wanted = wiring.EVENTS if approval_wait is not None else wiring.ALWAYS
    missing = [event for event in wanted if not managed[event]]
    if missing:
        why = " (approvals_enabled needs it)" if missing == [wiring.PERMISSION_EVENT] else ""
        return [Check("copilot_hooks", WARN, f"missing hooks: {', '.join(missing)}{why}", FIX, details)]
    short = _timeout_problem(managed[wiring.PERMISSION_EVENT], approval_wait)
    if short:
        return [Check("copilot_hooks", FAIL, short, f"{FIX}, or lower approval_wait_seconds", details)]
    return [Check("copilot_hooks", OK, f"{', '.join(details['events'])} registered", details=details)]


def _managed(handlers: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [h for h in handlers if is_managed_argv(split_command(h.get("bash")), ("hook", "copilot", event))]


def _missing_program(handler: dict[str, Any]) -> str | None:
    argv = split_command(handler.get("bash")) or []
    program = argv[0] if argv else None
    if isinstance(program, str) and os.path.isabs(program) and not os.access(program, os.X_OK):
        return program
    return None


def _timeout_problem(handlers: list[dict[str, Any]], approval_wait: float | None) -> str | None:
    """Why the permission hook could be cut off while it waits for the phone, or None."""
    if approval_wait is None:
        return None
    for handler in handlers:
        timeout = handler.get("timeoutSec")
        if not isinstance(timeout, (int, float)) or timeout < approval_wait + TIMEOUT_MARGIN:
            return (
                f"permissionRequest timeoutSec {timeout} does not outlast approval_wait_seconds {approval_wait:g}: "
                "Copilot's hook timeouts fail open, so an unanswered call would run unasked"
            )
    return None
