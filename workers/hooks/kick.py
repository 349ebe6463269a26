"""Start an on-demand delivery worker when no supervisor runs one (notifications without a service).

After a hook wrote a candidate, if no live process holds the delivery role (its recorded owner,
checked by pid + start time) and no worker this mechanism started is still alive, the hook
starts ``donebell worker delivery --until-idle`` detached and returns at once. Several hooks
racing here may start several workers; only one gets the role lock and the others exit.

``locks/delivery.kick.json`` remembers the last worker started this way, so hooks arriving while
it is still importing (before it records itself as the lock owner) do not start more.

Test seam: ``DONEBELL_KICK_COMMAND`` = ``off`` disables the kick; a JSON list is an argv
*prefix* the real command is appended to (tests point it at a recorder). Not a user setting.
"""

from __future__ import annotations

import json
import os

from donebell.shared.process.liveness import owner_alive, process_create_time
from donebell.shared.statedir import StateDir, encode, now
from donebell.workers.kit.hook_context import HookContext

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

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
        data = state.read_bytes(state.path("locks", KICK_RECORD), limit=1 << 16)
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
    state.write_file(state.path("locks", KICK_RECORD), encode(record), durable=False)
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
