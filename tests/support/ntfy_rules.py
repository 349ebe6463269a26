"""ntfy's publish/poll rules as pure functions: errors, Go-style JSON, parameters, actions, since.

Ported from ntfy v2.13 (`server/server.go`, `types.go`, `errors.go`, `actions.go`, `util/*.go`;
see /work/shared/facts/ntfy.md). Items marked ⚠ are 2.16 sequence-ID behaviour that the facts
could only infer. Everything here is stateless; `ntfy_standin` owns sockets, state and faults.

Go semantics are kept where a Python default would differ and a client could notice:
`strings.TrimSpace` (not `str.strip`), `encoding/json` decoding (case-insensitive field names, null
is a no-op, `4.0` is not an int, trailing bytes ignored, invalid UTF-8 becomes U+FFFD) and
encoding (compact, `<>&` escaped, trailing newline).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import math
import re
import secrets
import string
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

DOCS = "https://ntfy.sh/docs"
MESSAGE_SIZE_LIMIT = 4096  # message-size-limit; the JSON body peek is twice this
JSON_BODY_LIMIT = 2 * MESSAGE_SIZE_LIMIT
CACHE_SECONDS = 12 * 3600
DELAY_MIN_SECONDS, DELAY_MAX_SECONDS = 10, 3 * 24 * 3600
DISALLOWED_TOPICS = ("docs", "static", "file", "app", "metrics", "account", "settings", "signup", "login", "v1")
NAME = r"[-_A-Za-z0-9]{1,64}"
TOPIC_RE = re.compile(rf"^{NAME}$")
SEQUENCE_ID_RE = TOPIC_RE  # ⚠ 2.16: not in the facts; assumed to follow the topic rule
MESSAGE_ID_LEN = 12
_ID_CHARS = string.ascii_letters + string.digits

# Go's unicode.IsSpace, which TrimSpace uses. str.strip() would also eat \x1c-\x1f.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def go_trim(s: str) -> str:
    return s.strip(GO_SPACE)


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    # Go replaces every invalid byte with its own U+FFFD; Python's "replace" may merge a
    # truncated sequence into one, which would change message byte lengths near the limit.
    assert isinstance(err, UnicodeDecodeError)
    return "\ufffd" * (err.end - err.start), err.end


codecs.register_error("ntfy-go-replace", _go_replace)


def go_text(raw: bytes) -> str:
    """Bytes as Go would render them in JSON: valid UTF-8 kept, each bad byte as U+FFFD."""
    return raw.decode("utf-8", "ntfy-go-replace")


def random_id(length: int = MESSAGE_ID_LEN) -> str:
    return "".join(secrets.choice(_ID_CHARS) for _ in range(length))


# ----------------------------------------------------------------------------------------- errors


class NtfyError(Exception):
    """An `errHTTP`: the JSON body `{"code","http","error"[,"link"]}` with the HTTP status."""

    def __init__(self, status: int, code: int, error: str, link: str = "") -> None:
        super().__init__(f"{status} {code} {error}")
        self.status, self.code, self.error, self.link = status, code, error, link

    def wrap(self, reason: str) -> NtfyError:
        return NtfyError(self.status, self.code, f"{self.error}; {reason}", self.link)

    def body(self) -> bytes:
        doc: dict[str, Any] = {"code": self.code, "http": self.status, "error": self.error}
        if self.link:
            doc["link"] = self.link
        return go_json(doc)


_CATALOGUE: dict[int, tuple[int, str, str]] = {
    40000: (400, "invalid request", ""),
    40001: (400, "e-mail notifications are not enabled", "/config/#e-mail-notifications"),
    40002: (400, "cannot disable cache for delayed message", ""),
    40003: (400, "delayed e-mail notifications are not supported", ""),
    40004: (400, "invalid delay parameter: unable to parse delay", "/publish/#scheduled-delivery"),
    40005: (400, "invalid delay parameter: too small, please refer to the docs", "/publish/#scheduled-delivery"),
    40006: (400, "invalid delay parameter: too large, please refer to the docs", "/publish/#scheduled-delivery"),
    40007: (400, "invalid priority parameter", "/publish/#message-priority"),
    40008: (400, "invalid since parameter", "/subscribe/api/#fetch-cached-messages"),
    40009: (400, "invalid request: topic invalid", ""),
    40010: (400, "invalid request: topic name is not allowed", ""),
    40011: (400, "invalid request: message must be UTF-8 encoded", ""),
    40013: (400, "invalid request: attachment URL is invalid", "/publish/#attachments"),
    40014: (400, "invalid request: attachments not allowed", "/config/#attachments"),
    40016: (400, "invalid request: client not using the websocket protocol", "/subscribe/api/#websockets"),
    40017: (400, "invalid request: request body must be message JSON", "/publish/#publish-as-json"),
    40018: (400, "invalid request: actions invalid", "/publish/#action-buttons"),
    40021: (400, "invalid request: icon URL is invalid", "/publish/#icons"),
    40024: (400, "invalid request: request body must be valid JSON", ""),
    40032: (400, "invalid request: calling is disabled", "/config/#phone-calls"),
    40037: (400, "invalid request: delayed call notifications are not supported", ""),
    40049: (400, "invalid request: sequence ID invalid", "/publish/#updating-deleting-notifications"),  # ⚠
    40101: (401, "unauthorized", "/publish/#authentication"),
    40301: (403, "forbidden", "/publish/#authentication"),
    40401: (404, "page not found", ""),
    41301: (413, "attachment too large, or bandwidth limit reached", "/publish/#limitations"),
    41303: (413, "JSON body too large", ""),
    42901: (429, "limit reached: too many requests", "/publish/#limitations"),
    42902: (429, "limit reached: too many emails", "/publish/#limitations"),
    42904: (
        429,
        ("limit reached: the total number of topics on the server has been reached, please contact the admin"),
        "/publish/#limitations",
    ),
    42905: (429, "limit reached: daily bandwidth reached", "/publish/#limitations"),
    42908: (429, "limit reached: daily message quota reached", "/publish/#limitations"),
    42909: (429, "limit reached: too many auth failures", "/publish/#limitations"),
    50001: (500, "internal server error", ""),
    50701: (507, "cannot publish to UnifiedPush topic without previously active subscriber", ""),
}
# The code ntfy would use for a bare status, when a test injects only a status.
_DEFAULT_CODE = {400: 40000, 401: 40101, 403: 40301, 404: 40401, 413: 41301, 429: 42901, 500: 50001, 507: 50701}


def err(code: int) -> NtfyError:
    """The catalogue error for an ntfy code, e.g. `err(40024)`."""
    status, text, link = _CATALOGUE[code]
    return NtfyError(status, code, text, DOCS + link if link else "")


def injected_error(
    status: int, code: int | None = None, error: str | None = None, link: str | None = None
) -> NtfyError:
    """An error a test injects. Known codes keep ntfy's text and link; a status ntfy never sends
    itself (502, 408, 425...) gets code `status*100+1` and the HTTP reason phrase."""
    if code is None:
        code = _DEFAULT_CODE.get(status, status * 100 + 1)
    if code in _CATALOGUE:
        base = err(code)
        text, ref = base.error, base.link
    else:
        try:
            text, ref = HTTPStatus(status).phrase.lower(), ""
        except ValueError:
            text, ref = "error", ""
    return NtfyError(status, code, text if error is None else error, ref if link is None else link)


# --------------------------------------------------------------------------------------- Go JSON


def go_json(value: Any) -> bytes:
    """`json.NewEncoder(w).Encode(v)`: compact, non-ASCII raw, `<>&` and U+2028/9 escaped, newline.

    The replacements are safe on the whole document because those characters can only occur
    inside strings (all keys are ASCII names)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, esc)
    return (text + "\n").encode("utf-8")


class _Obj(list[tuple[str, Any]]):
    """A decoded JSON object as ordered (key, value) pairs: Go lets a later duplicate key win."""


class _Mismatch(Exception):
    """A JSON value of the wrong type for its Go field (`UnmarshalTypeError`)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Python accepts NaN/Infinity, Go does not


_DECODER = json.JSONDecoder(object_pairs_hook=_Obj, parse_constant=_reject_constant)
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT64 = (-(2**63), 2**63 - 1)


def _first_value(raw: bytes, *, allow_trailing: bool) -> Any:
    """Decode like `json.Decoder.Decode` (first value only) or `json.Unmarshal` (whole input)."""
    text = go_text(raw)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    value, end = _DECODER.raw_decode(text, start)  # ValueError on bad JSON or empty input
    if not allow_trailing and text[end:].strip(" \t\n\r"):
        raise ValueError("invalid character after top-level value")
    return value


def _fold(key: str) -> str:
    # encoding/json matches field names with bytes.EqualFold, which also folds K (Kelvin) and ſ.
    return key.lower().replace("ſ", "s")


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise _Mismatch
    return _SURROGATE.sub("\ufffd", v)  # Go decodes a lone \udXXX escape as U+FFFD


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not _INT64[0] <= v <= _INT64[1]:
        raise _Mismatch
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _Mismatch
    return v


def _str_list(v: Any) -> list[str]:
    if isinstance(v, _Obj) or not isinstance(v, list):
        raise _Mismatch
    return ["" if e is None else _str(e) for e in v]


def _str_map(v: Any) -> dict[str, str]:
    if not isinstance(v, _Obj):
        raise _Mismatch
    return {_str(k): "" if e is None else _str(e) for k, e in v}


_ACTION_FIELDS: dict[str, Callable[[Any], Any]] = {
    "id": _str,
    "action": _str,
    "label": _str,
    "clear": _bool,
    "url": _str,
    "method": _str,
    "headers": _str_map,
    "body": _str,
    "intent": _str,
    "extras": _str_map,
}


def _struct(v: Any, fields: Mapping[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """Decode a JSON object into a Go struct: unknown keys ignored, null leaves the field as is."""
    if not isinstance(v, _Obj):
        raise _Mismatch
    out: dict[str, Any] = {}
    for key, value in v:
        name = _fold(key)
        if name in fields and value is not None:
            out[name] = fields[name](value)
    return out


def _action_list(v: Any) -> list[dict[str, Any]]:
    if isinstance(v, _Obj) or not isinstance(v, list):
        raise _Mismatch
    return [{} if e is None else _struct(e, _ACTION_FIELDS) for e in v]


_PUBLISH_FIELDS: dict[str, Callable[[Any], Any]] = {
    **{
        k: _str
        for k in (
            "topic",
            "title",
            "message",
            "click",
            "icon",
            "attach",
            "filename",
            "email",
            "call",
            "cache",
            "firebase",
            "delay",
            "sequence_id",
        )
    },
    "priority": _int,
    "tags": _str_list,
    "markdown": _bool,
    "actions": _action_list,
}


def decode_publish_json(body: bytes) -> dict[str, Any]:
    """`transformBodyJSON` up to the topic check: 41303, 40024, 40009. Returns the set fields."""
    if len(body) >= JSON_BODY_LIMIT:  # Peek's LimitReached means read == limit
        raise err(41303)
    try:
        value = _first_value(body, allow_trailing=True)
        fields = {} if value is None else _struct(value, _PUBLISH_FIELDS)
    except (ValueError, _Mismatch):
        raise err(40024) from None
    if not TOPIC_RE.match(fields.get("topic", "")):
        raise err(40009)
    return fields


def json_overrides(fields: Mapping[str, Any]) -> dict[str, str]:
    """The `X-*` headers transformBodyJSON sets: only non-empty fields, so real headers still apply."""
    out: dict[str, str] = {}
    for key, header in (
        ("title", "x-title"),
        ("attach", "x-attach"),
        ("filename", "x-filename"),
        ("click", "x-click"),
        ("icon", "x-icon"),
        ("email", "x-email"),
        ("delay", "x-delay"),
        ("call", "x-call"),
        ("cache", "x-cache"),
        ("firebase", "x-firebase"),
        ("sequence_id", "x-sequence-id"),
    ):
        if fields.get(key):
            out[header] = fields[key]
    if fields.get("priority"):
        out["x-priority"] = str(fields["priority"])  # so 7 becomes a 40007, as in ntfy
    if fields.get("tags"):
        out["x-tags"] = ",".join(fields["tags"])  # a tag containing "," gets split, as in ntfy
    if fields.get("markdown"):
        out["x-markdown"] = "yes"
    if fields.get("actions"):
        out["x-actions"] = json.dumps(
            [{"id": "", "action": "", "label": "", "clear": False, **a} for a in fields["actions"]]
        )
    return out


# ------------------------------------------------------------------------------------ parameters

_RFC2047 = re.compile(r"=\?([^?]+)\?([BbQq])\?(.*?)\?=")
_PRIORITY_HEADER_IGNORE = re.compile(r"^u=\d,\s*(i|\d)$|^u=\d$")


def _decode_word(charset: str, enc: str, text: str) -> str | None:
    try:
        if enc in "Bb":
            raw = base64.b64decode(text, validate=True)
        else:
            raw = re.sub(
                rb"=([0-9A-Fa-f]{2})", lambda m: bytes([int(m[1], 16)]), text.replace("_", " ").encode("latin-1")
            )
    except (binascii.Error, UnicodeEncodeError):
        return None
    cs = charset.lower()
    if cs == "utf-8":
        return go_text(raw)
    if cs == "iso-8859-1":
        return raw.decode("latin-1")
    if cs == "us-ascii":
        return "".join(chr(b) if b < 128 else "\ufffd" for b in raw)
    raise LookupError(charset)  # mime.WordDecoder without a CharsetReader: the header stays raw


def decode_header(name: str, value: str) -> str:
    """`maybeDecodeHeader`: RFC 2047 words decoded, and Cloudflare's RFC 9218 `Priority` ignored."""
    out, pos, between = [], 0, False
    try:
        for m in _RFC2047.finditer(value):
            word = _decode_word(m[1], m[2], m[3])
            gap = value[pos : m.start()]
            if word is None:
                out.append(gap + m[0])
                between = False
            else:
                out.append("" if between and not gap.strip(" \t\r\n") else gap)  # drop space between words
                out.append(word)
                between = True
            pos = m.end()
    except LookupError:
        out, pos = [], 0
    decoded = "".join(out) + value[pos:]
    if name.lower() == "priority" and _PRIORITY_HEADER_IGNORE.match(go_trim(decoded)):
        return ""
    return decoded


@dataclass
class Params:
    """`readParam` and friends: header names first (case-insensitive), then lowercase query names."""

    headers: dict[str, str]  # lower-case name -> first value, already as Go would see it
    query: dict[str, str]  # name -> first value

    @classmethod
    def parse_query(cls, raw_query: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for pair in raw_query.split("&"):
            if not pair or ";" in pair:  # Go >= 1.17 drops pairs with a semicolon
                continue
            key, _, val = pair.partition("=")
            k, v = urllib.parse.unquote_plus(key), urllib.parse.unquote_plus(val)
            out.setdefault(k, v)
        return out

    def read(self, *names: str) -> str:
        for name in names:
            value = go_trim(decode_header(name, self.headers.get(name, "")))
            if value:
                return value
        for name in names:
            value = self.query.get(name, "")
            if value:
                return go_trim(value)  # a query value of blanks ends the search, as in Go
        return ""

    def read_bool(self, default: bool, *names: str) -> bool:
        value = self.read(*names).lower()
        return default if not value else value in ("1", "yes", "true")

    def read_list(self, *names: str) -> list[str]:
        return [go_trim(p) for p in self.read(*names).split(",") if p]  # SplitNoEmpty, then trim


def parse_priority(value: str) -> int:
    p = go_trim(value).lower()
    levels = {
        "": 0,
        "1": 1,
        "min": 1,
        "2": 2,
        "low": 2,
        "3": 3,
        "default": 3,
        "4": 4,
        "high": 4,
        "5": 5,
        "max": 5,
        "urgent": 5,
    }
    if p not in levels:
        raise err(40007)
    return levels[p]


# ------------------------------------------------------------------------------------- durations

_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_NTFY_DURATION = re.compile(r"(?i)^([0-9]+)\s*(d|days?|h|hours?|m|mins?|minutes?|s|secs?|seconds?)$")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")  # strconv.Atoi/ParseInt; int() would also take "1_0" and " 1"


def parse_go_duration(s: str) -> float | None:
    """`time.ParseDuration` in seconds (`10m`, `1h30m`, `1.5s`), or None."""
    rest = s[1:] if s[:1] in ("+", "-") else s
    if rest == "0":
        return 0.0
    total, pos = 0.0, 0
    while pos < len(rest):
        m = _GO_PART.match(rest, pos)
        if not m or m[1] in ("", "."):
            return None
        total += float(m[1]) * _GO_UNITS[m[2]]
        pos = m.end()
    if not rest:
        return None
    return -total if s[:1] == "-" else total


def parse_ntfy_duration(s: str) -> float | None:
    """`util.ParseDuration`: Go durations plus `2d`, `30min`, `1 hour`."""
    d = parse_go_duration(s)
    if d is not None:
        return d
    m = _NTFY_DURATION.match(s)
    if not m:
        return None
    # ntfy switches on the unit's first byte as typed, so the (?i) regex admits "2D" but it fails.
    unit = {"d": 86400, "h": 3600, "m": 60, "s": 1}.get(m[2][0])
    return None if unit is None else int(m[1]) * unit


def parse_delay(value: str, now: float) -> int:
    """`util.ParseFutureTime` plus the min/max checks; natural language ("10am") is not emulated."""
    s = go_trim(value)
    when: float | None = None
    if _INTEGER.match(s) and int(s) >= int(now):
        when = int(s)
    elif (d := parse_ntfy_duration(s)) is not None:
        when = now + d
    if when is None:
        raise err(40004)
    if int(when) < int(now) + DELAY_MIN_SECONDS:
        raise err(40005)
    if int(when) > int(now) + DELAY_MAX_SECONDS:
        raise err(40006)
    return int(when)


@dataclass(frozen=True)
class Since:
    kind: str  # "all", "none", "latest", "id" or "time"
    value: str | int = ""


def parse_since(value: str, poll: bool, now: float) -> Since:
    """`parseSince`; anything unparseable is 40008."""
    if value == "":
        return Since("all" if poll else "none")
    if value in ("all", "latest", "none"):
        return Since(value)
    if len(value) == MESSAGE_ID_LEN and all(c in _ID_CHARS for c in value):
        return Since("id", value)  # even an all-digit 12-char value is taken as an ID, as in ntfy
    if _INTEGER.match(value):
        return Since("time", int(value))
    if (d := parse_go_duration(value)) is not None:
        return Since("time", math.floor(now - d))
    raise err(40008)


# --------------------------------------------------------------------------------------- actions


class Panic(Exception):
    """ntfy would dereference a nil pointer here; net/http then drops the connection unanswered."""


def _new_action() -> dict[str, Any]:
    return {"id": "", "action": "", "label": "", "clear": False, "headers": {}, "extras": {}}


class _SimpleActions:
    """`parseActionsFromSimple`: `view, Open, https://x; http, Hook, https://y, method=PUT`."""

    _KEY = re.compile(r"([-.0-9A-Za-z_]+)[\t\n\f\r ]*=[\t\n\f\r ]*")

    def __init__(self, text: str) -> None:
        self.s, self.pos = text, 0

    def peek(self) -> str:
        return self.s[self.pos] if self.pos < len(self.s) else ""  # "" is EOF

    def slurp(self) -> None:
        while self.peek() and self.peek() in " \t\r\n":
            self.pos += 1

    def parse(self) -> list[dict[str, Any]]:
        actions = []
        while self.pos < len(self.s):
            action, section, last = _new_action(), 0, False
            while not last:
                key, value, last = self.section()
                _populate(action, section, key, value)
                self.slurp()
                section += 1
            actions.append(action)
        return actions

    def section(self) -> tuple[str, str, bool]:
        self.slurp()
        m = self._KEY.match(self.s, self.pos)
        key = m[1] if m else ""
        self.pos = m.end() if m else self.pos
        r = self.peek()
        if r in ("", ";", ","):
            self.pos += 1 if r else 0
            return key, "", r in ("", ";")
        if r in "\"'":
            return (key, *self.quoted(r))
        start = self.pos
        while self.peek() not in ("", ";", ","):
            self.pos += 1
        r = self.peek()
        value = go_trim(self.s[start : self.pos])
        self.pos += 1 if r else 0
        return key, value, r in ("", ";")

    def quoted(self, quote: str) -> tuple[str, bool]:
        self.pos += 1
        start, prev = self.pos, ""
        while True:
            r = self.peek()
            if r == "":
                raise ValueError(f"unexpected end of input, quote started at position {start}")
            if r == quote and prev != "\\":
                value = self.s[start : self.pos].replace("\\" + quote, quote)
                self.pos += 1
                self.slurp()
                r = self.peek()
                if r not in ("", ";", ","):
                    raise ValueError(f"unexpected character '{r}' at position {self.pos}")
                self.pos += 1 if r else 0
                return value, r in ("", ";")
            prev = r
            self.pos += 1


def _populate(a: dict[str, Any], section: int, key: str, value: str) -> None:
    if not key:
        key = {0: "action", 1: "label"}.get(section, "")
        if section == 2 and a["action"] in ("view", "http"):
            key = "url"
    if not key:
        raise ValueError(f"term '{value}' unknown")
    if key.startswith("headers."):
        a["headers"][key[len("headers.") :]] = value
    elif key.startswith("extras."):
        a["extras"][key[len("extras.") :]] = value
    elif key.lower() in ("action", "label", "url", "method", "body", "intent"):
        a[key.lower()] = value
    elif key.lower() == "clear":
        if value.lower() not in ("true", "yes", "1", "false", "no", "0"):
            raise ValueError(
                f"parameter 'clear' cannot be '{value}', only boolean values are allowed (true/yes/1/false/no/0)"
            )
        a["clear"] = value.lower() in ("true", "yes", "1")
    else:
        raise ValueError(f"key '{key}' unknown")


def parse_actions(text: str) -> list[dict[str, Any]]:
    """`parseActions`, returning the actions as ntfy renders them; 40018 with ntfy's reason."""
    s = go_trim(text)
    try:
        if s.startswith("["):
            try:
                decoded = _first_value(s.encode("utf-8"), allow_trailing=False)
                if not isinstance(decoded, list) or isinstance(decoded, _Obj):
                    raise _Mismatch
                if any(e is None for e in decoded):
                    raise Panic  # []*action gets a nil element, then actions[i].ID = ... panics
                actions = [{**_new_action(), **_struct(e, _ACTION_FIELDS)} for e in decoded]
            except (ValueError, _Mismatch) as exc:
                reason = exc or "json: cannot unmarshal into Go value of type action"
                raise ValueError(f"JSON error: {reason}") from None
        else:
            actions = _SimpleActions(s).parse()
    except ValueError as exc:
        raise err(40018).wrap(str(exc)) from None
    for a in actions:
        a["id"], a["action"], a["method"] = random_id(10), a["action"].lower(), a.get("method", "").upper()
    if len(actions) > 3:
        raise err(40018).wrap("only 3 actions allowed")
    for a in actions:
        reason = ""
        if a["action"] not in ("view", "broadcast", "http"):
            reason = f"parameter 'action' cannot be '{a['action']}', valid values are 'view', 'broadcast' and 'http'"
        elif not a["label"]:
            reason = "parameter 'label' is required"
        elif a["action"] in ("view", "http") and not a.get("url"):
            reason = f"parameter 'url' is required for action '{a['action']}'"
        elif a["action"] == "http" and a["method"] in ("GET", "HEAD") and a.get("body"):
            reason = f"parameter 'body' cannot be set if method is {a['method']}"
        if reason:
            raise err(40018).wrap(reason)
    return [_render_action(a) for a in actions]


def _render_action(a: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": a["id"], "action": a["action"], "label": a["label"], "clear": a["clear"]}
    for key in ("url", "method", "headers", "body", "intent", "extras"):
        if a.get(key):  # omitempty; Go marshals map keys sorted
            out[key] = dict(sorted(a[key].items())) if isinstance(a[key], dict) else a[key]
    return out


# --------------------------------------------------------------------------------------- message

MESSAGE_FIELDS = (
    "id",
    "sequence_id",
    "time",
    "expires",
    "event",
    "topic",
    "title",
    "message",
    "priority",
    "tags",
    "click",
    "icon",
    "actions",
    "attachment",
    "poll_id",
    "content_type",
    "encoding",
)
_ALWAYS = ("id", "time", "event", "topic")


def render_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """The `message` struct as JSON: struct order, empties omitted, sequence_id only if != id (⚠)."""
    out = {k: m[k] for k in MESSAGE_FIELDS if k in _ALWAYS or m.get(k)}
    if out.get("sequence_id") == out["id"]:
        del out["sequence_id"]
    return out


@dataclass
class Draft:
    """A message after `parsePublishParams`, before the body is applied."""

    topic: str
    time: int
    fields: dict[str, Any] = field(default_factory=dict)
    cache: bool = True
    attach_url: str = ""
    filename: str = ""


def parse_publish_params(p: Params, topic: str, now: float, path_sequence_id: str = "") -> Draft:
    """`parsePublishParams` in ntfy's check order (e-mail, calls, templates, UnifiedPush not emulated)."""
    d = Draft(topic=topic, time=int(now))
    d.cache = p.read_bool(True, "x-cache", "cache")
    f = d.fields
    f["title"], f["click"] = p.read("x-title", "title", "t"), p.read("x-click", "click")
    icon = p.read("x-icon", "icon")
    d.filename = p.read("x-filename", "filename", "file", "f")
    d.attach_url = p.read("x-attach", "attach", "a")
    if d.attach_url:
        if not re.match(r"^https?://", d.attach_url):
            raise err(40013)
        name = d.filename
        if not name:
            try:  # path.Base(u.Path); "." and "/" mean no name
                url_path = urllib.parse.urlsplit(d.attach_url).path.rstrip("/")
            except ValueError:
                url_path = ""
            name = url_path.rsplit("/", 1)[-1]
        f["attachment"] = {"name": name or "attachment", "url": d.attach_url}
    if icon:
        if not re.match(r"^https?://", icon):
            raise err(40021)
        f["icon"] = icon
    if p.read("x-email", "x-e-mail", "email", "e-mail", "mail", "e"):
        raise err(40001)  # no SMTP configured
    if p.read("x-call", "call"):
        raise err(40032)  # no Twilio configured
    f["message"] = p.read("x-message", "message", "m").replace("\\n", "\n")
    f["priority"] = parse_priority(p.read("x-priority", "priority", "prio", "p"))
    f["tags"] = p.read_list("x-tags", "tags", "tag", "ta")
    delay = p.read("x-delay", "delay", "x-at", "at", "x-in", "in")
    if delay:
        if not d.cache:
            raise err(40002)
        d.time = parse_delay(delay, now)
    actions = p.read("x-actions", "actions", "action")
    if actions:
        f["actions"] = parse_actions(actions)
    if (
        p.read_bool(False, "x-markdown", "markdown", "md")
        or p.read("content-type", "content_type").lower() == "text/markdown"
    ):
        f["content_type"] = "text/markdown"
    sid = path_sequence_id or p.read("x-sequence-id", "sequence-id", "sid")  # ⚠ 2.16
    if sid and not SEQUENCE_ID_RE.match(sid):
        raise err(40049)
    f["sequence_id"] = sid
    return d


def apply_body(d: Draft, body: bytes) -> None:
    """`handlePublishBody` without attachments configured: 4096+ bytes or non-UTF-8 is 40014."""
    f = d.fields
    if d.attach_url:  # the body is text, silently truncated to the peek limit
        peeked = body[:MESSAGE_SIZE_LIMIT]
        try:
            text = peeked.decode("utf-8")
        except UnicodeDecodeError:
            raise err(40011) from None
        if peeked:
            f["message"] = go_trim(text)
        if not f["message"]:
            f["message"] = f"You received a file: {f['attachment']['name']}"
    elif d.filename or len(body) >= MESSAGE_SIZE_LIMIT:
        raise err(40014)
    else:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise err(40014) from None
        if body:
            f["message"] = go_trim(text)
    if not f["message"]:
        f["message"] = "triggered"
