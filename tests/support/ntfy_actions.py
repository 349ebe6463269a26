"""Action buttons (server/actions.go): the JSON and "simple" formats, validation, rendering.

Errors are 40018 `invalid request: actions invalid; <reason>` with ntfy's own reason texts (the
`JSON error: ...` detail of a malformed X-Actions JSON is Python's wording, not Go's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .ntfy_errors import err
from .ntfy_go import Mismatch, first_value, go_bool, go_str, go_str_map, go_struct, go_trim, is_array, random_id

MAX_ACTIONS = 3
ACTION_FIELDS: dict[str, Callable[[Any], Any]] = {
    "id": go_str,
    "action": go_str,
    "label": go_str,
    "clear": go_bool,
    "url": go_str,
    "method": go_str,
    "headers": go_str_map,
    "body": go_str,
    "intent": go_str,
    "extras": go_str_map,
}


class Panic(Exception):
    """ntfy would dereference a nil pointer here; net/http then drops the connection unanswered."""


def decode_action_list(v: Any) -> list[dict[str, Any]]:
    """The JSON publish's `actions` ([]action): a null element is a zero action, not a panic."""
    if not is_array(v):
        raise Mismatch
    return [{} if e is None else go_struct(e, ACTION_FIELDS) for e in v]


def _new_action() -> dict[str, Any]:
    return {"id": "", "action": "", "label": "", "clear": False, "headers": {}, "extras": {}}


class _SimpleParser:
    """`parseActionsFromSimple`: `view, Open, https://x; http, Hook, https://y, method=PUT, clear=true`."""

    _KEY = re.compile(r"([-.0-9A-Za-z_]+)[\t\n\f\r ]*=[\t\n\f\r ]*")  # Go's \w and \s are ASCII

    def __init__(self, text: str) -> None:
        self.s, self.pos = text, 0

    def peek(self) -> str:
        return self.s[self.pos] if self.pos < len(self.s) else ""  # "" is end of input

    def slurp_spaces(self) -> None:
        while self.peek() and self.peek() in " \t\r\n":
            self.pos += 1

    def parse(self) -> list[dict[str, Any]]:
        actions = []
        while self.pos < len(self.s):
            action, section, last = _new_action(), 0, False
            while not last:  # sections end at "," and the action at ";" or the end
                key, value, last = self.section()
                _populate(action, section, key, value)
                self.slurp_spaces()
                section += 1
            actions.append(action)
        return actions

    def section(self) -> tuple[str, str, bool]:
        self.slurp_spaces()
        m = self._KEY.match(self.s, self.pos)
        key = m[1] if m else ""
        self.pos = m.end() if m else self.pos
        r = self.peek()
        if r in ("", ";", ","):
            self.pos += 1 if r else 0
            return key, "", r in ("", ";")
        if r in ('"', "'"):
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
                self.slurp_spaces()
                r = self.peek()
                if r not in ("", ";", ","):
                    raise ValueError(f"unexpected character '{r}' at position {self.pos}")
                self.pos += 1 if r else 0
                return value, r in ("", ";")
            prev = r
            self.pos += 1


def _populate(a: dict[str, Any], section: int, key: str, value: str) -> None:
    """`populateAction`: unnamed sections are action, label, then url (for view/http as typed)."""
    if not key:
        key = {0: "action", 1: "label"}.get(section, "")
        if section == 2 and a["action"] in ("view", "http"):  # before lower-casing, as in ntfy
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


def _from_json(s: str) -> list[dict[str, Any]]:
    try:
        decoded = first_value(s.encode("utf-8"), allow_trailing=False)
        if not is_array(decoded):
            raise Mismatch
        if any(e is None for e in decoded):
            raise Panic  # []*action gets a nil element, and then actions[i].ID = ... panics
        return [{**_new_action(), **go_struct(e, ACTION_FIELDS)} for e in decoded]
    except (ValueError, Mismatch) as exc:
        reason = str(exc) or "json: cannot unmarshal into Go value of type action"
        raise ValueError(f"JSON error: {reason}") from None


def parse_actions(text: str) -> list[dict[str, Any]]:
    """`parseActions`: the X-Actions value (JSON array or simple format) as ntfy renders it."""
    s = go_trim(text)
    try:
        actions = _from_json(s) if s.startswith("[") else _SimpleParser(s).parse()
    except ValueError as exc:
        raise err(40018).wrap(str(exc)) from None
    for a in actions:
        a["id"], a["action"], a["method"] = random_id(10), a["action"].lower(), a.get("method", "").upper()
    if len(actions) > MAX_ACTIONS:
        raise err(40018).wrap(f"only {MAX_ACTIONS} actions allowed")
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
    return [_render(a) for a in actions]


def _render(a: Mapping[str, Any]) -> dict[str, Any]:
    """The `action` struct as JSON: id/action/label/clear always, the rest omitempty."""
    out: dict[str, Any] = {"id": a["id"], "action": a["action"], "label": a["label"], "clear": a["clear"]}
    for key in ("url", "method", "headers", "body", "intent", "extras"):
        if a.get(key):
            out[key] = dict(sorted(a[key].items())) if isinstance(a[key], dict) else a[key]  # Go sorts map keys
    return out
