"""Make the real CLIs ask for permission offline, and answer them from a hook (docs/approvals.md).

How each CLI is made to ask, measured on the pinned and newest releases:

* Codex 0.171: ``codex exec --approve-for-me`` (hooks trusted with ``--dangerously-bypass-hook-trust``)
  and a scripted ``exec_command`` that asks ``sandbox_permissions: "require_escalated"``. Plain
  ``exec`` forces approval policy "never"; ``--approve-for-me`` refuses ``-s``.
* Claude Code, the interactive TUI with ``--permission-mode default`` (2.1.197 and 2.1.332): the
  PermissionRequest hook and the dialog run at once, the first answer wins.
* Claude Code ``-p --permission-mode default``: only 2.1.332 calls the PermissionRequest hook;
  2.1.197 auto-denies the call without asking (``CLAUDE_PRINT_SKIP``).

``answer_command`` is a hook that prints a fixed answer (``answer_hook.py``), to check which shapes
each version obeys; ``add_codex_hook`` adds it next to the groups ``donebell install`` wrote.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support import npm_clis
from support.fake_messages import Text as ClaudeText
from support.fake_messages import bash
from support.fake_responses import Text, exec_command

from e2e.harness import ClaudeHome, CodexHome
from e2e.tui import ClaudeTui

ANSWER_HOOK = Path(__file__).with_name("answer_hook.py")

COMMAND = "touch approval-marker.txt && echo approval-ran"
MARKER = "approval-marker.txt"
WHY = "Create the approval marker file"
CODEX_FINAL = "FAKE-FINAL: approval scenario finished."
CLAUDE_FINAL = "FAKE-FINAL: approval done."

#: The first Claude Code release whose ``-p`` calls the PermissionRequest hook.
CLAUDE_PRINT_ASKS_SINCE = (2, 1, 332)
CLAUDE_PRINT_SKIP = (
    "Claude Code {version} in -p never calls the PermissionRequest hook: it auto-denies the call "
    "(measured; 2.1.332 asks first), so a print-mode approval cannot be answered by any hook"
)

JSON = dict[str, Any]


# ---- what the hook prints ------------------------------------------------------------------


def decision(behavior: str, **extra: Any) -> JSON:
    """The PermissionRequest answer both agents document: ``hookSpecificOutput.decision``."""
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": behavior, **extra}}}


ALLOW = decision("allow")
DENY = decision("deny", message="denied from the phone")


# ---- Codex ----------------------------------------------------------------------------------


def codex_asking_script(command: str = COMMAND, why: str = WHY, final: str = CODEX_FINAL) -> dict[str, Any]:
    """A root turn whose one call asks for escalation (so ``--approve-for-me`` asks), then a text."""
    return {"root": [exec_command(command, sandbox_permissions="require_escalated", justification=why), Text(final)]}


def codex_asking_argv(prompt: str) -> list[str]:
    return [
        str(npm_clis.codex_binary()),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--approve-for-me",
        "--dangerously-bypass-hook-trust",
        prompt,
    ]


def add_codex_hook(home: CodexHome, event: str, command: str, timeout: int = 30) -> None:
    """One more command group for ``event`` in hooks.json, after the ones already there."""
    path = home.codex_home / "hooks.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    groups = doc.setdefault("hooks", {}).setdefault(event, [])
    groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
    path.write_text(json.dumps(doc, indent=1))


# ---- Claude ---------------------------------------------------------------------------------


def add_claude_hook(home: ClaudeHome, event: str, command: str, timeout: int = 30) -> None:
    """One more command group for ``event`` in settings.json (Claude reads it when it starts)."""
    path = home.config_dir / "settings.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    groups = doc.setdefault("hooks", {}).setdefault(event, [])
    groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
    path.write_text(json.dumps(doc, indent=1))


def claude_asking_script(command: str = COMMAND, why: str = WHY, final: str = CLAUDE_FINAL) -> dict[str, Any]:
    return {"main": [bash(command, description=why, text="Running it."), ClaudeText(final)]}


#: The interactive TUI also asks for a session title; any other unscripted request gets a text.
CLAUDE_FALLBACK = {"title": ClaudeText('{"title": "Fake session"}'), "*": ClaudeText("FAKE-FALLBACK")}


def claude_print_skip_reason() -> str | None:
    version = npm_clis.claude_version()
    if version >= CLAUDE_PRINT_ASKS_SINCE:
        return None
    return CLAUDE_PRINT_SKIP.format(version=".".join(map(str, version)))


def claude_print_argv(prompt: str) -> list[str]:
    argv = [str(npm_clis.claude_binary()), "-p", "--output-format", "stream-json", "--verbose"]
    return [*argv, "--permission-mode", "default", prompt]


def start_claude_tui_asking(home: ClaudeHome, prompt: str = "needs approval") -> ClaudeTui:
    """The interactive TUI, ``--permission-mode default``, with ``prompt`` typed in."""
    tui = ClaudeTui.start(home, "--permission-mode", "default")
    try:
        tui.wait_quiet()
        tui.type(prompt)
    except BaseException:
        tui.close()
        raise
    return tui


def close_tui(tui: ClaudeTui) -> None:
    """Escape first, then ``close()``: with a permission dialog open, ``close()``'s ``/exit`` + Enter
    would answer it "Yes" (measured: the call ran at teardown). Escape is "No" there, and harmless
    at the prompt."""
    if tui.proc.poll() is None:
        os.write(tui.master, b"\x1b")
        time.sleep(1.0)
    tui.close()


def dialog_count(tui: ClaudeTui) -> int:
    # The pty output draws words apart with cursor moves, not spaces: compare without whitespace.
    return "".join(tui.screen_text().split()).count("Doyouwanttoproceed?")


# ---- hooks that answer ----------------------------------------------------------------------


def answer_command(
    records: Path, label: str, answer: JSON | bytes, *, delay: float = 0.0, python: str = sys.executable
) -> str:
    """A hook command printing ``answer`` (a JSON object, or raw bytes; b"" = silence) ``delay``
    seconds after recording its stdin under ``records`` with ``label``. It ignores SIGTERM/SIGHUP
    like the recorder (so a late answer is still printed, if anyone still reads it)."""
    records.mkdir(parents=True, exist_ok=True)
    path = records / f"answer-{label}.out"
    path.write_bytes(answer if isinstance(answer, bytes) else json.dumps(answer).encode())
    argv = [python, str(ANSWER_HOOK), str(records), label, str(path), str(delay)]
    return "trap '' TERM HUP; exec " + shlex.join(argv)


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, describe: Callable[[], str] = str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{describe()}")
        time.sleep(0.1)
