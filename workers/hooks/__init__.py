"""``donebell hook codex-stop | codex-notify | codex-permission | claude``: agent signals in, candidates out, at once.

A hook runs inside the agent's turn. Whatever happens it prints its documented output
(``codex-stop``: exactly ``{}``; the others, ``codex-permission`` included: nothing, no decision) and exits 0; a refused payload or an
internal error becomes one line in the state directory's log. It never sends anything itself
and never touches the network. The hook path imports the standard library and
``donebell.shared.{cli,paths,configfile,keys,statedir,records,ingest,codex_meta,liveness}``
only, and of the standard library not ``typing``, ``pathlib``, ``contextlib`` or
``importlib.util`` (``tests/test_import_cost.py``); see docs/hooks.md.
"""

from __future__ import annotations

import os
import sys

from donebell.shared import hook_signals
from donebell.workers.hooks.context import HookContext
from donebell.workers.hooks.stdin import PayloadError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

#: What each hook prints on stdout, always (Codex treats ``{}`` as "no decision").
#: ``codex-permission`` prints nothing: Codex's "no decision", its own approval path goes on.
OUTPUT = {"codex-stop": "{}\n", "codex-notify": "", "codex-permission": "", "claude": ""}
USAGE = "usage: donebell hook codex-stop|codex-notify|codex-permission|claude (payload on stdin, or as the last argument for codex-notify)\n"


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    ctx = HookContext(command or "?")
    try:
        if command == "codex-stop":
            from donebell.workers.hooks.codex import codex_stop

            codex_stop(ctx, argv[1:])
        elif command == "codex-notify":
            from donebell.workers.hooks.codex import codex_notify

            codex_notify(ctx, argv[1:])
        elif command == "codex-permission":
            from donebell.workers.hooks.codex import codex_permission

            codex_permission(ctx, argv[1:])
        elif command == "claude":
            from donebell.workers.hooks.claude import claude

            claude(ctx, argv[1:])
        else:
            sys.stderr.write(USAGE)
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
