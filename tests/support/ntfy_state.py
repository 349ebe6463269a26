"""The stand-in's state: rate buckets, users and ACLs, the recorded requests, the cache.

Nothing here locks by itself (`Faults`, in ntfy_faults, does): `NtfyStandin` holds its one condition variable
around every other call, so readers never see half an update.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .ntfy_errors import err
from .ntfy_go import go_text, go_trim
from .ntfy_times import Since

Clock = Callable[[], float]

# ----------------------------------------------------------------------------------------- limits


class RateLimit(NamedTuple):
    """A token bucket: `burst` requests, refilled one per `replenish_seconds`."""

    burst: int
    replenish_seconds: float


NTFY_REQUEST_LIMIT = RateLimit(60, 5.0)  # visitor-request-limit-burst / -replenish
NTFY_AUTH_FAILURE_LIMIT = RateLimit(30, 60.0)
NTFY_DAILY_MESSAGE_LIMIT = 17280  # 86400 / 5


class TokenBucket:
    """golang.org/x/time/rate.Limiter as ntfy uses it: starts full, `Allow` takes one token."""

    def __init__(self, limit: RateLimit, clock: Clock) -> None:
        self.limit, self._clock = limit, clock
        self._tokens, self._last = float(limit.burst), clock()

    def tokens(self) -> float:
        now = self._clock()
        self._tokens = min(
            float(self.limit.burst), self._tokens + max(0.0, now - self._last) / self.limit.replenish_seconds
        )
        self._last = now
        return self._tokens

    def allow(self) -> bool:
        if self.tokens() >= 1:
            self._tokens -= 1
            return True
        return False


# ------------------------------------------------------------------------------------------- auth

PERMISSIONS = {  # ntfy's permission strings and their (read, write)
    "read-write": (True, True),
    "rw": (True, True),
    "read-only": (True, False),
    "read": (True, False),
    "ro": (True, False),
    "write-only": (False, True),
    "write": (False, True),
    "wo": (False, True),
    "deny-all": (False, False),
    "deny": (False, False),
    "none": (False, False),
}
TOKEN_RE = re.compile(r"^tk_[a-z0-9]{29}$")
EVERYONE = "*"


class Auth:
    """`maybeAuthenticate` + `user.Manager.Authorize` with an in-memory user table.

    `access` maps a user name (or "*" for everyone) to {topic pattern: permission}; a pattern may
    use `*`. As in ntfy's SQL: the user's own entry beats "*", a longer pattern beats a shorter one,
    write beats read, matching is ASCII case-insensitive (SQLite LIKE), and with no entry the
    default access applies. Admins may do everything.
    """

    def __init__(
        self,
        users: Mapping[str, str],
        admins: Iterable[str],
        tokens: Mapping[str, str],
        access: Mapping[str, Mapping[str, str]],
        default_access: str,
        failure_limit: RateLimit | None,
        clock: Clock,
    ) -> None:
        for token, name in tokens.items():
            if not TOKEN_RE.match(token) or name not in users:
                raise ValueError(f"token {token!r} must be tk_ + 29 [a-z0-9] and belong to a user")
        for perms in [{"": default_access}, *access.values()]:
            for perm in perms.values():
                if perm not in PERMISSIONS:
                    raise ValueError(f"unknown permission {perm!r}")
        self.users, self.admins, self.tokens = dict(users), set(admins), dict(tokens)
        self.default = PERMISSIONS[default_access]
        self._acl = [
            (name, pattern, PERMISSIONS[perm]) for name, perms in access.items() for pattern, perm in perms.items()
        ]
        self._clock = clock
        self.failures = TokenBucket(failure_limit, clock) if failure_limit else None

    def set_failure_limit(self, limit: RateLimit | None) -> None:
        self.failures = TokenBucket(limit, self._clock) if limit else None

    def identify(self, header: str) -> str | None:
        """The user the Authorization value names, None for anonymous; 401 40101 or 429 42909."""
        if not header.lower().startswith(("basic ", "bearer ")):
            return None  # any other scheme is anonymous, as in ntfy (#629)
        if self.failures is not None and not self.failures.tokens() > 1:
            raise err(42909)
        user = self._check(header)
        if user is None:
            if self.failures is not None:
                self.failures.allow()
            raise err(40101)
        return user

    def _check(self, header: str) -> str | None:
        if header.startswith("Bearer"):  # case-sensitive; "bearer x" falls through to Basic and fails
            return self._token(go_trim(header[len("Bearer") :]))
        if header[:6].lower() != "basic ":
            return None
        try:
            decoded = go_text(base64.b64decode(header[6:], validate=True))
        except (binascii.Error, ValueError):
            return None
        name, colon, password = decoded.partition(":")
        if not colon:
            return None
        if name == "":
            return self._token(password)  # ":tk_..." is token auth
        if name == EVERYONE or self.users.get(name) != password:
            return None
        return name

    def _token(self, token: str) -> str | None:
        return self.tokens.get(token) if len(token) == 32 else None

    def allowed(self, user: str | None, topic: str, write: bool) -> bool:
        if user in self.admins:
            return True
        name = user or EVERYONE
        matches = [
            (entry_user == name, len(pattern), perm[1], perm)
            for entry_user, pattern, perm in self._acl
            if entry_user in (name, EVERYONE) and _like(pattern, topic)
        ]
        read_write = max(matches)[3] if matches else self.default
        return read_write[1] if write else read_write[0]


def _like(pattern: str, topic: str) -> bool:
    regex = "".join(".*" if c == "*" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, topic, re.IGNORECASE | re.ASCII) is not None


# -------------------------------------------------------------------------------------- recording


@dataclass
class RecordedRequest:
    """One ntfy request as it arrived, plus how the stand-in answered it."""

    seq: int
    method: str
    target: str  # the raw request target, query included
    path: str  # the decoded path
    query: dict[str, str]
    headers: list[tuple[str, str]]  # in arrival order, names as sent
    body: bytes
    parsed: Any  # the body as JSON (Python's parser), or None
    arrived_monotonic: float
    arrived_wall: float
    connection_id: int  # equal ids: the same TCP connection (keep-alive reuse)
    status: int | None = None  # None: no answer was sent (dropped, hung, client gone)
    ntfy_code: int | None = None
    fault: str | None = None  # the injected fault kind that answered it
    message_ids: list[str] = field(default_factory=list)  # what it stored

    def header(self, name: str) -> str | None:
        """The first value of a header, by case-insensitive name."""
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def to_json(self) -> dict[str, Any]:
        doc = {k: v for k, v in vars(self).items() if k != "body"}
        doc["headers"] = [list(h) for h in self.headers]
        doc["body_text"] = go_text(self.body)
        doc["body_base64"] = base64.b64encode(self.body).decode("ascii")
        return doc


# ------------------------------------------------------------------------------------------ cache


@dataclass
class Row:
    rowid: int
    msg: dict[str, Any]  # rendered exactly as ntfy returns it
    topic: str
    time: int
    expires: int
    cached: bool
    sequence_id: str


@dataclass
class Filters:
    """`queryFilter`: applies to `message` events only; unset priority counts as 3."""

    id: str = ""
    message: str = ""
    title: str = ""
    tags: list[str] = field(default_factory=list)
    priorities: list[int] = field(default_factory=list)

    def passes(self, m: Mapping[str, Any]) -> bool:
        if m["event"] != "message":
            return True
        return (
            (not self.id or m["id"] == self.id)
            and (not self.message or m.get("message") == self.message)
            and (not self.title or m.get("title") == self.title)
            and (not self.priorities or (m.get("priority") or 3) in self.priorities)
            and all(t in m.get("tags", []) for t in self.tags)
        )


class Cache:
    """Every accepted message and event in order; `poll` gives ntfy's cache view of them."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self._rowids = iter(range(1, 2**62))
        # (topic, sequence ID) of rows stored with a future time: only those can be replaced. The
        # scan over every row is then paid only for them, so a 10,000-message backlog does not make
        # each publish slower than the last (it did: the stand-in, not donebell, was the bottleneck).
        self._scheduled: set[tuple[str, str]] = set()

    def add(
        self, msg: dict[str, Any], topic: str, time: int, expires: int, cached: bool, sequence_id: str, now: float
    ) -> Row:
        # ⚠ 2.16: a new revision replaces a still-scheduled one with the same sequence ID.
        if (topic, sequence_id) in self._scheduled:
            self._scheduled.discard((topic, sequence_id))
            self.rows = [
                r for r in self.rows if not (r.topic == topic and r.sequence_id == sequence_id and r.time > now)
            ]
        row = Row(next(self._rowids), msg, topic, time, expires, cached, sequence_id)
        self.rows.append(row)
        if time > now:
            self._scheduled.add((topic, sequence_id))
        return row

    def poll(self, topics: list[str], since: Since, scheduled: bool, now: float, filters: Filters) -> list[Row]:
        """`sendOldMessages`: per topic by since, then all sorted by time."""
        if since.kind == "none":
            return []
        live = [r for r in self.rows if r.cached and not (r.expires and r.expires <= now and r.time <= now)]
        anchor = next((r.rowid for r in live if r.msg["id"] == since.value), None) if since.kind == "id" else None
        since_time = since.value if isinstance(since.value, int) else 0
        out: list[Row] = []
        for topic in topics:
            rows = sorted((r for r in live if r.topic == topic), key=lambda r: (r.time, r.rowid))
            published = [r for r in rows if r.time <= now]
            if since.kind == "latest":
                out += published[-1:]
                continue
            visible = rows if scheduled else published
            if anchor is not None:
                out += [r for r in visible if r.rowid > anchor]  # an unknown ID means all
            else:
                out += [r for r in visible if r.time >= since_time]
        return sorted((r for r in out if filters.passes(r.msg)), key=lambda r: r.time)

    def after(self, rowid: int, topics: list[str], now: float) -> list[Row]:
        return [r for r in self.rows if r.rowid > rowid and r.topic in topics and r.time <= now]

    @property
    def last_rowid(self) -> int:
        return self.rows[-1].rowid if self.rows else 0
