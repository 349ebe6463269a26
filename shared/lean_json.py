"""``loads`` and ``dumps`` of the standard ``json`` package, without importing it on the hook path.

``import json`` costs about as much as all of donebell's own hook modules together: the package
compiles its regular expressions at import, which loads ``re`` and with it ``enum``,
``functools`` and ``collections`` (~6 ms of CPU against a ~13 ms interpreter start;
docs/benchmarks.md, "The hook's start-up"). What ``json.loads`` and ``json.dumps`` run on
CPython is the C accelerator ``_json``, which imports none of that; this module calls it the
way the ``json`` package does, for the options the lean core uses.

The results are the ``json`` package's by construction: the same C scanner and encoder with the
same settings, and every input the fast path does not read whole (a malformed document, bytes in
another encoding than UTF-8, a byte-order mark, an interpreter without ``_json``) is handed to
``json`` itself, so an error is the very ``json.JSONDecodeError`` it raises, message and
position included (``tests/test_lean_json.py`` holds both against ``json``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - an interpreter without the accelerator: json, whole
    _json = None  # type: ignore[assignment]

_WHITESPACE = " \t\n\r"  # json's own definition of what may surround a document


class _Defaults:
    """What ``_json.make_scanner`` reads off its context: ``json.JSONDecoder()``'s settings."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = None if _json is None else _json.make_scanner(_Defaults())  # type: ignore[arg-type]  # read by attribute


def loads(s: str | bytes) -> Any:
    """``json.loads(s)``."""
    text = _as_text(s)
    if text is not None and _scan is not None:
        try:
            obj, end = _scan(text, _skip(text, 0))
        except Exception:  # noqa: BLE001 - malformed: json says what and where, below
            pass
        else:
            if _skip(text, end) == len(text):
                return obj
    import json  # the exact error (or, without the accelerator, the result)

    return json.loads(s)


def dumps(
    obj: Any,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """``json.dumps(obj, ensure_ascii=…, separators=…, sort_keys=…, default=…)``."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(obj, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys, default=default)
    quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(obj, str):
        return quote(obj)
    item_separator, key_separator = separators or (", ", ": ")
    encode = _json.make_encoder(
        {},  # check_circular
        default or _not_serializable,
        quote,
        None,  # indent
        key_separator,
        item_separator,
        sort_keys,
        False,  # skipkeys
        True,  # allow_nan
    )
    return "".join(encode(obj, 0))


def _as_text(s: str | bytes) -> str | None:
    """``s`` as text, bytes read as UTF-8 (with json's ``surrogatepass``); None if they are not.

    Bytes json would read in another encoding (UTF-16 or UTF-32: NUL bytes; UTF-8 with a
    byte-order mark) never scan whole as UTF-8, since neither a NUL nor a BOM may stand outside a
    JSON string and a raw NUL may not stand inside one: they reach json by the fallback.
    """
    if isinstance(s, str):
        return s
    if not isinstance(s, bytes | bytearray):
        return None
    try:
        return s.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


def _skip(s: str, at: int) -> int:
    """The index of the first character at or after ``at`` that is not JSON whitespace."""
    end = len(s)
    while at < end and s[at] in _WHITESPACE:
        at += 1
    return at


def _not_serializable(obj: Any) -> Any:
    """``json.JSONEncoder.default``: refuse what JSON has no form for."""
    raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")
