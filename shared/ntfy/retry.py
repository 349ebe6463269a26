"""What a delivery attempt's outcome means, and how long to wait before the next one.

The retry table (docs/delivery.md), exactly:

==========================================  =====================================
DNS, connect, TLS, timeout, dropped reply    retry
5xx                                          retry
401, 403, 408, 409, 425, 429                 retry (credentials, policy or limits may be repaired)
3xx                                          dead letter, never followed
other 4xx                                    dead letter
==========================================  =====================================

ntfy never sends ``Retry-After``; it explains a refusal in its JSON error ``code`` instead
(docs/agent-facts.md, "ntfy"), so the delay also depends on that code:

* 42901 request burst: the visitor bucket refills one request per 5 s, so wait at least that;
* 42908 daily message quota: the quota resets daily; hammering is useless, wait the full cap;
* 42909 too many auth failures: the bucket refills one per minute and every further bad
  credential spends it again, so wait at least a minute (within the cap);
* 401/403 (40101/40301): a credential or ACL the user has to repair; normal backoff.

Everything else backs off exponentially with "equal jitter" (half fixed, half random) so a herd of
records does not retry in lockstep, and nothing waits longer than ``retry_max_seconds``. A numeric
``Retry-After`` (a proxy in front of ntfy may send one) is honoured within the same cap.
"""

from __future__ import annotations

import json
import random
import ssl
from dataclasses import dataclass
from typing import Literal

from donebell.shared.backoff import doubling
from donebell.shared.httpx_without_cli import httpx

Verdict = Literal["sent", "retry", "permanent"]

#: 4xx answers that are worth retrying: credentials, policy or limits may be repaired.
RETRYABLE_4XX = frozenset({401, 403, 408, 409, 425, 429})
#: First backoff step in seconds; step n waits between base*2^(n-1)/2 and base*2^(n-1).
BACKOFF_BASE_SECONDS = 2.0
NTFY_BURST = 42901
NTFY_DAILY_QUOTA = 42908
NTFY_AUTH_FAILURES = 42909
#: Minimum waits (before the cap) for ntfy's limit codes, from its token-bucket refill rates.
_CODE_FLOOR_SECONDS = {NTFY_BURST: 5.0, NTFY_AUTH_FAILURES: 60.0}
MAX_ERROR_CHARS = 200
_RNG = random.Random()


@dataclass(frozen=True)
class Decision:
    """The meaning of one attempt's outcome."""

    verdict: Verdict
    error: str  # short, secret-free text for last_error / the receipt ("" when sent)
    status: int | None = None  # HTTP status, when the server answered
    ntfy_code: int | None = None  # ntfy's JSON error code, when it sent one
    retry_after: float | None = None  # a numeric Retry-After header, seconds
    message_id: str | None = None  # ntfy's message id on success


def classify_response(status: int, body: bytes, retry_after: str | None = None) -> Decision:
    """Classify an HTTP answer by the retry table."""
    if 200 <= status < 300:
        return Decision("sent", "", status=status, message_id=_message_id(body))
    code, text = _ntfy_error(body)
    label = f"HTTP {status}" + (f" ntfy {code}" if code is not None else "") + (f": {text}" if text else "")
    if 300 <= status < 400:
        return Decision("permanent", f"HTTP {status} redirect (never followed)", status=status, ntfy_code=code)
    if 400 <= status < 500 and status not in RETRYABLE_4XX:
        return Decision("permanent", label, status=status, ntfy_code=code)
    # 5xx, the retryable 4xx, and anything outside the known ranges (a broken proxy) retry.
    return Decision("retry", label, status=status, ntfy_code=code, retry_after=parse_retry_after(retry_after))


def classify_exception(exc: BaseException) -> Decision:
    """Classify a transport failure: every one of them is worth retrying."""
    return Decision("retry", transport_error_label(exc))


def transport_error_label(exc: BaseException) -> str:
    """``dns``/``connect``/``tls``/``timeout``/``dropped``/``network`` plus the library's words."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        kind = "timeout"
    elif isinstance(exc, httpx.ConnectError):
        lowered = detail.lower()
        if _caused_by(exc, ssl.SSLError) or "ssl" in lowered or "certificate" in lowered:
            kind = "tls"
        elif any(
            w in lowered
            for w in ("name or service", "nodename", "getaddrinfo", "name resolution", "no address associated")
        ):
            kind = "dns"
        else:
            kind = "connect"
    elif isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        kind = "dropped"  # the server closed or reset the connection without (a complete) answer
    else:
        kind = "network"
    return f"{kind}: {detail}"


def parse_retry_after(value: str | None) -> float | None:
    """A numeric ``Retry-After`` in seconds; HTTP dates and junk are ignored."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 and seconds == seconds else None  # rejects NaN


def backoff_seconds(
    attempts: int,
    cap: float,
    *,
    ntfy_code: int | None = None,
    retry_after: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt (attempts >= 1); never above ``cap``."""
    rng = rng or _RNG
    if retry_after is not None:
        return min(cap, retry_after)
    if ntfy_code == NTFY_DAILY_QUOTA:
        # The quota resets once a day: the longest wait we allow, with a little jitter.
        return cap * rng.uniform(0.9, 1.0)
    step = doubling(BACKOFF_BASE_SECONDS, attempts - 1)
    delay = step / 2 + rng.uniform(0, step / 2)
    floor = _CODE_FLOOR_SECONDS.get(ntfy_code or 0)
    if floor is not None:
        delay = max(delay, floor * rng.uniform(1.0, 1.2))
    return min(cap, delay)


def _ntfy_error(body: bytes) -> tuple[int | None, str]:
    """ntfy's ``{"code", "http", "error"}`` answer, or a trimmed first line of whatever came."""
    try:
        doc = json.loads(body[:4096].decode("utf-8", "replace"))
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        code = doc.get("code")
        text = doc.get("error")
        return (
            code if isinstance(code, int) and not isinstance(code, bool) else None,
            clean_text(text) if isinstance(text, str) else "",
        )
    first = body[:512].decode("utf-8", "replace").strip().splitlines()
    return None, clean_text(first[0]) if first else ""


def _message_id(body: bytes) -> str | None:
    try:
        doc = json.loads(body[:65536].decode("utf-8", "replace"))
    except ValueError:
        return None
    ident = doc.get("id") if isinstance(doc, dict) else None
    return clean_text(ident)[:64] if isinstance(ident, str) else None


def clean_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """One line of printable text, at most ``limit`` characters."""
    flat = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(flat.split())[:limit]


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, kind):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False
