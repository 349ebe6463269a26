"""shared/lean_json.py gives what the json package gives, for every input, without importing it.

Held against ``json`` itself: the same value or text for the recorded agents' payloads and the
records a hook writes, the same exception (type, message, position) for every malformed input,
and no ``json`` or ``re`` in ``sys.modules`` after a well-formed round trip.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import donebell.shared
import donebell.supervisor
import donebell.workers
import pytest
from donebell.shared import lean_json

FIXTURES = Path(__file__).parent / "fixtures"


def outcome(call: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        value = call(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        detail = (exc.msg, exc.pos, exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else str(exc)
        return type(exc).__name__, detail
    return "ok", json.dumps(value, sort_keys=True) if not _has_nan(value) else repr(value)


def _has_nan(value: Any) -> bool:
    return "nan" in repr(value)


def recorded_documents() -> list[str]:
    """The recorded hook payloads, and every line of every recorded JSON Lines file (rollouts,
    transcripts, session logs, hook calls: thousands of real documents)."""
    documents = [path.read_text(encoding="utf-8") for path in sorted(FIXTURES.glob("hooks/**/*.json"))]
    for path in sorted(FIXTURES.glob("**/*.jsonl")):
        documents += path.read_text(encoding="utf-8").splitlines()
    return [text for text in documents if text.strip()]


def test_recorded_documents_read_and_write_as_json_does() -> None:
    documents = recorded_documents()
    assert len(documents) > 500
    for text in documents:
        assert outcome(lean_json.loads, text) == outcome(json.loads, text), text[:200]
        assert outcome(lean_json.loads, text.encode()) == outcome(json.loads, text.encode())
        value = json.loads(text)
        options: list[dict[str, Any]] = [
            {},
            {"ensure_ascii": False, "separators": (",", ":")},
            {"sort_keys": True, "default": str},
        ]
        for option in options:
            assert lean_json.dumps(value, **option) == json.dumps(value, **option)


MALFORMED = [
    "",
    "   ",
    "{",
    '{"a" 1}',
    '{"a": 1,}',
    "[1, 2",
    '{"a": 1} {"b": 2}',
    '{"a": 1}\n\nx',
    "nul",
    '"unterminated',
    '"tab\there"',  # a raw control character: json's strict mode refuses it
    '"\\x"',
    "\ufeff{}",  # a byte-order mark in text
    "01",
    "-",
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_text_fails_as_json_fails(text: str) -> None:
    assert outcome(lean_json.loads, text) == outcome(json.loads, text)
    assert outcome(lean_json.loads, text)[0] == "JSONDecodeError"


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": "\xc3\xa9"}',
        b"\xef\xbb\xbf{}",  # UTF-8 with a byte-order mark: json reads it (utf-8-sig)
        '{"a": 1}'.encode("utf-16"),
        '{"a": 1}'.encode("utf-16-le"),
        '{"a": 1}'.encode("utf-32"),
        b'{"a": "\xff"}',  # not UTF-8
        b'"\xed\xa0\x80"',  # an encoded surrogate: json's surrogatepass keeps it
        bytearray(b"[1]"),
        b"  7 ",
        b"",
    ],
)
def test_bytes_read_as_json_reads_them(data: bytes) -> None:
    assert outcome(lean_json.loads, data) == outcome(json.loads, data)


def test_values_json_has_no_plain_form_for() -> None:
    for text in ("NaN", "[Infinity, -Infinity]", "1e400", '{"a": -0.0}', "123456789012345678901234567890"):
        assert repr(lean_json.loads(text)) == repr(json.loads(text))
    assert math.isnan(lean_json.loads("NaN"))
    odd: Any = {"z": [float("nan"), float("inf"), -0.0, 10**30], 1: None, 2.5: True, None: "\u2028\x00é\ud800"}
    for options in ({}, {"ensure_ascii": False}, {"separators": (",", ":")}, {"sort_keys": False}):
        assert lean_json.dumps(odd, **options) == json.dumps(odd, **options)
    assert lean_json.dumps("é\n") == json.dumps("é\n") and lean_json.dumps(3) == "3"


def test_what_json_refuses_to_write_is_refused_alike() -> None:
    loop: list[Any] = []
    loop.append(loop)
    for value, options in (
        ({"a": object()}, {}),
        ({"a": {1, 2}}, {"sort_keys": True}),
        ({(1, 2): 3}, {}),
        ({"b": 1, 2: 3}, {"sort_keys": True}),  # unorderable keys
        (loop, {}),
    ):
        assert outcome(lean_json.dumps, value, **options) == outcome(json.dumps, value, **options)
    assert lean_json.dumps({"a": {1}}, default=sorted) == json.dumps({"a": {1}}, default=sorted)


def test_a_well_formed_round_trip_imports_neither_json_nor_re(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from donebell.shared import lean_json\n"
        'value = lean_json.loads(\' {"a": [1, 2.5, "\\\\u00e9", null]}\\n\')\n'
        "lean_json.dumps(value, ensure_ascii=False, separators=(',', ':'), sort_keys=True, default=str)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('json', 're')))\n"
        "lean_json.loads('{')\n"  # malformed: json says what and where, imported only now
    )
    # -S: no site, so no editable install's finder either; donebell from a folder of links.
    package = tmp_path / "donebell"
    package.mkdir()
    for module in (donebell.shared, donebell.workers, donebell.supervisor):
        (package / module.__name__.rsplit(".", 1)[1]).symlink_to(list(module.__path__)[0])
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout == "[]\n", result.stderr
    assert "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes" in result.stderr
