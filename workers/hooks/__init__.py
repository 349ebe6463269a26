"""``donebell hook codex-stop | codex-notify | codex-permission | claude``: agent signals in, candidates out, at once.

A hook runs inside the agent's turn. Whatever happens it prints its documented output
(``codex-stop``: exactly ``{}``; the others, ``codex-permission`` included: nothing, no decision) and exits 0; a refused payload or an
internal error becomes one line in the state directory's log. It never sends anything itself
and never touches the network. The hook path imports the standard library and
``donebell.shared.{cli,paths,configfile,keys,statedir,records,ingest,liveness}`` and the agent
folders' hook modules only, and of the standard library not ``typing``, ``pathlib``, ``contextlib`` or
``importlib.util`` (``tests/test_import_cost.py``); see docs/hooks.md.
"""

from __future__ import annotations

import os
import sys

from donebell.shared.process import hook_signals
from donebell.workers.hooks.context import HookContext
from donebell.workers.hooks.stdin import PayloadError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

#: What each hook prints on stdout, always (Codex treats ``{}`` as "no decision").
#: ``codex-permission`` prints nothing: Codex's "no decision", its own approval path goes on.
OUTPUT = {"codex-stop": "{}\n", "codex-notify": "", "codex-permission": "", "claude": ""}
USAGE = (
    "usage: donebell hook codex-stop|codex-notify|codex-permission|claude"
    " (payload on stdin, or as the last argument for codex-notify)\n"
)
HELP = (
    USAGE
    + """
The agents run these (donebell install wires them); they record the agent's signal in the state
directory, print the agent's expected answer and exit 0, whatever happens, without touching the
network:
  codex-stop        Codex's Stop hook (payload on stdin; prints {})
  codex-notify      Codex's notify program (payload as the last argument)
  codex-permission  Codex's PermissionRequest hook: a "needs you" notification (prints nothing)
  claude            Claude Code's Stop, SubagentStop, SessionStart, SessionEnd, PermissionRequest and
                    Notification hooks (payload on stdin)
"""
)
EXIT_USAGE = 2
_HELP_WORDS = ("-h", "--help", "help")


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command in _HELP_WORDS or (command in OUTPUT and argv[1:] in (["-h"], ["--help"])):
        sys.stdout.write(HELP)  # before HookContext: help creates no state directory and logs nothing
        _release_signals_quietly()
        return 0
    if command not in OUTPUT and _typed_at_a_terminal():
        # A person's typo: a usage error like every other verb's, without touching the state
        # directory. An agent never gets 2 (see below): its stdin is a pipe, never a terminal.
        sys.stderr.write(f"donebell hook: unknown hook '{command}'\n{USAGE}" if command else USAGE)
        _release_signals_quietly()
        return EXIT_USAGE
    ctx = HookContext(command or "?")
    try:
        if command == "codex-stop":
            from donebell.workers.agents.codex.hook import codex_stop

            codex_stop(ctx, argv[1:])
        elif command == "codex-notify":
            from donebell.workers.agents.codex.hook import codex_notify

            codex_notify(ctx, argv[1:])
        elif command == "codex-permission":
            from donebell.workers.agents.codex.hook import codex_permission

            codex_permission(ctx, argv[1:])
        elif command == "claude":
            from donebell.workers.agents.claude.hook import claude

            claude(ctx, argv[1:])
        else:
            # An agent calling a name this version does not know (a hand-edited hooks file): exit 0
            # all the same, since Claude Code reads exit 2 from a Stop hook as "keep going" and the
            # agent would loop; the usage line and a logged warning say what is wrong.
            sys.stderr.write(f"donebell hook: unknown hook '{command}'\n{USAGE}")
            ctx.log("warning", "unknown hook command", command=command[:40])
    except PayloadError as exc:
        ctx.log("warning", f"payload refused: {exc}")
    except Exception as exc:  # noqa: BLE001 - a hook never hurts the agent: log and carry on
        ctx.log(
            "error", "hook internal error", error=f"{type(exc).__name__}: {exc}"[:300], at=_where(exc.__traceback__)
        )
    finally:
        _emit(OUTPUT.get(command, ""))
        _release_signals(ctx)
    return 0


def _typed_at_a_terminal() -> bool:
    try:
        return os.isatty(0)
    except (OSError, ValueError):
        return False


def _release_signals_quietly() -> None:
    """No hook ran: nothing to make durable, nothing to log."""
    hook_signals.release()


def _release_signals(ctx: HookContext) -> None:
    """The work is durable: SIGTERM/SIGHUP act again; one the agent sent meanwhile is logged."""
    noted = hook_signals.release()
    if noted:
        ctx.log("info", "agent signalled the hook; it finished its write first", signals=sorted(set(noted)))


def _where(tb: TracebackType | None) -> str:
    """``file:line`` of the innermost frame (the traceback module costs start-up time)."""
    if tb is None:
        return "?"
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"


def _emit(text: str) -> None:
    """Write the documented output; an agent that stopped reading must not turn into exit 120."""
    try:
        if text:
            sys.stdout.write(text)
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
