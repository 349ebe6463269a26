"""Which configuration keys apply only after a restart, and which of them changed since the start.

The delivery role (the gate included) and the maintenance role re-read the config file when it
changes, so most keys apply at their next pass. The supervisor decides at start which roles run
(``wake_enabled``, ``watch_roots``), and the scanners and the wake role read their keys once when
they start: a change to one of those keys waits for the next restart. ``config set`` says so, and
``status`` compares the file with the fingerprints the supervisor published at its start
(``config_at_start`` in ``health/supervisor.json``) so it can say "restart to apply" rather than
show a role as disabled while the file enables it. tests/test_config_set_checks.py holds this
table equal to the keys those processes read.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

SUPERVISOR = "the supervisor"
SCANNERS = "the scanners"
WAKE = "the wake role"

#: key -> who reads it only when starting. The wake role's keys matter only while it runs.
RESTART_KEYS: dict[str, str] = {
    "wake_enabled": SUPERVISOR,
    "watch_roots": SUPERVISOR,
    **dict.fromkeys(
        (
            "watch_rollouts",
            "watch_claude_transcripts",
            "enable_claude_code",
            "watch_scan_seconds",
            "watch_initial_replay_seconds",
            "watch_remote_timeout_seconds",
            "idle_grace_seconds",
            "include_message",
            "origin",
        ),
        SCANNERS,
    ),
    **dict.fromkeys(
        (
            "wake_topic",
            "wake_token",
            "wake_actions",
            "wake_ticket_ttl_seconds",
            "wake_codex_args",
            "wake_claude_args",
            "wake_copilot_args",
            "wake_allow_unauthenticated",
            "wake_tap_max_age_seconds",
            "approvals_enabled",
            "server",
            "topic",
            "token",
            "username",
            "password",
            "timeout_seconds",
        ),
        WAKE,
    ),
}

#: Printed after a change that waits for a restart.
RESTART_HOW = "restart the service (`systemctl --user restart donebell`, or stop and start `donebell run`)"


def needs_restart(key: str, wake_enabled: bool) -> str | None:
    """Who must restart before ``key``'s new value applies, or None when it applies by itself."""
    reader = RESTART_KEYS.get(key)
    if reader == WAKE and not wake_enabled:
        return None  # only the wake role reads it at start, and it does not run (its own switch is the supervisor's)
    return reader


def fingerprints(data: dict[str, Any] | None) -> dict[str, str]:
    """key -> a short hash of the file's value, for every restart key (secrets never stored as such)."""
    out = {}
    for key in sorted(RESTART_KEYS):
        value = (data or {}).get(key)
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        out[key] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return out


def changed_since_start(at_start: object, data: dict[str, Any] | None) -> list[str]:
    """The restart keys whose file value differs from the one the running supervisor started with."""
    if not isinstance(at_start, dict) or data is None:
        return []  # a supervisor from before this field, or no readable file: nothing to compare
    wake_on = (data or {}).get("wake_enabled") is True  # a changed wake_enabled is listed by itself
    return [
        key
        for key, print_ in fingerprints(data).items()
        if key in at_start and at_start[key] != print_ and needs_restart(key, wake_on)
    ]
