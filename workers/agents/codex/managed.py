"""What donebell writes into Codex's files: the managed Stop and PermissionRequest hook groups
of ``hooks.json`` and ``notify`` in ``config.toml`` (recognized again by ``kit/install/managed.py``)."""

from __future__ import annotations

from typing import Any

from donebell.workers.kit.install.managed import HOOK_TIMEOUT, PERMISSION_HOOK_TIMEOUT, shell_command

CODEX_STOP_ARGS = ("hook", "codex-stop")


#: Codex's PermissionRequest: the turn waits for an approval ("needs you", docs/approvals.md).
CODEX_PERMISSION_ARGS = ("hook", "codex-permission")


CODEX_NOTIFY_ARGS = ("hook", "codex-notify")


#: The name Codex's ``/hooks`` list shows for donebell's Stop hook. Codex 0.171's hook handler has
#: no name field (an unknown ``name`` key is ignored); the list shows a handler's ``statusMessage``,
#: else "Unnamed hook" (docs/hooks.md). The message is also part of Codex's trust hash.
CODEX_HOOK_LABEL = "donebell: notify when the task is done"


def codex_stop_group(executable: str) -> dict[str, Any]:
    """The Codex hooks.json group donebell owns (no matcher: Stop ignores it)."""
    command = shell_command(executable, *CODEX_STOP_ARGS)
    handler = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT, "statusMessage": CODEX_HOOK_LABEL}
    return {"hooks": [handler]}


#: ``shared.config.model.APPROVAL_WAIT_INTERACTIVE_MAX`` (the config module is not imported here;
#: tests/test_approvals_interactive.py keeps the two equal).
APPROVAL_WAIT_INTERACTIVE_MAX = 15
#: The Codex ``/hooks`` label of donebell's PermissionRequest hook (part of its trust hash too).
#: The TUI shows it instead of its own approval dialog while the hook runs, so it says what the hook
#: may wait for and how long: with approvals on, an interactive session waits at most
#: ``APPROVAL_WAIT_INTERACTIVE_MAX`` seconds (the figure below), then Codex asks at the terminal.
CODEX_PERMISSION_LABEL = (
    f"donebell: notify when the task needs you; Allow/Deny from the phone: waits up to "
    f"{APPROVAL_WAIT_INTERACTIVE_MAX} s, then Codex asks here"
)


def codex_permission_group(executable: str) -> dict[str, Any]:
    """The Codex hooks.json PermissionRequest group donebell owns (no matcher: every tool). The
    hook prints nothing, Codex's "no decision", so its own approval path always decides."""
    command = shell_command(executable, *CODEX_PERMISSION_ARGS)
    handler = {
        "type": "command",
        "command": command,
        "timeout": PERMISSION_HOOK_TIMEOUT,
        "statusMessage": CODEX_PERMISSION_LABEL,
    }
    return {"hooks": [handler]}


def codex_notify(executable: str) -> list[str]:
    return [executable, *CODEX_NOTIFY_ARGS]
