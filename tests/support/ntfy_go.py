"""Go standard-library behaviour that ntfy inherits and Python does differently.

A client can notice each of these: `strings.TrimSpace` (Python's `strip` also eats \\x1c-\\x1f),
invalid UTF-8 becoming one U+FFFD per bad byte, `encoding/json` output (compact, `<>&` escaped,
trailing newline), `encoding/json` decoding into a struct (field names case-insensitive, null is a
no-op, `4.0` is not an int, NaN is not JSON, a later duplicate key wins, trailing bytes after the
first value ignored by `Decoder`), and `time.ParseDuration`.
"""

from __future__ import annotations

import codecs
import json
import re
import secrets
import string
from collections.abc import Callable, Mapping
from typing import Any

# unicode.IsSpace, which TrimSpace uses.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
INTEGER = re.compile(r"^[+-]?[0-9]+$")  # strconv.Atoi; int() would also take "1_0" and " 1"


def go_trim(s: str) -> str:
    return s.strip(GO_SPACE)


def _per_byte_replace(exc: UnicodeError) -> tuple[str, int]:
    # Go writes one U+FFFD per invalid byte; Python's "replace" may merge a truncated sequence
    # into one, which would change byte lengths near ntfy's 4096-byte message limit.
    assert isinstance(exc, UnicodeDecodeError)
    return "\ufffd" * (exc.end - exc.start), exc.end


codecs.register_error("ntfy-go-replace", _per_byte_replace)


def go_text(raw: bytes) -> str:
    """Bytes as a Go string renders in JSON: valid UTF-8 kept, each invalid byte as U+FFFD."""
    return raw.decode("utf-8", "ntfy-go-replace")


def go_json(value: Any) -> bytes:
    """`json.NewEncoder(w).Encode(v)`: compact, non-ASCII raw, `<>&` and U+2028/9 escaped, newline.

    Replacing on the whole document is safe: those characters can only occur inside strings,
    since every key here is an ASCII name."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return (text + "\n").encode("utf-8")


# ------------------------------------------------------------------------ decoding into structs


class JSONObject(list[tuple[str, Any]]):
    """A decoded JSON object kept as ordered (key, value) pairs, so a later duplicate key wins."""


class Mismatch(Exception):
    """A JSON value of the wrong type for its Go field (`json.UnmarshalTypeError`)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Python's parser accepts NaN and Infinity


_DECODER = json.JSONDecoder(object_pairs_hook=JSONObject, parse_constant=_reject_constant)
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT64 = (-(2**63), 2**63 - 1)


def first_value(raw: bytes, *, allow_trailing: bool) -> Any:
    """Decode like `json.Decoder.Decode` (first value, rest ignored) or `json.Unmarshal` (all).
    ValueError on bad or empty JSON."""
    text = go_text(raw)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    value, end = _DECODER.raw_decode(text, start)
    if not allow_trailing and text[end:].strip(" \t\n\r"):
        raise ValueError("invalid character after top-level value")
    return value


def is_array(v: Any) -> bool:
    return isinstance(v, list) and not isinstance(v, JSONObject)


def go_str(v: Any) -> str:
    if not isinstance(v, str):
        raise Mismatch
    return _SURROGATE.sub("\ufffd", v)  # Go decodes a lone \udXXX escape as U+FFFD


def go_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not _INT64[0] <= v <= _INT64[1]:
        raise Mismatch  # Python parses 4.0 and 4e0 as float, which Go refuses for an int too
    return v


def go_bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise Mismatch
    return v


def go_str_list(v: Any) -> list[str]:
    if not is_array(v):
        raise Mismatch
    return ["" if e is None else go_str(e) for e in v]  # null element: the zero value


def go_str_map(v: Any) -> dict[str, str]:
    if not isinstance(v, JSONObject):
        raise Mismatch
    return {go_str(k): "" if e is None else go_str(e) for k, e in v}


def go_struct(v: Any, fields: Mapping[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """A JSON object into a Go struct: names matched case-insensitively, unknown keys ignored,
    null leaves the field unset. Returns only the fields that were set."""
    if not isinstance(v, JSONObject):
        raise Mismatch
    out: dict[str, Any] = {}
    for key, value in v:
        # bytes.EqualFold also folds the Kelvin sign (which lower() handles) and the long s.
        name = key.lower().replace("ſ", "s")
        if name in fields and value is not None:
            out[name] = fields[name](value)
    return out


# ------------------------------------------------------------------------------------ durations

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(s: str) -> float | None:
    """`time.ParseDuration` in seconds (`10m`, `1h30m`, `1.5s`, `-2h`), or None."""
    rest = s[1:] if s[:1] in ("+", "-") else s
    if rest == "0":
        return 0.0
    if not rest:
        return None
    total, pos = 0.0, 0
    while pos < len(rest):
        m = _PART.match(rest, pos)
        if not m or m[1] in ("", "."):
            return None
        total += float(m[1]) * _UNITS[m[2]]
        pos = m.end()
    return -total if s[:1] == "-" else total


# --------------------------------------------------------------------------------------- ntfy util

_ID_CHARS = string.ascii_letters + string.digits


def random_id(length: int = 12) -> str:
    """ntfy's `util.RandomString`: [A-Za-z0-9]; 12 for message IDs, 10 for action IDs."""
    return "".join(secrets.choice(_ID_CHARS) for _ in range(length))


def is_random_id(s: str, length: int = 12) -> bool:
    """`util.ValidRandomString` (so even a 12-digit timestamp-looking value counts as an ID)."""
    return len(s) == length and all(c in _ID_CHARS for c in s)
