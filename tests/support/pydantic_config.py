"""The reference loader: pydantic-settings validates the raw file and environment by itself.

``model.load`` (the CLI), ``view.load`` (roles) and the hook reader all normalize with
the stdlib field table (:mod:`donebell.shared.config.schema`); the tests check each of them
against this loader, which lets pydantic read the same raw inputs on its own.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from donebell.shared.config import schema
from donebell.shared.config.model import KNOWN_KEYS, LEGACY_UNUSED_KEYS, ConfigError, Loaded, Settings, plain_message
from pydantic import ValidationError
from pydantic_settings import SettingsError


def load(path: Path | None = None) -> Loaded:
    """pydantic's own reading of ``path`` and ``DONEBELL_<KEY>``, errors in the loaders' one-line form."""
    try:
        path, data = schema.read_file(path)
    except schema.ConfigFileError as exc:
        raise ConfigError(str(exc)) from None
    data = data or {}
    warnings: list[str] = []
    unused = sorted(k for k in data if k in LEGACY_UNUSED_KEYS)
    for key in sorted(k for k in data if k not in KNOWN_KEYS and k not in LEGACY_UNUSED_KEYS):
        close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        warnings.append(f"{path}: unknown key '{key}' ignored{hint}")
    known = {k: v for k, v in data.items() if k in KNOWN_KEYS}
    try:
        settings = Settings(**known)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "?"
        env_name = f"DONEBELL_{key.split('.')[0].upper()}"
        origin = env_name if env_name in os.environ else str(path)
        raise ConfigError(f"config error in {origin}: {key}: {plain_message(err)}") from None
    except SettingsError as exc:  # a DONEBELL_<KEY> of a list key that is not JSON
        field = re.search(r'field "(\w+)"', str(exc))
        where = f"{schema.ENV_PREFIX}{field.group(1).upper()}: {field.group(1)}" if field else "the environment"
        raise ConfigError(f"config error in {where}: not valid JSON") from None
    schema.refuse_loose_secret_file(path, data)
    return Loaded(
        settings=settings, path=path, exists=bool(data) or path.exists(), unused_legacy=unused, warnings=warnings
    )
