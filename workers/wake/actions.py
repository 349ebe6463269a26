"""The "Continue" buttons of a done/failed/stopped notification (ntfy ``http`` actions).

Each configured ``wake_actions`` entry becomes one button that POSTs a fresh signed ticket
(:mod:`donebell.shared.wake_ticket`) to ``<server>/<wake_topic>``, with ``wake_token`` (meant to
be a write-only user's token) as its Authorization header when set. The button's prompt is not
in the action: the wake role looks it up in the local config by the ticket's action index.

The URL never carries the server's ``user:password@``: everyone who reads the notification topic
sees its buttons, and those are the notification account's credentials, not the phone's.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.config.secret_text import public_url
from donebell.shared.config.view import SettingsLike
from donebell.shared.statedir import StateDir, now, open_state_dir
from donebell.shared.wake_ticket import TicketKey, issue, issue_answer, load_key
from donebell.workers.agents.registry import agent

MAX_ACTIONS = 3  # ntfy refuses more


def add_wake_actions(payload: dict[str, Any], record: dict[str, Any], settings: SettingsLike) -> None:
    """Append the buttons to the ntfy JSON ``payload`` (after any link action, at most 3 in all)."""
    taken = list(payload.get("actions") or [])
    buttons = wake_actions(record, settings, room=MAX_ACTIONS - len(taken))
    if buttons:
        payload["actions"] = taken + buttons


def wake_actions(
    record: dict[str, Any], settings: SettingsLike, *, room: int = MAX_ACTIONS, state: StateDir | None = None
) -> list[dict[str, Any]]:
    """The buttons for ``record`` (none when wake is off or the record cannot be continued)."""
    ident = answerable(record)
    if not settings.wake_enabled or not settings.wake_topic or ident is None or room <= 0:
        return []
    try:
        key = load_key(state or open_state_dir())
    except Exception:  # noqa: BLE001 - a broken key costs the buttons, never the notification
        return []
    return [_button(key, record, settings, i, entry) for i, entry in enumerate(settings.wake_actions[:room])]


def answerable(record: dict[str, Any]) -> tuple[str, str, str] | None:
    """``(provider, conversation id, turn id)`` of a local root task this host can continue."""
    provider = record.get("provider")
    found = agent(provider)
    if found is None or record.get("test") is True:
        return None
    sources = record.get("sources")
    if record.get("source") == "remote-scanner" or (isinstance(sources, list) and "remote-scanner" in sources):
        return None  # a thread of another machine's Codex home: not startable here
    conv, turn = found.conversation_of(record)
    if not conv or not turn:
        return None
    return found.NAME, conv, turn


def _button(
    key: TicketKey, record: dict[str, Any], settings: SettingsLike, index: int, entry: dict[str, str]
) -> dict[str, Any]:
    provider, conv, turn = answerable(record) or ("", "", "")
    body, _ = issue(
        key,
        provider=provider,
        conversation_id=conv,
        turn_id=turn,
        action=index,
        ttl_seconds=settings.wake_ticket_ttl_seconds,
    )
    return _http_action(settings, entry.get("label", "Continue")[:40], body)


def _http_action(settings: SettingsLike, label: str, body: str) -> dict[str, Any]:
    """An ntfy ``http`` button POSTing ``body`` (a ticket) to the reply topic."""
    action: dict[str, Any] = {
        "action": "http",
        "label": label,
        "url": f"{public_url(settings.server)}/{settings.wake_topic}",
        "method": "POST",
        "body": body,
        "clear": True,
    }
    if settings.wake_token:
        action["headers"] = {"Authorization": f"Bearer {settings.wake_token.get_secret_value()}"}
    return action


#: The permission prompt's two buttons, labelled exactly so (docs/approvals.md).
APPROVAL_BUTTONS = (("Allow", "allow"), ("Deny", "deny"))


def approval_actions(
    record: dict[str, Any], settings: SettingsLike, *, state: StateDir | None = None
) -> list[dict[str, Any]]:
    """``Allow`` and ``Deny`` for a permission prompt whose hook still waits, or none.

    Each carries a single-use answer ticket bound to this host, the agent, the conversation and
    turn, the request (its record's key) and the digest of the exact call, expiring when the hook
    stops waiting (``approval_until``): a tap after that could answer nothing.
    """
    from donebell.workers.wake.policy import approvals_problem

    until, digest = record.get("approval_until"), record.get("tool_digest")
    found = agent(record.get("provider"))
    if not isinstance(until, (int, float)) or until <= now() or not isinstance(digest, str) or found is None:
        return []
    conv, turn = found.conversation_of(record)
    if not conv or approvals_problem(settings) is not None:
        return []
    try:
        key = load_key(state or open_state_dir())
    except Exception:  # noqa: BLE001 - a broken key costs the buttons, never the notification
        return []
    buttons = []
    for label, decision in APPROVAL_BUTTONS:
        body, _ = issue_answer(
            key,
            provider=found.NAME,
            conversation_id=conv,
            turn_id=turn or "-",
            request=record["key"],
            digest=digest,
            decision=decision,
            expires_at=until,
        )
        buttons.append(_http_action(settings, label, body))
    return buttons
