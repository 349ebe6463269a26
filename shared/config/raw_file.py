"""Read the raw configuration file (a JSON object) with the stdlib only.

Every reader (hooks, role processes, the CLI) takes the file from :func:`read_object` and
normalizes its values, with the ``DONEBELL_<KEY>`` overrides, in :mod:`donebell.shared.config.schema`.
"""

from __future__ import annotations

import os

from donebell.shared import lean_json as json
from donebell.shared.paths import RelativePathError, config_path

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost the hook ~5 ms of start-up: annotations only
    from pathlib import Path
    from typing import Any

_BOM = b"\xef\xbb\xbf"


class ConfigFileError(Exception):
    """The config file exists but cannot be read as a JSON object."""


def read_file(path: Path | None = None) -> tuple[Path, dict[str, Any] | None]:
    """``(path, data)``; data is None when the file does not exist (see :func:`read_object`)."""
    try:
        path = path or config_path()
    except RelativePathError as exc:
        raise ConfigFileError(str(exc)) from None
    return path, read_object(path)


def read_object(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object in the config file at ``path``; None when the file does not exist.

    A UTF-8 BOM is accepted (Windows editors write one). Raises :class:`ConfigFileError`.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot read: {exc.strerror}") from None
    if raw.startswith(_BOM):  # by hand: the "utf-8-sig" codec is one more module to import
        raw = raw[len(_BOM) :]
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigFileError(f"{path}: not valid UTF-8 JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigFileError(f"{path}: the top level must be a JSON object")
    return data
