"""The loader of the light settings view: the whole config validated with the one normalizer, stdlib only.

Role processes load their configuration through :mod:`donebell.shared.config.view` (generated
from :class:`donebell.shared.config.model.Settings` by ``tools/gen_settings_view.py``), which holds
one :class:`FieldSpec` per key (in :mod:`.config_fields`) and calls :func:`read_values` here; each
value is normalized by :mod:`.config_schema`, the normalizer the hook and the CLI use too.
Importing pydantic-settings costs a process ~16-24 MiB of resident memory; this costs well under one.

What it must reproduce, value for value and error line for error line (``tests/test_settings_view.py``
compares both loaders on a broad table of inputs):

* the sources: the JSON file (:func:`configfile.read_file`) and ``DONEBELL_<KEY>`` variables
  (matched case-insensitively, as pydantic-settings does), the environment winning. A variable
  holds a raw string: list fields decode it as JSON (a ``list | None`` field passes an undecodable
  string on to validation), every other field validates the string itself;
* pydantic's lax coercions (``"4"`` and ``4.0`` are an int, ``"on"`` and ``1`` a bool, a string
  a float with ``inf``/``1_000``...: :mod:`.settings_coerce`) and its messages, bounds (ge/gt/le/lt),
  ``Literal`` choices, the topic and server rules (shared with the pydantic model:
  :mod:`.config_rules`), and the first error only, in field order;
* the refusal of a token or password kept in a file that others can read.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from donebell.shared.config import coerce, raw_file, schema
from donebell.shared.config.rules import BEFORE_RULES as BEFORE_RULES  # re-exported: the generator reads it here
from donebell.shared.config.rules import RULES as RULES  # re-exported: the generator reads it here
from donebell.shared.config.rules import TOPIC_ALPHABET as TOPIC_ALPHABET
from donebell.shared.config.rules import file_holds_secret
from donebell.shared.config.rules import split_tags as split_tags
from donebell.shared.config.schema import FieldSpec as FieldSpec  # re-exported: settings_view uses it
from donebell.shared.text import secret_text

ENV_PREFIX = raw_file.ENV_PREFIX
MASK = "**********"  # what pydantic prints for a SecretStr


class ConfigError(Exception):
    """The configuration is invalid; ``str()`` is one line naming the key and the file."""


def refuse_loose_secret_file(path: Path, data: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` if the file holds a secret and others can read it.

    Only a secret in the file itself counts: one from ``DONEBELL_TOKEN`` leaves the file public.
    """
    if sys.platform == "win32" or not file_holds_secret(data) or not path.exists():
        return
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise ConfigError(
            f"config error in {path}: token/password: the file is readable by others (mode {mode:04o}); "
            f"run: chmod 600 {path}"
        )


# --- value types -------------------------------------------------------------------------------


class SecretLike(Protocol):
    """A secret as code reads it: pydantic's ``SecretStr`` and :class:`Secret` both fit."""

    def get_secret_value(self) -> str: ...


class Secret:
    """A token or password: its repr and str are masked, so it never prints by accident."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __len__(self) -> int:  # as SecretStr: an empty secret is falsy
        return len(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"Secret('{MASK}')" if self._value else "Secret('')"

    def __str__(self) -> str:
        return MASK if self._value else ""


class WatchRootLike(Protocol):
    """A ``watch_roots`` object entry as code reads it (pydantic ``WatchRoot`` or :class:`WatchRootEntry`)."""

    @property
    def path(self) -> str: ...
    @property
    def origin(self) -> str | None: ...
    @property
    def sqlite_path(self) -> str | None: ...


@dataclass(frozen=True)
class WatchRootEntry:
    """An extra Codex home to scan, given as an object (``{"path", "origin", "sqlite_path"}``)."""

    path: str
    origin: str | None = None
    sqlite_path: str | None = None


class SettingsViewBase:
    """Methods shared with the pydantic model, for the few callers that dump settings."""

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        """As pydantic's: object entries become dicts; in ``json`` mode secrets become ``MASK``."""
        out: dict[str, Any] = {}
        for item in fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            if isinstance(value, Secret) and mode == "json":
                value = MASK if value else ""
            elif isinstance(value, list):
                value = [_entry_dict(v) if isinstance(v, WatchRootEntry) else v for v in value]
            out[item.name] = value
        return out

    def redacted(self) -> dict[str, Any]:
        """All keys with secrets replaced by ``MASK`` (or null when unset), as ``Settings.redacted``."""
        data = {
            k: (MASK if isinstance(getattr(self, k), Secret) else v) for k, v in self.model_dump(mode="json").items()
        }
        if isinstance(data.get("server"), str):
            data["server"] = secret_text.redact_url(data["server"])
        return data


def _entry_dict(entry: WatchRootEntry) -> dict[str, Any]:
    return {item.name: getattr(entry, item.name) for item in fields(entry)}


# --- loading -----------------------------------------------------------------------------------


@dataclass
class RawView:
    """What :func:`read_values` found: validated values by key, plus what ``config check`` reports."""

    values: dict[str, Any]
    path: Path
    exists: bool
    unused_legacy: list[str]
    warnings: list[str]


def read_values(specs: tuple[FieldSpec, ...], legacy: frozenset[str], path: Path | None = None) -> RawView:
    """File + environment, validated; raise :class:`ConfigError` with one clear line on any problem."""
    try:
        path, data = raw_file.read_file(path)
    except raw_file.ConfigFileError as exc:
        raise ConfigError(str(exc)) from None
    data = data or {}
    known = {spec.name for spec in specs}
    unused = sorted(k for k in data if k in legacy)
    warnings = _unknown_key_warnings(path, [k for k in data if k not in known and k not in legacy], known)
    env = _environment(specs)
    try:
        values = validate({k: v for k, v in data.items() if k in known}, env, specs)
    except coerce.Invalid as exc:
        env_name = f"{ENV_PREFIX}{exc.loc.split('.')[0].upper()}"
        origin = env_name if env_name in os.environ else str(path)
        raise ConfigError(f"config error in {origin}: {exc.loc}: {exc.msg}") from None
    refuse_loose_secret_file(path, data)
    return RawView(values, path, bool(data) or path.exists(), unused, warnings)


def _unknown_key_warnings(path: Path, unknown: list[str], known: set[str]) -> list[str]:
    if not unknown:
        return []
    import difflib  # only when a key is unknown: a typo is rare

    warnings = []
    for key in sorted(unknown):
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        warnings.append(f"{path}: unknown key '{key}' ignored{hint}")
    return warnings


def _environment(specs: tuple[FieldSpec, ...]) -> dict[str, Any]:
    """``DONEBELL_<KEY>`` values, matched case-insensitively; list fields decoded from JSON."""
    env = schema.environment()
    out: dict[str, Any] = {}
    for spec in specs:
        try:
            present, raw = schema.env_value(spec, env)
        except schema.EnvNotJson as exc:
            raise ConfigError(f"config error in {exc.name}: {spec.name}: not valid JSON") from None
        if present:
            out[spec.name] = raw
    return out


def validate(data: dict[str, Any], env: dict[str, Any], specs: tuple[FieldSpec, ...]) -> dict[str, Any]:
    """Every key's value (environment over file over default), normalized in field order."""
    values: dict[str, Any] = {}
    for spec in specs:
        if spec.name in env:
            value = env[spec.name]
        elif spec.name in data:
            value = data[spec.name]
        else:
            value = spec.fresh_default()
        values[spec.name] = _typed(spec, schema.normalize(spec, value))
    return values


def _typed(spec: FieldSpec, value: Any) -> Any:
    """The view's types for a normalized value: :class:`Secret` and :class:`WatchRootEntry`."""
    if spec.kind == "secret" and value is not None:
        return Secret(value)
    if spec.kind == "watch_roots":
        return [v if isinstance(v, str) else WatchRootEntry(v["path"], v["origin"], v["sqlite_path"]) for v in value]
    return value
