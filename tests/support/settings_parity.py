"""Both settings loaders side by side: the comparable outcome of a config file under pydantic's reference
reader, the CLI's loader and the roles' view, and the private config path the parity tests use."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.config import model, view

from support import pydantic_config


def typed(value: Any) -> Any:
    """A comparable form that keeps types apart (1, 1.0 and True differ; NaN equals NaN)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [typed(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def outcome(loader: Any, path: Path) -> tuple[Any, ...]:
    """What a loader makes of the config at ``path`` with the current environment."""
    try:
        loaded = loader(path)
    except model.ConfigError as exc:
        return ("refused", str(exc))
    s = loaded.settings
    secrets = {
        k: getattr(s, k).get_secret_value() if getattr(s, k) is not None else None for k in ("token", "password")
    }
    roots = [r if isinstance(r, str) else (r.path, r.origin, r.sqlite_path) for r in s.watch_roots]
    return (
        "loaded",
        typed(s.model_dump(mode="json")),
        typed(s.redacted()),
        secrets,
        roots,
        loaded.unused_legacy,
        loaded.warnings,
        loaded.exists,
    )


def both(path: Path) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """pydantic's own reading (the reference) and the roles' view; the CLI's loader must equal the reference."""
    reference = outcome(pydantic_config.load, path)
    assert outcome(model.load, path) == reference
    return reference, outcome(view.load, path)


def write(path: Path, data: Any, mode: int = 0o600) -> None:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    path.chmod(mode)


def assert_same(path: Path, expect: str | None = None) -> tuple[Any, ...]:
    """Both loaders agree; ``expect`` ("loaded"/"refused") pins which way, so a case cannot pass by accident."""
    pyd, light = both(path)
    assert light == pyd
    if expect is not None:
        assert pyd[0] == expect, pyd
    return pyd


def private_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config path in a private folder, with no DONEBELL_* variable of the developer's shell."""
    for name in list(os.environ):
        if name.lower().startswith("donebell_"):
            monkeypatch.delenv(name)
    return tmp_path / "config.json"
