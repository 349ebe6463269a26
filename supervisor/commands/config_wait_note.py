"""What ``config set`` says when the user turns Allow / Deny from the phone on, or changes its waits.

While a PermissionRequest hook waits for the phone it holds the agent's own prompt: Claude Code
shows its dialog at once (the hook runs beside it in the main session), but the Codex TUI shows
only the hook's label until the wait ends (measured: docs/approvals.md, "The desk is never locked
out"). The user learns it where the choice is made, with the figures that apply.
"""

from __future__ import annotations

from pathlib import Path

from donebell.shared.config import model

APPROVAL_KEYS = frozenset({"approvals_enabled", "approval_wait_seconds", "approval_wait_interactive_seconds"})


def approvals_wait_note(path: Path) -> str:
    """One note with the waits the config at ``path`` now gives (the defaults if it cannot be read)."""
    try:
        settings = model.load(path).settings
    except Exception:  # noqa: BLE001 - a note is never worth a failure: the defaults are still true
        settings = model.Settings()
    interactive, other = settings.approval_wait_interactive_seconds, settings.approval_wait_seconds
    state = "on" if settings.approvals_enabled else "off (no hook waits)"
    return (
        f"note: Allow / Deny from the phone is {state}. While a permission prompt waits for the phone, "
        f"the Codex TUI shows only donebell's hook label, not its own dialog, for up to {interactive:g} s "
        f"(approval_wait_interactive_seconds; 0: not at all), then asks at the terminal; `codex exec` and "
        f"Claude Code's hooks wait up to {other:g} s (approval_wait_seconds), and Claude Code shows its "
        "dialog at once (docs/approvals.md)"
    )
