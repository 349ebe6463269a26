"""ntfy's publish and poll rules as pure functions (server/server.go, types.go, util/*.go, v2.13).

See docs/agent-facts.md, "ntfy". Items marked ⚠ are 2.16 sequence-ID behaviour inferred from
ntfy's documentation, not measured. Nothing here has state; `ntfy_standin` owns sockets, state and faults.

The configuration emulated is ntfy's default one without extras: no attachments (base-url or
attachment-cache-dir unset), no SMTP, no Twilio, no web app, no templates or UnifiedPush.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .ntfy_actions import decode_action_list, parse_actions
from .ntfy_errors import err
from .ntfy_go import (
    Mismatch,
    first_value,
    go_bool,
    go_int,
    go_str,
    go_str_list,
    go_struct,
    go_text,
    go_trim,
)
from .ntfy_times import parse_delay

MESSAGE_SIZE_LIMIT = 4096  # message-size-limit
JSON_BODY_LIMIT = 2 * MESSAGE_SIZE_LIMIT  # transformBodyJSON peeks twice the message limit
CACHE_SECONDS = 12 * 3600  # cache-duration: `expires` = time + this
DISALLOWED_TOPICS = ("docs", "static", "file", "app", "metrics", "account", "settings", "signup", "login", "v1")
NAME = r"[-_A-Za-z0-9]{1,64}"  # a topic; ⚠ a sequence ID is assumed to follow the same rule
_NAME_RE = re.compile(rf"^{NAME}$")
_URL_RE = re.compile(r"^https?://")

# ------------------------------------------------------------------------------------ JSON publish

_PUBLISH_FIELDS: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(
        ("topic", "title", "message", "click", "icon", "attach", "filename", "email", "call", "cache", "firebase"),
        go_str,
    ),
    "delay": go_str,
    "sequence_id": go_str,  # ⚠ 2.16
    "priority": go_int,
    "tags": go_str_list,
    "markdown": go_bool,
    "actions": decode_action_list,
}


def decode_publish_json(body: bytes) -> dict[str, Any]:
    """`transformBodyJSON` up to the topic check (41303, 40024, 40009). Returns the set fields."""
    if len(body) >= JSON_BODY_LIMIT:  # util.Peek's LimitReached means read == limit
        raise err(41303)
    try:
        value = first_value(body, allow_trailing=True)
        fields = {} if value is None else go_struct(value, _PUBLISH_FIELDS)  # `null` decodes to a zero struct
    except (ValueError, Mismatch):
        raise err(40024) from None
    if not _NAME_RE.match(fields.get("topic", "")):
        raise err(40009)
    return fields


def json_overrides(fields: Mapping[str, Any]) -> dict[str, str]:
    """The `X-*` headers transformBodyJSON sets. Only non-empty fields, so real headers and query
    parameters still apply to whatever the JSON leaves empty."""
    names = ("title", "attach", "filename", "click", "icon", "email", "delay", "call", "cache", "firebase")
    out = {f"x-{name}": fields[name] for name in names if fields.get(name)}
    if fields.get("sequence_id"):
        out["x-sequence-id"] = fields["sequence_id"]
    if fields.get("priority"):
        out["x-priority"] = str(fields["priority"])  # so 7 turns into a 40007, as in ntfy
    if fields.get("tags"):
        out["x-tags"] = ",".join(fields["tags"])  # so a tag containing "," is split, as in ntfy
    if fields.get("markdown"):
        out["x-markdown"] = "yes"
    if fields.get("actions"):  # re-marshalled, then parsed and validated like a header
        zero = {"id": "", "action": "", "label": "", "clear": False}
        out["x-actions"] = json.dumps([{**zero, **a} for a in fields["actions"]])
    return out


# -------------------------------------------------------------------------------------- parameters

_RFC2047 = re.compile(r"=\?([^?]+)\?([BbQq])\?(.*?)\?=")
_PRIORITY_HEADER_IGNORE = re.compile(r"^u=\d,\s*(i|\d)$|^u=\d$")


def _decode_word(charset: str, encoding: str, text: str) -> str | None:
    try:
        if encoding in "Bb":
            raw = base64.b64decode(text, validate=True)
        else:
            q = text.replace("_", " ").encode("latin-1")
            raw = re.sub(rb"=([0-9A-Fa-f]{2})", lambda m: bytes([int(m[1], 16)]), q)
    except (binascii.Error, UnicodeEncodeError):
        return None  # a malformed word stays as written
    match charset.lower():
        case "utf-8":
            return go_text(raw)
        case "iso-8859-1":
            return raw.decode("latin-1")
        case "us-ascii":
            return "".join(chr(b) if b < 128 else "\ufffd" for b in raw)
    raise LookupError(charset)  # mime.WordDecoder without a CharsetReader fails: header kept raw


def decode_header(name: str, value: str) -> str:
    """`maybeDecodeHeader`: RFC 2047 words (`=?UTF-8?B?...?=`) decoded, whitespace between two
    words dropped, and Cloudflare's RFC 9218 `Priority: u=3, i` ignored."""
    out, pos, after_word = [], 0, False
    try:
        for m in _RFC2047.finditer(value):
            word, gap = _decode_word(m[1], m[2], m[3]), value[pos : m.start()]
            if word is None:
                out.append(gap + m[0])
            else:
                out.append("" if after_word and not gap.strip(" \t\r\n") else gap)
                out.append(word)
            after_word, pos = word is not None, m.end()
    except LookupError:
        out, pos = [], 0
    decoded = "".join(out) + value[pos:]
    if name == "priority" and _PRIORITY_HEADER_IGNORE.match(go_trim(decoded)):
        return ""
    return decoded


def parse_query(raw_query: str) -> dict[str, str]:
    """`url.ParseQuery` keeping the first value per name; Go >= 1.17 drops pairs with a `;`."""
    out: dict[str, str] = {}
    for pair in raw_query.split("&"):
        if pair and ";" not in pair:
            key, _, value = pair.partition("=")
            out.setdefault(urllib.parse.unquote_plus(key), urllib.parse.unquote_plus(value))
    return out


@dataclass
class Params:
    """`readParam` and friends: every header name first, then the (lower-case) query names."""

    headers: dict[str, str]  # lower-case name -> first value, as Go's Header.Get sees it
    query: dict[str, str]

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


_PRIORITIES = {"": 0, "min": 1, "low": 2, "default": 3, "high": 4, "max": 5, "urgent": 5}
_PRIORITIES.update({str(n): n for n in range(1, 6)})


def parse_priority(value: str) -> int:
    """`util.ParsePriority`: 1..5 or min/low/default/high/max/urgent; "" is 0 (unset); else 40007."""
    try:
        return _PRIORITIES[go_trim(value).lower()]
    except KeyError:
        raise err(40007) from None


# ---------------------------------------------------------------------------------------- message

MESSAGE_FIELDS = (
    "id",
    "sequence_id",  # ⚠ 2.16: placed after id, omitted when equal to it
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
    """The `message` struct as JSON: struct order, every other field omitted when empty."""
    out = {k: m[k] for k in MESSAGE_FIELDS if k in _ALWAYS or m.get(k)}
    if out.get("sequence_id") == out["id"]:
        del out["sequence_id"]
    return out


@dataclass
class Draft:
    """A message after `parsePublishParams`, before the body is applied."""

    time: int
    fields: dict[str, Any] = field(default_factory=dict)
    cache: bool = True
    attach_url: str = ""
    filename: str = ""


def parse_publish_params(p: Params, now: float, path_sequence_id: str = "") -> Draft:
    """`parsePublishParams`, keeping ntfy's check order: 40013, 40021, 40001, 40032, 40007,
    40002/40004-6, 40018, then ⚠ 40049."""
    d = Draft(time=int(now), cache=p.read_bool(True, "x-cache", "cache"))
    f = d.fields
    f["title"], f["click"] = p.read("x-title", "title", "t"), p.read("x-click", "click")
    icon = p.read("x-icon", "icon")
    d.filename = p.read("x-filename", "filename", "file", "f")
    d.attach_url = p.read("x-attach", "attach", "a")
    if d.attach_url:
        if not _URL_RE.match(d.attach_url):
            raise err(40013)
        try:  # path.Base(u.Path); "." and "/" mean no name
            url_path = urllib.parse.urlsplit(d.attach_url).path.rstrip("/")
        except ValueError:
            url_path = ""
        f["attachment"] = {"name": d.filename or url_path.rsplit("/", 1)[-1] or "attachment", "url": d.attach_url}
    if icon:
        if not _URL_RE.match(icon):
            raise err(40021)
        f["icon"] = icon
    if p.read("x-email", "x-e-mail", "email", "e-mail", "mail", "e"):
        raise err(40001)  # SMTP is not configured
    if p.read("x-call", "call"):
        raise err(40032)  # Twilio is not configured
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
    markdown = p.read_bool(False, "x-markdown", "markdown", "md")
    if markdown or p.read("content-type", "content_type").lower() == "text/markdown":
        f["content_type"] = "text/markdown"
    sid = path_sequence_id or p.read("x-sequence-id", "sequence-id", "sid")  # ⚠ 2.16
    if sid and not _NAME_RE.match(sid):
        raise err(40049)
    f["sequence_id"] = sid
    return d


def apply_body(d: Draft, body: bytes) -> None:
    """`handlePublishBody` with attachments off: a body of 4096+ bytes or not UTF-8 would be an
    attachment, so it gets 400 40014 (not 413, and never truncated)."""
    f = d.fields
    if d.attach_url:  # with X-Attach the body is the text, silently cut at the peek limit
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
        if body:  # an empty body keeps X-Message (publishing via GET)
            f["message"] = go_trim(text)
    if not f["message"]:
        f["message"] = "triggered"
