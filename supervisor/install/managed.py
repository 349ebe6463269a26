"""What donebell writes into the agents' config files, and how it recognizes its own entries again.

A managed entry is a command handler (or Codex ``notify``) whose program is an executable named
``donebell`` (``donebell.exe``) and whose arguments are exactly one of the hook subcommands:

* Codex ``hooks.json`` Stop handler: ``"command": "<abs donebell> hook codex-stop"`` (shell string);
* Codex ``config.toml``: ``notify = ["<abs donebell>", "hook", "codex-notify"]``;
* Claude ``settings.json``: ``"command": "/bin/sh", "args": ["-c", "trap '' TERM HUP; exec \"$0\" \"$@\"",
  "<abs donebell>", "hook", "claude"]`` (exec form; on Windows ``"command": "<abs donebell>", "args":
  ["hook", "claude"]``) or ``"command": "<abs donebell> hook claude"`` (shell form, for versions
  without ``args``).

Recognition ignores the directory, so an entry written by an older install (another venv, a moved
checkout) is still found, replaced by ``install`` and removed by ``uninstall``; anything with extra
arguments or another program name is the user's and is never touched.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PROGRAM_NAMES = ("donebell", "donebell.exe")
CODEX_STOP_ARGS = ("hook", "codex-stop")
#: Codex's PermissionRequest: the turn waits for an approval ("needs you", docs/approvals.md).
CODEX_PERMISSION_ARGS = ("hook", "codex-permission")
CODEX_NOTIFY_ARGS = ("hook", "codex-notify")
CLAUDE_ARGS = ("hook", "claude")
#: Seconds the agent waits for a hook; donebell's hooks return in tens of milliseconds.
HOOK_TIMEOUT = 30
#: The PermissionRequest hooks may wait for the phone (``approval_wait_seconds``, at most
#: ``APPROVAL_WAIT_MAX``): their timeout is longer than any allowed wait, so a hook is never killed
#: before the answer, and changing the wait needs no reinstall (nor Codex's re-trust).
PERMISSION_HOOK_TIMEOUT = 600  # tests/test_approvals.py: longer than APPROVAL_WAIT_MAX


class ExecutableNotFound(Exception):
    """No installed ``donebell`` console script was found next to Python or on PATH."""


def donebell_executable() -> str:
    """Absolute path of the ``donebell`` console script of THIS installation.

    The one beside the running interpreter comes first (a venv's ``bin``/``Scripts``), so a
    different ``donebell`` earlier on PATH (pipx, another venv) is not wired by mistake.
    """
    here = Path(sys.executable).parent
    names = ("donebell.exe", "donebell") if sys.platform == "win32" else ("donebell",)
    for folder in (here, here / "Scripts", here / "bin"):
        for name in names:
            candidate = folder / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return os.path.abspath(candidate)
    found = shutil.which("donebell")
    if found:
        return os.path.abspath(found)
    raise ExecutableNotFound(
        f"cannot find the donebell command next to {sys.executable} or on PATH; install the package first"
    )


def is_donebell_program(program: object) -> bool:
    """True if ``program`` names an executable called donebell (any directory, either OS)."""
    if not isinstance(program, str) or not program:
        return False
    names = {posixpath.basename(program).lower(), ntpath.basename(program).lower()}
    return bool(names & set(PROGRAM_NAMES))


def shell_command(executable: str, *args: str) -> str:
    """A command line for a hook that runs through a shell, quoted for this OS."""
    if sys.platform == "win32":
        return subprocess.list2cmdline([executable, *args])
    return shlex.join([executable, *args])


def split_command(command: object) -> list[str] | None:
    """A shell command string split into words, or None if it does not split cleanly."""
    if not isinstance(command, str):
        return None
    windows_style = "\\" in command or sys.platform == "win32"
    try:
        words = shlex.split(command, posix=not windows_style)
    except ValueError:
        return None
    if windows_style:
        words = [w[1:-1] if len(w) >= 2 and w[0] == w[-1] and w[0] in "\"'" else w for w in words]
    return words


def is_managed_argv(argv: object, args: tuple[str, ...]) -> bool:
    """``argv`` is ``[<…/donebell>, *args]`` exactly."""
    return (
        isinstance(argv, list)
        and len(argv) == 1 + len(args)
        and all(isinstance(a, str) for a in argv)
        and is_donebell_program(argv[0])
        and tuple(argv[1:]) == args
    )


#: The exec-form Claude hook starts through ``/bin/sh`` with SIGTERM and SIGHUP ignored, so the
#: signal Claude 2.1.332 sends ~25 ms after starting a print-mode StopFailure hook cannot land
#: during Python's start-up; the ignored disposition survives ``exec`` (docs/hooks.md, "Signals").
SIGNAL_SHIELD_SHELL = "/bin/sh"
SIGNAL_SHIELD_SCRIPT = 'trap \'\' TERM HUP; exec "$0" "$@"'


def handler_argv(handler: Any) -> list[Any] | None:
    """The program and arguments a command handler runs, with the signal-shield shell unwrapped."""
    if not isinstance(handler, dict):
        return None
    command = handler.get("command")
    if "args" not in handler:
        return split_command(command)
    extra = handler["args"]
    if not isinstance(extra, list):
        return None
    if command == SIGNAL_SHIELD_SHELL and extra[:2] == ["-c", SIGNAL_SHIELD_SCRIPT]:
        return extra[2:]
    return [command, *extra]


def is_managed_handler(handler: Any, args: tuple[str, ...]) -> bool:
    """A hook handler object that runs ``donebell <args>`` (shell or exec form)."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    return is_managed_argv(handler_argv(handler), args)


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


#: Claude events donebell listens to. Stop, StopFailure and UserPromptSubmit run synchronously so
#: the session's prompt epoch is in order before the next Stop; the Notification accelerator is
#: async (it only accelerates a decision the gate reaches anyway, docs/agent-facts.md) and limited to
#: the types the hook uses. SessionEnd is the fallback of a Stop/StopFailure hook that never ran or
#: was killed (docs/hooks.md); Claude waits for it in print mode, so it is synchronous too.
#: PermissionRequest and the Notification types permission_prompt, elicitation_dialog and
#: agent_needs_input say the task waits for the user (docs/approvals.md). The PermissionRequest
#: hook only writes a file and prints nothing (no opinion: the agent's dialog decides), so it runs
#: synchronously; Claude runs it alongside its dialog in the main session.
CLAUDE_EVENTS: dict[str, dict[str, Any]] = {
    "Stop": {},
    "StopFailure": {},
    "UserPromptSubmit": {},
    "Notification": {
        "matcher": "idle_prompt|agent_completed|permission_prompt|elicitation_dialog|agent_needs_input",
        "async": True,
    },
    "SessionEnd": {},
    "PermissionRequest": {},
}


def claude_group(event: str, executable: str, *, exec_form: bool) -> dict[str, Any]:
    """The Claude settings.json group donebell owns for ``event``."""
    options = CLAUDE_EVENTS[event]
    handler: dict[str, Any] = {"type": "command"}
    if exec_form and sys.platform != "win32":
        handler.update(command=SIGNAL_SHIELD_SHELL, args=["-c", SIGNAL_SHIELD_SCRIPT, executable, *CLAUDE_ARGS])
    elif exec_form:
        handler.update(command=executable, args=list(CLAUDE_ARGS))
    else:
        handler["command"] = shell_command(executable, *CLAUDE_ARGS)
    handler["timeout"] = PERMISSION_HOOK_TIMEOUT if event == "PermissionRequest" else HOOK_TIMEOUT
    if options.get("async"):
        handler["async"] = True
    group: dict[str, Any] = {}
    if "matcher" in options:
        group["matcher"] = options["matcher"]
    group["hooks"] = [handler]
    return group
