"""doctor's Claude Code check: are donebell's hooks in ``settings.json`` (``claude_hooks``)?"""

from __future__ import annotations

from donebell.workers.agents.claude import claude_config_dir
from donebell.workers.agents.claude.install import CLAUDE_ARGS, CLAUDE_EVENTS
from donebell.workers.kit.install.checks import (
    FAIL,
    OK,
    SKIP,
    WARN,
    Check,
    managed_handlers,
    program_missing,
    read_json,
)
from donebell.workers.kit.install.managed import handler_argv


def check_claude(enabled: bool) -> list[Check]:
    home = claude_config_dir()
    if not home.is_dir():
        return [Check("claude_hooks", SKIP, f"Claude Code not found ({home})")]
    doc, error = read_json(home / "settings.json")
    if error:
        return [Check("claude_hooks", FAIL, error + ": Claude Code ignores these settings", "fix settings.json")]
    found = {event: managed_handlers(doc, event, CLAUDE_ARGS) for event in CLAUDE_EVENTS}
    wired = [event for event, handlers in found.items() if handlers]
    broken = [p for hs in found.values() for h in hs if (p := program_missing(handler_argv(h)))]
    details = {"settings": str(home / "settings.json"), "events": wired, "wired": bool(wired)}
    if broken:
        return [
            Check(
                "claude_hooks",
                FAIL,
                f"Claude runs a donebell that does not exist: {broken[0]}",
                "run `donebell install --claude` again from the current installation",
                details,
            )
        ]
    if not wired:
        return [
            Check(
                "claude_hooks", WARN, "Claude Code is not wired to donebell", "run `donebell install --claude`", details
            )
        ]
    if not enabled:
        return [
            Check(
                "claude_hooks",
                WARN,
                "hooks registered but enable_claude_code is false: they do nothing",
                "set enable_claude_code to true",
                details,
            )
        ]
    missing = [event for event in CLAUDE_EVENTS if event not in wired]
    if missing:
        return [
            Check(
                "claude_hooks", WARN, f"missing hooks: {', '.join(missing)}", "run `donebell install --claude`", details
            )
        ]
    return [Check("claude_hooks", OK, f"{', '.join(wired)} registered", details=details)]
