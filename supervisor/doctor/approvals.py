"""doctor's ``approvals`` check (only when ``approvals_enabled``, docs/approvals.md).

Allow / Deny needs reply to continue's setup (the wake role receives the taps), and every
installed PermissionRequest hook of donebell's must be allowed to wait longer than
``approval_wait_seconds``: a hook the agent kills before the tap is the most reported failure of
phone approvals. ``install`` writes a timeout longer than any allowed wait; a hook installed by an
older donebell, or edited by hand, is found here. A notification topic anyone can read fails it:
its readers hold the Allow button (:mod:`.topic_privacy`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.supervisor.doctor.topic_privacy import public_topic_failure, readable_by_anyone
from donebell.workers.agents.registry import installer, names
from donebell.workers.kit.install.checks import FAIL, OK, WARN, Check, managed_handlers, read_json
from donebell.workers.wake.policy import approvals_problem

#: A hook needs this much more than the wait: its own start, the answer's write, the print.
MARGIN_SECONDS = 5.0
#: What an agent uses when a hook names no timeout (both: 600 s, docs/approvals.md).
AGENT_DEFAULT_TIMEOUT = 600.0


def check_approvals(settings: SettingsLike) -> Check:
    problem = approvals_problem(settings)
    if problem is not None:
        return Check("approvals", FAIL, problem, "see docs/approvals.md")
    if readable_by_anyone(settings.server, settings.topic):  # its readers hold the Allow button
        return public_topic_failure("approvals", settings.server, settings.topic, FAIL)
    wait = settings.approval_wait_seconds
    hooks = installed_permission_hooks()
    details: dict[str, Any] = {"approval_wait_seconds": wait, "hooks": hooks}
    if not hooks:
        return Check("approvals", WARN, "no PermissionRequest hook of donebell is installed", "run `donebell install`")
    short = [h for h in hooks if h["timeout"] < wait + MARGIN_SECONDS]
    if short:
        where = ", ".join(f"{h['agent']} {h['timeout']:g} s" for h in short)
        summary = f"PermissionRequest hook timeout shorter than approval_wait_seconds {wait:g} s + {MARGIN_SECONDS:g}: {where}"
        return Check("approvals", WARN, summary, "run `donebell install` (or lower approval_wait_seconds)", details)
    return Check("approvals", OK, f"hooks may wait {wait:g} s for Allow / Deny", details=details)


def installed_permission_hooks() -> list[dict[str, Any]]:
    """Each installed donebell PermissionRequest hook: its agent, file and timeout in seconds."""
    found = []
    sources = [(name, path, args) for name in names() for path, args in _permission_hooks(name)]
    for name, path, args in sources:
        doc, _error = read_json(path) if path.is_file() else (None, None)
        for handler in managed_handlers(doc, "PermissionRequest", args):
            found.append({"agent": name, "file": str(path), "timeout": _seconds(handler.get("timeout"))})
    return found


def _seconds(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return AGENT_DEFAULT_TIMEOUT


def _permission_hooks(name: str) -> list[tuple[Path, tuple[str, ...]]]:
    agent = installer(name)
    return agent.permission_hooks() if agent is not None else []
