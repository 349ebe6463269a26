"""``donebell hook codex-stop | codex-notify | codex-permission | claude``: agent signals in, candidates out, at once.

A hook runs inside the agent's turn. Whatever happens it prints its documented output
(``codex-stop``: exactly ``{}``; the others, ``codex-permission`` included: nothing, no decision) and exits 0; a refused payload or an
internal error becomes one line in the state directory's log. It never sends anything itself
and never touches the network. The hook path imports the standard library and only the donebell
modules ``shared/lean_core.py`` names, and of the standard library not ``typing``, ``pathlib``,
``contextlib`` or ``importlib.util`` (``tests/test_import_cost.py``); see docs/hooks.md.
"""

from __future__ import annotations

import gc
import os
import sys

from donebell.shared import lean_json as json
from donebell.shared.process import hook_signals
from donebell.shared.process.liveness import owner_alive, process_create_time
from donebell.shared.statedir import LOCKS, StateDir, encode, now
from donebell.workers.agents.registry import hook_target, hosting_agent, names
from donebell.workers.kit.hook_context import HookContext, PayloadError

#: Set while a PermissionRequest hook sleeps for the phone's answer (``approval_lean``; imported
#: only when it is set, so the name is repeated here and held equal by a test).
RESUME_ENV = "DONEBELL_APPROVAL_RESUME"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

USAGE = (
    "usage: donebell hook codex-stop|codex-notify|codex-permission|claude|copilot EVENT"
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
  copilot EVENT     Copilot CLI's agentStop, sessionEnd, notification and permissionRequest hooks
                    (payload on stdin; prints nothing, or a permission answer from the phone)
"""
)
EXIT_USAGE = 2
_HELP_WORDS = ("-h", "--help", "help")


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if RESUME_ENV in os.environ:  # a PermissionRequest hook back from its lean sleep
        return _resume_waiting(command)
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
    ctx.agent = agent
    host = hosting_agent(os.environ)
    ctx.hook_host = host if agent is not None and host != agent.NAME else None
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
        if ctx.delivery_wanted:  # the agent's hook wrote a record: delivery must see it
            kick_and_log(ctx)
        # What the agent expects on stdout, always (Codex reads ``{}`` from its Stop hook as "no
        # decision"); nothing for a command no agent knows.
        output = agent.HOOK_OUTPUT.get(event, "") if agent is not None else ""
        if ctx.after is None:
            _emit(output)
            _release_signals(ctx)
        else:  # waiting for the phone: the agent may stop the hook meanwhile, as any other
            _release_signals(ctx)
            answer = _after(ctx)
            _emit((agent.approval_answer(answer) if agent is not None else answer) or output)
    return 0


def _resume_waiting(command: str) -> int:
    """Carry on the wait for the phone where the lean sleep woke (``workers/kit/approval_lean.py``):
    the payload was read and the record written before the sleep; what is left is the wait."""
    from donebell.workers.kit import approval_lean, approval_wait

    agent, event = hook_target(command)
    ctx = HookContext(command or "?")
    ctx.agent = agent
    _release_signals(ctx)
    wait = approval_lean.resumed()
    if wait is not None and agent is not None:
        key, until, digest = wait
        ctx.after = lambda: approval_wait.await_answer(ctx, key, until, digest)
        _emit(agent.approval_answer(_after(ctx)) or agent.HOOK_OUTPUT.get(event, ""))
    else:
        ctx.log("error", "hook resumed without its wait; the agent's own dialog decides", command=command[:40])
        _emit(agent.HOOK_OUTPUT.get(event, "") if agent is not None else "")
    return 0


def _after(ctx: HookContext) -> str | None:
    assert ctx.after is not None
    gc.enable()  # off for the short hook (supervisor/cli.py); a wait may last minutes
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


# --- the kick --------------------------------------------------------------------------------
# Start an on-demand delivery worker when no supervisor runs one (notifications without a service).
#
# After a hook wrote a candidate, if no live process holds the delivery role (its recorded owner,
# checked by pid + start time) and no worker this mechanism started is still alive, the hook
# starts ``donebell worker delivery --until-idle`` detached and returns at once. Several hooks
# racing here may start several workers; only one gets the role lock and the others exit.
#
# ``locks/delivery.kick.json`` remembers the last worker started this way, so hooks arriving while
# it is still importing (before it records itself as the lock owner) do not start more.
#
# Test seam: ``DONEBELL_KICK_COMMAND`` = ``off`` disables the kick; a JSON list is an argv
# *prefix* the real command is appended to (tests point it at a recorder). Not a user setting.

KICK_ENV = "DONEBELL_KICK_COMMAND"
KICK_RECORD = "delivery.kick.json"


def worker_argv() -> list[str]:
    """The on-demand worker's command line: this interpreter, this package, no shell, no cwd on sys.path."""
    from donebell.shared.process.groups import own_python

    return own_python("donebell.supervisor.cli", "worker", "delivery", "--until-idle")


def kick_argv() -> list[str] | None:
    """The argv to start, or None when the test seam turned the kick off."""
    raw = os.environ.get(KICK_ENV, "").strip()
    if not raw:
        return worker_argv()
    if raw.lower() in ("off", "none", "0", "false"):
        return None
    prefix = json.loads(raw)
    if not isinstance(prefix, list) or not all(isinstance(a, str) for a in prefix):
        raise ValueError(f"{KICK_ENV} must be 'off' or a JSON list of strings")
    return [*prefix, *worker_argv()]


def read_kick_record(state: StateDir) -> dict[str, Any] | None:
    try:
        data = state.read_bytes(state.path(LOCKS, KICK_RECORD), limit=1 << 16)
        record = None if data is None else json.loads(data.decode("utf-8"))
    except Exception:  # noqa: BLE001 - unreadable or not JSON: no kick is known
        return None
    return record if isinstance(record, dict) else None


def kick_delivery(state: StateDir) -> str:
    """Start a delivery worker if none is alive; returns ``running``, ``starting``, ``off`` or ``kicked``.

    Raises ``OSError`` if the worker cannot be started (the caller logs it; the candidate is safe
    in ``pending/`` for the next worker or service start).
    """
    if owner_alive(state.lock_owner("delivery")):
        return "running"
    if owner_alive(read_kick_record(state)):
        return "starting"
    argv = kick_argv()
    if argv is None:
        return "off"
    from donebell.shared.process.groups import NEUTRAL_CWD, spawn_detached

    pid = spawn_detached(argv, cwd=NEUTRAL_CWD)  # never the agent's folder: see proc_group
    record = {"pid": pid, "create_time": process_create_time(pid), "kicked_at": now(), "role": "delivery"}
    state.write_file(state.path(LOCKS, KICK_RECORD), encode(record), durable=False)
    return "kicked"


def kick_and_log(ctx: HookContext) -> None:
    """:func:`kick_delivery` after a write; a failure is logged (the candidate waits safely)."""
    try:
        result = kick_delivery(ctx.state)
    except Exception as exc:  # noqa: BLE001 - the record is written; a failed kick must not hide that
        ctx.log("warning", "could not start a delivery worker", error=f"{type(exc).__name__}: {exc}"[:200])
        return
    if result == "kicked":
        ctx.log("info", "started an on-demand delivery worker")
