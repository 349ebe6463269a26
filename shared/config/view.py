"""The configuration of role processes, without pydantic: :func:`load` and the settings it returns.

:func:`load` reads the file and the ``DONEBELL_<KEY>`` overrides with the one strict reader
(:func:`donebell.shared.config.schema.read_values`, the one :func:`donebell.shared.config.model.load`
uses too): the same values, refused with the same one-line :class:`ConfigError`. It returns them
as a read-only :class:`SettingsView`. Importing pydantic-settings would cost each role ~16-24 MiB
of resident memory and milliseconds of start-up; this module costs well under one.

There is no second copy of the model to keep in step. Code that reads settings annotates with
:data:`SettingsLike`, which *is* the pydantic ``Settings`` to the type checker: every attribute a
role reads is checked against the model itself. At run time a :class:`SettingsView` stands in
for it, holding exactly the model's keys with the values pydantic would give
(``tests/test_settings_view.py``), secrets as :class:`Secret` and watch-root objects as
:class:`WatchRootEntry` (read as ``SecretStr`` and ``WatchRoot`` are), and the two model methods
role code calls, ``model_dump`` and ``redacted`` (``tests/test_settings_view.py`` checks that the
roles call no other).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from donebell.shared.config import secret_text
from donebell.shared.config.fields import FIELDS, LEGACY_UNUSED_KEYS
from donebell.shared.config.schema import ConfigError, FieldSpec, read_values

if TYPE_CHECKING:
    from donebell.shared.config.model import Settings as SettingsLike

__all__ = [
    "FIELDS",
    "ConfigError",
    "LoadedView",
    "Secret",
    "SettingsLike",
    "SettingsView",
    "WatchRootEntry",
    "WatchRootLike",
    "load",
]

MASK = "**********"  # what pydantic prints for a SecretStr


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


class SettingsView:
    """Every configuration key as a read-only attribute: the values :func:`load` normalized, or the
    defaults (``SettingsView()``). The type checker reads it through :data:`SettingsLike`."""

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - {spec.name for spec in FIELDS}
        if unknown:
            raise TypeError(f"not configuration keys: {', '.join(sorted(unknown))}")
        for spec in FIELDS:
            value = values[spec.name] if spec.name in values else spec.fresh_default()
            object.__setattr__(self, spec.name, _typed(spec, value))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"settings are read-only: {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SettingsView) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"SettingsView({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        """As pydantic's: watch-root objects become dicts; in ``json`` mode secrets become ``MASK``."""
        out: dict[str, Any] = {}
        for name, value in vars(self).items():
            if isinstance(value, Secret) and mode == "json":
                value = MASK if value else ""
            elif isinstance(value, list):
                value = [vars(v).copy() if isinstance(v, WatchRootEntry) else v for v in value]
            out[name] = value
        return out

    def redacted(self) -> dict[str, Any]:
        """All keys with secrets replaced by ``MASK`` (or null when unset), as ``Settings.redacted``."""
        data = {k: (MASK if isinstance(vars(self)[k], Secret) else v) for k, v in self.model_dump(mode="json").items()}
        data["server"] = secret_text.redact_url(data["server"])
        return data


if not TYPE_CHECKING:  # the run-time name of what the type checker reads as the model
    SettingsLike = SettingsView


def _typed(spec: FieldSpec, value: Any) -> Any:
    """A normalized value in the view's types: :class:`Secret` and :class:`WatchRootEntry`."""
    if spec.kind == "secret" and isinstance(value, str):
        return Secret(value)
    if spec.kind == "watch_roots":
        return [v if isinstance(v, str | WatchRootEntry) else WatchRootEntry(**v) for v in value]
    return value


@dataclass(frozen=True)
class LoadedView:
    """A loaded configuration plus what ``config check`` reports about it."""

    settings: SettingsLike
    path: Path
    exists: bool
    unused_legacy: list[str]
    warnings: list[str]


def load(path: Path | None = None) -> LoadedView:
    """Load and validate; raise :class:`ConfigError` with one clear line on any problem."""
    raw = read_values(FIELDS, LEGACY_UNUSED_KEYS, path)
    settings = cast("SettingsLike", SettingsView(**raw.values))  # the one place the view stands in for the model
    return LoadedView(settings, raw.path, raw.exists, raw.unused_legacy, raw.warnings)
