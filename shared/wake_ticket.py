"""Signed wake tickets: the only authority a "Continue" button carries (see docs/wake.md).

A ticket is the body an ntfy ``http`` action POSTs to the reply topic::

    dbw1.<base64url(claims JSON)>.<base64url(HMAC-SHA256(key, "dbw1.<claims>"))>

Its claims name this host, the provider, the thread (Codex) or session (Claude), the turn it
answers, the button's index, a 128-bit nonce and an expiry. An answer ticket (``v: 2``, the
Allow / Deny buttons of a permission prompt, docs/approvals.md) names instead of a button the
request (its needs-you record's key), the digest of the exact tool call, and the decision. Everything in it is readable by
whoever can read the notification topic; it authorizes exactly one turn, once (the wake role
claims the nonce). The prompt a button sends lives only in the local config.

The key lives only in the state directory (``wake/ticket-key.json``, 0600), created on first
use; :func:`rotate_key` replaces it (``donebell config rotate-wake-key``), which invalidates
every open ticket. The host id in the same file survives a rotation: a ticket from another
host sharing the reply topic is recognized by it and ignored without a word. The file also names
the machine it belongs to (:mod:`donebell.shared.machine`); a copy on another machine gets a new
host id and key the first time it is loaded there, so one tap never runs on two machines.

Standard library only; not on the hook path.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from donebell.shared import machine
from donebell.shared.statedir import SCHEMA_VERSION, WAKE, InvalidRecord, StateDir, encode, now

PREFIX = "dbw1"
KEY_FILE = (WAKE, "ticket-key.json")
#: A reply longer than this is not a ticket (ours are ~300 bytes): refused before any parsing.
MAX_TICKET_CHARS = 2048
_CLAIM_TYPES: dict[str, type] = {"v": int, "h": str, "p": str, "c": str, "u": str, "a": int, "n": str, "e": int}
_ANSWER_CLAIM_TYPES: dict[str, type] = {
    **{name: kind for name, kind in _CLAIM_TYPES.items() if name != "a"},
    **{"r": str, "d": str, "x": str},
}
DECISIONS = ("allow", "deny")


def _agent_name(name: str) -> bool:
    return 0 < len(name) <= 32 and name.isascii() and name.isalnum() and name.islower()


class TicketRefused(Exception):
    """The reply is not a ticket this host honours; ``reason`` is one stable word."""

    def __init__(self, reason: str, detail: str = "", *, nonce: str | None = None, host_id: str | None = None) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.nonce = nonce  # set once the signature held (an expired ticket is still ours)
        self.host_id = host_id  # ``other-host``: the machine the ticket names


@dataclass(frozen=True)
class Ticket:
    """The verified claims of one ticket."""

    host_id: str
    provider: str
    conversation_id: str  # Codex thread id or Claude session id
    turn_id: str  # the turn the notification reported (Codex turn id, Claude prompt id)
    action: int  # the Continue button's index; -1 for an answer ticket
    nonce: str
    expires_at: int
    request: str | None = None  # answer tickets: the needs-you record's key
    digest: str | None = None  # answer tickets: the digest of the exact tool call
    decision: str | None = None  # answer tickets: "allow" or "deny"


@dataclass(frozen=True)
class TicketKey:
    host_id: str
    secret: bytes


def load_key(state: StateDir) -> TicketKey:
    """The key of this state directory, created (0600, first writer wins) if there is none, and
    replaced by a new identity when the directory belongs to another machine (:func:`_moved`)."""
    path = _key_path(state)
    data = state.read_bytes(path, limit=1 << 14)
    if data is None:
        state.ensure_folder(KEY_FILE[0])
        state.create_file(path, _key_body(os.urandom(16).hex()))  # False: a racing process won
        data = state.read_bytes(path, limit=1 << 14)
    obj = _parse(path, data)
    here = machine.current()
    if "machine" not in obj:  # a key from before machines were recorded: adopted as this one's
        state.write_file(path, encode({**obj, "machine": here}))
    elif machine.differs(obj["machine"], here):
        obj = _moved(state, obj, here)
    return TicketKey(str(obj["host_id"]), bytes.fromhex(obj["key"]))


def key_file(state: StateDir) -> dict[str, Any] | None:
    """The key file's record without the secret, read-only (doctor, status); None if absent or bad."""
    path = _key_path(state)
    try:
        obj = _parse(path, state.read_bytes(path, limit=1 << 14))
    except InvalidRecord:
        return None
    obj.pop("key", None)
    return obj


def _parse(path: str, data: bytes | None) -> dict[str, Any]:
    try:
        obj = json.loads((data or b"").decode("utf-8"))
        bytes.fromhex(obj["key"])
        str(obj["host_id"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise InvalidRecord(f"{path}: not a wake key ({type(exc).__name__})") from None
    if not isinstance(obj, dict):
        raise InvalidRecord(f"{path}: not a wake key")
    return obj


def _moved(state: StateDir, old: dict[str, Any], here: dict[str, Any]) -> dict[str, Any]:
    """The state directory was copied from another machine: a new host id and key, loudly.

    Its copy of the key would make both machines honour one tap (each takes the other's tickets
    for its own). The new identity is written once per move: the first process to create
    ``wake/moved-<old host id>.json`` decides it, every other one copies that file.
    """
    why = machine.differs(old.get("machine"), here)
    body = _key_body(os.urandom(16).hex(), moved_from={"host_id": old["host_id"], "machine": old.get("machine")})
    marker = state.path(KEY_FILE[0], f"moved-{str(old['host_id'])[:32]}.json")
    state.create_file(marker, body)  # False: another process of this machine decided first
    decided = state.read_bytes(marker, limit=1 << 14)
    obj = _parse(marker, decided)
    state.write_file(_key_path(state), decided or body)
    logging.getLogger("donebell.wake").error(
        "this state directory was copied from another machine (%s): it has a new wake identity and key; "
        'Continue and Allow buttons issued there are ignored here (docs/wake.md, "Several machines")',
        why,
    )
    return obj


def rotate_key(state: StateDir) -> TicketKey:
    """Replace the key (keeping the host id): every ticket issued so far stops verifying. A
    running wake role notices the file changed and verifies with the new key from then on."""
    try:
        host_id = load_key(state).host_id
    except InvalidRecord:
        host_id = os.urandom(16).hex()
    state.write_file(_key_path(state), _key_body(host_id, rotated_at=now()))
    return load_key(state)


def key_signature(state: StateDir) -> tuple[int, int, int] | None:
    """What changes when the key file is replaced (inode, mtime, size); None when it is absent."""
    try:
        st = os.stat(_key_path(state))
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def issue(
    key: TicketKey, *, provider: str, conversation_id: str, turn_id: str, action: int, ttl_seconds: float
) -> tuple[str, Ticket]:
    """A fresh ticket (new nonce) and its claims."""
    ticket = Ticket(
        key.host_id, provider, conversation_id, turn_id, action, os.urandom(16).hex(), int(now() + ttl_seconds)
    )
    claims = {"v": 1, "h": ticket.host_id, "p": provider, "c": conversation_id, "u": turn_id, "a": action}
    claims.update({"n": ticket.nonce, "e": ticket.expires_at})
    signed = f"{PREFIX}.{_b64(json.dumps(claims, separators=(',', ':')).encode('utf-8'))}"
    return f"{signed}.{_b64(_mac(key, signed))}", ticket


def issue_answer(
    key: TicketKey,
    *,
    provider: str,
    conversation_id: str,
    turn_id: str,
    request: str,
    digest: str,
    decision: str,
    expires_at: float,
) -> tuple[str, Ticket]:
    """A fresh answer ticket (an Allow or Deny button) for one request, valid until ``expires_at``."""
    assert decision in DECISIONS, decision
    nonce, expiry = os.urandom(16).hex(), int(expires_at)
    ticket = Ticket(key.host_id, provider, conversation_id, turn_id, -1, nonce, expiry, request, digest, decision)
    claims = {"v": 2, "h": key.host_id, "p": provider, "c": conversation_id, "u": turn_id}
    claims.update({"r": request, "d": digest, "x": decision, "n": nonce, "e": expiry})
    signed = f"{PREFIX}.{_b64(json.dumps(claims, separators=(',', ':')).encode('utf-8'))}"
    return f"{signed}.{_b64(_mac(key, signed))}", ticket


def verify(key: TicketKey, text: str, at: float | None = None) -> Ticket:
    """The claims of ``text``, or :class:`TicketRefused` with ``malformed``, ``other-host``,
    ``bad-signature`` or ``expired`` (checked in that order; the MAC in constant time)."""
    text = text.strip()
    if len(text) > MAX_TICKET_CHARS:
        raise TicketRefused("malformed", f"{len(text)} characters")
    parts = text.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise TicketRefused("malformed", "not a donebell ticket")
    try:
        claims = json.loads(_unb64(parts[1]).decode("utf-8"))
        mac = _unb64(parts[2])
    except (ValueError, UnicodeDecodeError):
        raise TicketRefused("malformed", "undecodable") from None
    types = _ANSWER_CLAIM_TYPES if isinstance(claims, dict) and claims.get("v") == 2 else _CLAIM_TYPES
    if not isinstance(claims, dict) or set(claims) != set(types):
        raise TicketRefused("malformed", "unexpected claims")
    for name, kind in types.items():
        if type(claims[name]) is not kind:
            raise TicketRefused("malformed", f"claim {name!r} has the wrong type")
    if claims["h"] != key.host_id:
        raise TicketRefused("other-host", host_id=claims["h"])  # a host sharing the reply topic: not ours to judge
    if not hmac.compare_digest(mac, _mac(key, f"{parts[0]}.{parts[1]}")):
        raise TicketRefused("bad-signature")
    # The agent is named as the registry names it (``workers/agents/registry.py``, a layer above
    # this one): here only its shape; the wake role refuses a name no agent is registered under.
    if claims["v"] not in (1, 2) or not _agent_name(claims["p"]) or not claims["c"] or not claims["u"]:
        raise TicketRefused("malformed", "unsupported claims")
    if claims["v"] == 2 and (claims["x"] not in DECISIONS or not claims["r"] or not claims["d"]):
        raise TicketRefused("malformed", "unsupported answer")
    if claims["e"] <= (now() if at is None else at):
        raise TicketRefused("expired", nonce=claims["n"])
    if claims["v"] == 2:
        answer = (claims["r"], claims["d"], claims["x"])
        return Ticket(claims["h"], claims["p"], claims["c"], claims["u"], -1, claims["n"], claims["e"], *answer)
    return Ticket(claims["h"], claims["p"], claims["c"], claims["u"], claims["a"], claims["n"], claims["e"])


def _key_path(state: StateDir) -> str:
    return state.path(*KEY_FILE)


def _key_body(host_id: str, **fields: Any) -> bytes:
    record: dict[str, Any] = {"schema": SCHEMA_VERSION, "host_id": host_id, "key": os.urandom(32).hex()}
    record.update(created_at=now(), machine=machine.current(), **fields)
    return encode(record)


def _mac(key: TicketKey, signed: str) -> bytes:
    return hmac.new(key.secret, signed.encode("ascii"), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not text or any(c not in _B64_ALPHABET for c in text):
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:  # non-canonical trailing bits: one ticket has exactly one spelling
        raise ValueError("not canonical base64url")
    return data


_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
