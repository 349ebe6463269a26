"""``donebell hook toy-done`` (payload on stdin: ``session``, ``turn``, ``cwd``, ``log``, ``title``,
``message``): the toy says a turn ended; the gate checks its log before any push."""

from __future__ import annotations

from typing import TYPE_CHECKING

from donebell.shared.ingest import submit_candidate
from donebell.shared.keys import identity
from donebell.shared.records import new_candidate
from donebell.workers.kit.hook_context import message_field, stdin_object, text_field

if TYPE_CHECKING:
    from donebell.workers.kit.hook_context import HookContext

NAME = "toy"
PATH_LIMIT = 4096


def done(ctx: HookContext, args: list[str]) -> None:
    payload = stdin_object()
    key, weak = identity(NAME, text_field(payload, "session"), text_field(payload, "turn"))
    candidate = new_candidate(
        key=key,
        provider=NAME,
        source="toy-hook",
        weak_identity=weak,
        session_id=text_field(payload, "session"),
        turn_id=text_field(payload, "turn"),
        cwd=text_field(payload, "cwd", PATH_LIMIT),
        transcript_path=text_field(payload, "log", PATH_LIMIT),
        toy_title=text_field(payload, "title"),
        last_message=ctx.excerpt(message_field(payload, "message", 4000)),
        outcome="done",
        origin=ctx.origin,
    )
    ctx.log("info", f"toy done: {submit_candidate(ctx.state, candidate)}", key=key)
