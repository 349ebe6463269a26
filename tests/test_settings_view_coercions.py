"""pydantic's lax coercions (numbers, number-like strings, bool words, null, lists) coerce or fail
identically in the pydantic loader and the roles' settings view, from the file and the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.settings_parity import assert_same, private_config, write


@pytest.fixture()
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config path in a private folder, with no DONEBELL_* variable of the developer's shell."""
    return private_config(tmp_path, monkeypatch)


#: Raw inputs of pydantic's lax coercions, tried on one key of each kind, from the file and the environment.
COERCIONS: list[Any] = [
    True,
    False,
    0,
    1,
    2,
    -1,
    3.0,
    3.5,
    1e20,
    9.2e18,
    "4",
    " 4 ",
    "4.0",
    "4.",
    "+4",
    "-0",
    "4.5",
    "1_000",
    "1__0",
    "_1",
    "1e3",
    "0x10",
    "inf",
    "-inf",
    "Infinity",
    "nan",
    "",
    " ",
    "on",
    "OFF",
    "t",
    "Yes",
    " true ",
    "1.0",
    "٤",
    None,
    [],
    ["x"],
    {"path": "/x"},
    "strict",
    "balanced",
]


KIND_KEYS = [
    "priority",
    "max_message_chars",
    "idle_grace_seconds",
    "watch_scan_seconds",
    "markdown",
    "idle_detection_mode",
    "topic",
    "username",
    "token",
    "tags",
    "chain_notify",
    "watch_roots",
]


@pytest.mark.parametrize("key", KIND_KEYS)
def test_lax_coercions_agree(cfg: Path, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    """Numbers, number-like strings, bool words, null and lists coerce or fail identically."""
    outcomes = set()
    for value in COERCIONS:
        write(cfg, {key: value})
        outcomes.add(assert_same(cfg)[0])
        if isinstance(value, str):
            write(cfg, {})
            monkeypatch.setenv(f"DONEBELL_{key.upper()}", value)
            outcomes.add(assert_same(cfg)[0])
            monkeypatch.delenv(f"DONEBELL_{key.upper()}")
    assert outcomes == {"loaded", "refused"}  # the table exercises both ways for every kind
