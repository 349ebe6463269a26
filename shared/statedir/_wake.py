"""The wake queue (workers only): ``wake/`` records of replies to the Continue buttons.

Layout (every write through :class:`~donebell.shared.statedir.StateDir`'s durable primitives)::

    wake/ticket-key.json        the HMAC key and host id (shared/wake_ticket.py)
    wake/replies/<key>.json     one record per reply: received → verified → requested →
                                confirmed | refused(reason) | failed; ``history`` lists each step
    wake/claims/<name>.claim    single-use claims, made by exclusive create (nonce-…, turn-…)
    wake/cursor.json            the id of the last reply message handled (subscription resume)

A record's key is the SHA-256 of the ntfy message id, so a message seen twice (a reconnect
replays the backlog) maps to the record it already has. Every step is written (fsynced) before
the wake role acts on it. Loaded on first use through :meth:`StateDir.wake_queue`.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING, Any

from donebell.shared.statedir import SCHEMA_VERSION, WAKE, InvalidRecord, encode, now
from donebell.shared.statedir._base import WAKE_CLAIMS, WAKE_REPLIES, WAKE_SPAWN

if TYPE_CHECKING:
    from collections.abc import Iterator

    from donebell.shared.statedir import StateDir

#: Statuses after which nothing more happens to a record.
FINAL = frozenset({"confirmed", "refused", "failed", "unconfirmed", "answered"})
HISTORY_MAX = 40


class WakeQueue:
    """The wake role's records in one state directory."""

    def __init__(self, state: StateDir) -> None:
        self.state = state
        for folder in (WAKE_REPLIES, WAKE_CLAIMS):
            state.ensure_folder(folder)

    @staticmethod
    def key_of(message_id: str) -> str:
        return hashlib.sha256(f"donebell/wake|{message_id}".encode()).hexdigest()

    def receive(self, message_id: str, fields: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Record a reply as ``received`` (durably) unless it already has a record; ``(record, new)``."""
        at = now()
        record: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "kind": "wake",
            "key": self.key_of(message_id),
            "provider": "unknown",
            "created_at": at,
            "message_id": message_id,
            "status": "received",
            "updated_at": at,
            "history": [{"status": "received", "at": at}],
            **fields,
        }
        if self.state.create(WAKE_REPLIES, record):
            return record, True
        existing = self.read(record["key"])
        return (existing if existing is not None else record), False

    def advance(self, record: dict[str, Any], status: str, **fields: Any) -> dict[str, Any]:
        """Durably move ``record`` to ``status`` (with ``fields``) before the caller acts on it."""
        at = now()
        record.pop("reason", None)  # a reason belongs to one step (kept in history), not to the next
        record.update(fields)
        record["status"], record["updated_at"] = status, at
        step: dict[str, Any] = {"status": status, "at": at}
        if fields.get("reason"):
            step["reason"] = fields["reason"]
        record["history"] = [*record.get("history", []), step][-HISTORY_MAX:]
        self.state.replace(WAKE_REPLIES, record)
        return record

    def read(self, key: str, *, repair: bool = True) -> dict[str, Any] | None:
        """The record, or None; a broken one goes to ``dead/`` (unless ``repair`` is off: readers)."""
        try:
            return self.state.read(WAKE_REPLIES, key)
        except InvalidRecord as exc:
            if repair:
                self.state.dead_letter_invalid(WAKE_REPLIES, f"{key}.json", str(exc))
            return None

    def records(self, *, repair: bool = True) -> Iterator[dict[str, Any]]:
        """Every wake record, oldest first (the ``log`` and ``explain`` commands list these)."""
        for key in self.state.keys(WAKE_REPLIES):
            record = self.read(key, repair=repair)
            if record is not None:
                yield record

    def open_records(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r.get("status") not in FINAL]

    def claim(self, name: str, owner: str) -> bool:
        """Take ``name`` for ``owner`` once and for all (exclusive create). False if another owner
        took it; True again for the same owner (a step redone after a crash)."""
        path = self._claim_path(name)
        body = encode({"schema": SCHEMA_VERSION, "name": name[:200], "owner": owner, "claimed_at": now()})
        if self.state.create_file(path, body):
            return True
        try:
            held = json.loads((self.state.read_bytes(path, limit=1 << 12) or b"{}").decode("utf-8"))
        except (InvalidRecord, ValueError):
            return False
        return isinstance(held, dict) and held.get("owner") == owner

    def release(self, name: str) -> bool:
        """Give a claim back (a wake that failed before any turn started): True if it was held."""
        return self.state._unlink(self._claim_path(name))

    def claimed(self, name: str) -> bool:
        return os.path.exists(self._claim_path(name))

    def _claim_path(self, name: str) -> str:
        return self.state.path(WAKE_CLAIMS, hashlib.sha256(name.encode("utf-8")).hexdigest() + ".claim")

    # subscription cursor ---------------------------------------------------------------------

    def cursor(self) -> str | None:
        """The id of the last message handled, or None on the first run."""
        try:
            data = self.state.read_bytes(self.state.path(WAKE, "cursor.json"), limit=1 << 12)
            value = json.loads(data.decode("utf-8")).get("last_message_id") if data else None
        except (InvalidRecord, ValueError, OSError, AttributeError):
            return None
        return value if isinstance(value, str) and value.isalnum() and len(value) <= 64 else None

    def set_cursor(self, message_id: str) -> None:
        body = encode({"schema": SCHEMA_VERSION, "last_message_id": message_id, "updated_at": now()})
        self.state.write_file(self.state.path(WAKE, "cursor.json"), body)

    def expire(self, older_than: float) -> int:
        """Delete finished records, claims and agent logs last changed before ``older_than``
        (maintenance passes a cutoff beyond every ticket's expiry: a spent claim can then no
        longer matter, since its ticket is refused as expired). Returns how many files went."""
        removed = 0
        for key in self.state.keys(WAKE_REPLIES):
            record = self.read(key)
            stamp = (record or {}).get("updated_at")
            if record and record.get("status") in FINAL and isinstance(stamp, (int, float)) and stamp < older_than:
                removed += self.state.remove(WAKE_REPLIES, key)
        for folder in (WAKE_CLAIMS, WAKE_SPAWN):
            try:
                entries = list(os.scandir(self.state.path(folder)))
            except FileNotFoundError:
                continue
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < older_than:
                    removed += self.state._unlink(entry.path)
        return removed

    def spawn_log(self, key: str) -> str:
        """Where the output of the agent process started for record ``key`` goes (0600)."""
        folder = self.state.ensure_folder(WAKE_SPAWN)
        return os.path.join(str(folder), f"{key[:16]}.log")


def iter_wake_records(state: StateDir) -> Iterator[dict[str, Any]]:
    """Every wake record of ``state``, oldest first (read-only): what ``log`` and ``explain`` show.

    Each has ``message_id``, ``status`` (received | verified | queued | requested | retry |
    confirmed | refused | failed | unconfirmed), ``reason`` when refused or failed, ``provider``,
    ``conversation_id``, ``turn_id``, ``new_turn`` once confirmed, and ``history`` (status, at, reason).
    """
    if not os.path.isdir(state.path(WAKE_REPLIES)):
        return iter(())
    queue = WakeQueue.__new__(WakeQueue)  # no folder creation: a reader never writes
    queue.state = state
    return queue.records(repair=False)


# other machines heard on the reply topic (docs/wake.md, "Several machines") ---------------------

PEERS_FILE = (WAKE, "peers.json")
#: A machine not heard from for this long is forgotten (it no longer makes titles name the host).
PEER_KEEP_SECONDS = 14 * 86400.0
PEERS_MAX = 64


def read_peers(state: StateDir, at: float | None = None) -> dict[str, dict[str, Any]]:
    """The other machines the wake role has heard, by host id, each with ``host``, ``origin``,
    ``machine_id`` (a digest), ``seen_at`` and ``via`` (``hello`` or ``ticket``); read-only."""
    cutoff = (now() if at is None else at) - PEER_KEEP_SECONDS
    try:
        data = state.read_bytes(state.path(*PEERS_FILE), limit=1 << 18)
        peers = json.loads(data.decode("utf-8")).get("peers") if data else None
    except (InvalidRecord, ValueError, OSError, AttributeError):
        return {}
    if not isinstance(peers, dict):
        return {}
    return {
        str(host_id): peer
        for host_id, peer in peers.items()
        if isinstance(peer, dict) and isinstance(peer.get("seen_at"), (int, float)) and peer["seen_at"] >= cutoff
    }


def note_peer(state: StateDir, host_id: str, facts: dict[str, Any]) -> bool:
    """Record that the machine ``host_id`` was heard (the wake role is the only writer); True when
    it is new or its facts changed (then it is worth answering with this machine's own hello)."""
    at = now()
    peers = read_peers(state, at)
    before = peers.get(host_id) or {}
    known = {k: v for k, v in before.items() if v is not None}
    merged = {**known, **{k: v for k, v in facts.items() if v is not None}, "seen_at": at}
    changed = {k: v for k, v in merged.items() if k != "seen_at"} != {k: v for k, v in known.items() if k != "seen_at"}
    if not changed and at - float(before.get("seen_at") or 0) < 60.0:
        return False  # the same news within a minute: not worth a write
    peers[host_id] = merged
    newest = dict(sorted(peers.items(), key=lambda kv: -float(kv[1]["seen_at"]))[:PEERS_MAX])
    body = encode({"schema": SCHEMA_VERSION, "peers": newest, "updated_at": at})
    state.write_file(state.path(*PEERS_FILE), body)
    return changed
