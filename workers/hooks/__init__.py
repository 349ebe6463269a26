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
from donebell.workers.agents.registry import hook_target, names
from donebell.workers.kit.hook_context import HookContext
from donebell.workers.kit.hook_input import PayloadError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

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
    # ``<agent>[-<event>]``: the registry imports that one agent's module, nothing else.
    agent, event = hook_target(command)
    known = agent is not None and event in agent.HOOK_OUTPUT
    if command in _HELP_WORDS or (known and argv[1:] in (["-h"], ["--help"])):
        sys.stdout.write(HELP)  # before HookContext: help creates no state directory and logs nothing
        _release_signals_quietly()
        return 0
    if not known and _typed_at_a_terminal():
        # A person's typo: a usage error like every other verb's, without touching the state
        # directory. An agent never gets 2 (see below): its stdin is a pipe, never a terminal.
        sys.stderr.write(f"donebell hook: unknown hook '{command}'\n{USAGE}" if command else USAGE)
        _release_signals_quietly()
        return EXIT_USAGE
    ctx = HookContext(command or "?")
    try:
        if agent is not None and known:
            agent.hook(event, ctx, argv[1:])
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
        # What the agent expects on stdout, always (Codex reads ``{}`` from its Stop hook as "no
        # decision"); nothing for a command no agent knows.
        output = agent.HOOK_OUTPUT.get(event, "") if agent is not None else ""
        if ctx.after is None:
            _emit(output)
            _release_signals(ctx)
        else:  # waiting for the phone: the agent may stop the hook meanwhile, as any other
            _release_signals(ctx)
            _emit(_after(ctx) or output)
    return 0


def _after(ctx: HookContext) -> str | None:
    assert ctx.after is not None
    try:
        return ctx.after()
    except Exception as exc:  # noqa: BLE001 - an answer that cannot be read is no answer
        ctx.log("error", "hook internal error while waiting", error=f"{type(exc).__name__}: {exc}"[:300])
        return None


def commands() -> dict[str, str]:
    """Every hook command of every registered agent -> what it prints (loads every agent's module)."""
    found = {}
    for name in names():
        agent = hook_target(name)[0]
        for event, output in agent.HOOK_OUTPUT.items() if agent is not None else ():
            found[f"{name}-{event}" if event else name] = output
    return found


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
