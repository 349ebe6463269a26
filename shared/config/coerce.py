"""pydantic v2's lax-mode coercions of config values, with its error messages, in the stdlib.

A JSON file gives str/int/float/bool/None/list/dict values, a ``DONEBELL_<KEY>`` variable a string;
pydantic (python mode, not strict) turns ``"4"``, ``4.0`` and ``True`` into the int 4/4/1, reads
``"on"``/``"t"``/``1`` as True, parses ``"1_000"`` and ``"inf"`` as floats... and refuses the rest
with fixed messages. :mod:`donebell.shared.config.schema` validates each key with these functions;
``tests/test_settings_view_coercions.py`` compares the outcome with pydantic's on a table of raw inputs.
Each function raises :class:`Invalid` with pydantic's location and message.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and re cost the hook (which reads bools, strings, lists) milliseconds
    import re
    from typing import Any


class Invalid(Exception):
    """A value pydantic would refuse: ``loc`` as in its error (``tags.1``), ``msg`` its message."""

    def __init__(self, loc: str, msg: str) -> None:
        super().__init__(loc, msg)
        self.loc, self.msg = loc, msg


def string(loc: str, value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(loc, "Input should be a valid string")
    return value


def list_of(loc: str, value: Any) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise Invalid(loc, "Input should be a valid list")
    return list(value)


#: Strings pydantic reads as a bool (case-insensitive, not stripped).
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}
_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(name: str) -> re.Pattern[str]:
    """The number patterns, compiled on first use: only numeric keys need ``re``."""
    if not _PATTERNS:
        import re

        _PATTERNS["int"] = re.compile(r"[+-]?[0-9]+")
        _PATTERNS["zero_fraction"] = re.compile(r"\.0+$")
        _PATTERNS["float"] = re.compile(
            r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE
        )
    return _PATTERNS[name]


_INT_MAX = 2**63  # pydantic refuses a float beyond i64 as an int ("exceeded maximum size")


def boolean(loc: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise Invalid(loc, "Input should be a valid boolean, unable to interpret input")
    if isinstance(value, int):
        if value in (0, 1):
            return bool(value)
        if -_INT_MAX <= value < _INT_MAX:
            raise Invalid(loc, "Input should be a valid boolean, unable to interpret input")
        raise Invalid(loc, "Input should be a valid boolean")
    if isinstance(value, float):
        if value in (0.0, 1.0):
            return bool(value)
        if _finite(value) and value == int(value) and abs(value) < _INT_MAX:  # read as an int first
            raise Invalid(loc, "Input should be a valid boolean, unable to interpret input")
    raise Invalid(loc, "Input should be a valid boolean")


def _finite(value: float) -> bool:
    """``math.isfinite`` without importing ``math`` (an extension module: ~0.5 ms of a hook's start)."""
    return value - value == 0.0  # inf - inf and nan - nan are nan


def _without_underscores(text: str) -> str | None:
    """``1_000`` -> ``1000``; None for a misplaced underscore (as pydantic-core's number parsing)."""
    if "_" not in text:
        return text
    if text.startswith("_") or text.endswith("_") or "__" in text:
        return None
    return text.replace("_", "")


def integer(loc: str, value: Any) -> int:
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float):
        if not _finite(value):
            raise Invalid(loc, "Input should be a finite number")
        if value != int(value):
            raise Invalid(loc, "Input should be a valid integer, got a number with a fractional part")
        if abs(value) >= _INT_MAX:
            raise Invalid(loc, "Unable to parse input string as an integer, exceeded maximum size")
        return int(value)
    if isinstance(value, str):
        text = _without_underscores(_pattern("zero_fraction").sub("", value.strip()))  # "4.00" is 4, "4.0_0" is not
        if text is None or not _pattern("int").fullmatch(text):
            raise Invalid(loc, "Input should be a valid integer, unable to parse string as an integer")
        return int(text)
    raise Invalid(loc, "Input should be a valid integer")


def number(loc: str, value: Any) -> float:
    """A finite float: the model sets ``allow_inf_nan=False`` (a duration of ``inf`` or ``1e309``
    passed the check and then overflowed at render time; the generator insists on that setting)."""
    if isinstance(value, bool | int | float):
        try:
            result = float(value)
        except OverflowError:  # an integer beyond the float range
            raise Invalid(loc, "Input should be a valid number") from None
    elif isinstance(value, str):
        text = _without_underscores(value.strip())
        if text is None or not _pattern("float").fullmatch(text):
            raise Invalid(loc, "Input should be a valid number, unable to parse string as a number")
        result = float(text)
    else:
        raise Invalid(loc, "Input should be a valid number")
    if not _finite(result):
        raise Invalid(loc, "Input should be a finite number")
    return result


def bounds(
    loc: str,
    value: Any,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
) -> None:
    """pydantic's numeric constraints, checked as ``not (x >= b)`` so that NaN fails every bound."""
    if not isinstance(value, int | float):
        return
    if gt is not None and not value > gt:
        raise Invalid(loc, f"Input should be greater than {gt}")
    if ge is not None and not value >= ge:
        raise Invalid(loc, f"Input should be greater than or equal to {ge}")
    if lt is not None and not value < lt:
        raise Invalid(loc, f"Input should be less than {lt}")
    if le is not None and not value <= le:
        raise Invalid(loc, f"Input should be less than or equal to {le}")


def choices_text(choices: tuple[str, ...]) -> str:
    quoted = [repr(c) for c in choices]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
