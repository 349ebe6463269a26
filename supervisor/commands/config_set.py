"""``donebell config set KEY VALUE`` and ``donebell config unset KEY``: one key, validated, atomic.

The new file is validated by the same schema as every load (:class:`donebell.shared.config.model.Settings`,
with the ``DONEBELL_<KEY>`` environment set aside, so a value the file cannot hold is refused even
when the environment overrides it today). The edit is span-preserving (other keys keep their
order and formatting), written through a temp file and ``os.replace`` with mode 0600, and the
old and new values are printed (secrets as ``**********``). Concurrent edits wait for each other
(a lock on the file's folder), so no change reported as made is lost. A secret (``token``, ``password``) is
never taken from argv, where the shell history and the process list would keep it: pass ``-``
and type or pipe it on stdin.

The secrets are :data:`config_rules.SECRET_KEYS` (``wake_token`` too: stored as typed, never as
pydantic's mask) and the password of a ``server`` URL (``config set server -``); shown values,
the server URL included, have them masked.
"""

from __future__ import annotations

import contextlib
import difflib
import getpass
import json
import os
import sys
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donebell.shared import paths, platform
from donebell.shared.config import model, schema
from donebell.shared.config.fields import FIELDS
from donebell.shared.config.rules import SECRET_KEYS as CONFIG_SECRET_KEYS
from donebell.shared.config.secret_text import MASK, redact_url, url_passwords
from donebell.shared.paths import config_path
from donebell.shared.platform import files
from donebell.supervisor.commands.config_restart import RESTART_HOW, needs_restart
from donebell.supervisor.commands.config_wait_note import APPROVAL_KEYS, approvals_wait_note
from donebell.supervisor.install.own_config import parse_config_document
from donebell.workers.kit.install.edits import EditError, FileChange, apply, backup_stamp, read_text, target_of
from pydantic import ValidationError

SECRET_KEYS = frozenset(CONFIG_SECRET_KEYS)
REDACTED = MASK


class ConfigSetError(Exception):
    """A refused ``set``/``unset``; ``str()`` is the one line shown to the user."""


@contextlib.contextmanager
def _without_env_overrides() -> Iterator[None]:
    """Set aside every ``DONEBELL_<KEY>`` of a configuration key, matched as the readers match them."""
    overrides = {f"{schema.ENV_PREFIX}{spec.name}".lower() for spec in FIELDS}
    saved = {k: v for k, v in os.environ.items() if k.lower() in overrides}
    for name in saved:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(saved)


@dataclass(frozen=True)
class Change:
    """What ``set``/``unset`` did: the old and new value as shown, and whether the file's value changed."""

    old: str
    new: str
    changed: bool
    restart: str | None = None  # who must restart before it applies (config_restart.py)


def _check_key(key: str) -> None:
    if key not in model.KNOWN_KEYS and key not in model.LEGACY_UNUSED_KEYS:
        close = difflib.get_close_matches(key, sorted(model.KNOWN_KEYS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigSetError(f"unknown key '{key}'{hint} (every key: docs/configuration.md)")


def _is_list_field(key: str) -> bool:
    annotation = model.Settings.model_fields[key].annotation
    return any(typing.get_origin(a) is list for a in (annotation, *typing.get_args(annotation)))


def parse_value(key: str, raw: str) -> Any:
    """The typed value of ``raw`` for ``key``: JSON for lists (or comma-separated words), the
    environment's rules for scalars (``true``, ``5``); the schema then validates it."""
    if key in model.LEGACY_UNUSED_KEYS:
        return parse_scalar(raw)  # accepted for compatibility, never read
    if _is_list_field(key):
        if raw.strip().startswith("["):
            try:
                return json.loads(raw)
            except ValueError as exc:
                raise ConfigSetError(f"{key}: not a valid JSON list ({exc})") from None
        return [word.strip() for word in raw.split(",") if word.strip()]
    annotation = model.Settings.model_fields[key].annotation
    if annotation in (bool, int, float):
        return parse_scalar(raw)
    return raw  # strings, secrets and choices stay exactly as typed


def parse_scalar(value: str) -> Any:
    """``true``/``false``/numbers/JSON lists and objects parse; anything else stays a string."""
    lowered = value.strip().lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    try:
        float(value)
        is_number = True
    except ValueError:
        is_number = False
    if value.strip()[:1] in ("[", "{", '"') or is_number:
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _settings(path: Path, data: dict[str, Any], key: str) -> model.Settings:
    known = {k: v for k, v in data.items() if k in model.KNOWN_KEYS}
    try:
        with _without_env_overrides():
            return model.Settings(**known)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or key
        raise ConfigSetError(f"{loc}: {model.plain_message(err)}; {path} was not changed") from None


def _validated(path: Path, data: dict[str, Any], key: str, before: dict[str, Any] | None = None) -> Any:
    """Validate the whole file's content as ``config check`` does; return ``key``'s value as stored
    in JSON. With ``before`` (the file's content now), a problem the change would introduce that
    ``config check`` fails on (no topic, wake without what it needs) is refused too."""
    settings = _settings(path, data, key)
    if before is not None:
        from donebell.supervisor.commands.config_problems import blocking_problems

        try:
            had = set(blocking_problems(_settings(path, before, key)))
        except ConfigSetError:
            had = set()  # the file is invalid today: any problem left is not this change's
        new = [problem for problem in blocking_problems(settings) if problem not in had]
        if new:
            said = new[0] if new[0].startswith(key) else f"{key}: {new[0]}"
            raise ConfigSetError(f"{said} (as `donebell config check` would say); {path} was not changed")
    if key in model.LEGACY_UNUSED_KEYS:
        return data.get(key)
    value = getattr(settings, key)
    if key in SECRET_KEYS:
        return value.get_secret_value() if value is not None else None
    return settings.model_dump(mode="json")[key]


def _shown(key: str, value: Any) -> str:
    if key in SECRET_KEYS and value is not None:
        return REDACTED
    if key == "server" and isinstance(value, str):
        value = redact_url(value)
    return json.dumps(value, ensure_ascii=False)


def _default(key: str) -> Any:
    if key in model.LEGACY_UNUSED_KEYS:
        return None
    with _without_env_overrides():
        return _validated(Path("(defaults)"), {}, key)


def read_secret(key: str, stdin: typing.TextIO) -> str:
    """A secret (or a server URL holding one) typed at a prompt (not echoed) or piped on stdin."""
    if stdin.isatty():
        return getpass.getpass(f"{key}: ")
    return stdin.readline().rstrip("\r\n")


def _server_value(value: str | None, stdin: typing.TextIO | None) -> str | None:
    """The server URL: ``-`` reads it from stdin; a password in an argv URL is refused (never echoed)."""
    if value == "-":
        return read_secret("server", stdin or sys.stdin)
    if value is not None and url_passwords(value):
        raise ConfigSetError(
            "server carries a password: run `donebell config set server -` and type the URL (or pipe it) on "
            "stdin, or set the user with `config set username NAME` and the password with `config set password -`"
        )
    return value


@contextlib.contextmanager
def _editing(path: Path, *, create: bool) -> Iterator[None]:
    """Hold an exclusive lock on the config file's folder while one edit reads, checks and writes.

    Two ``config set`` runs at once each read the file, and the second rename dropped the first
    change (or the edit was refused as "changed while donebell was editing it"). The folder is
    locked, not the file: the file is replaced by a rename on every edit, and a lock file beside
    it would be one more file in the user's config folder. Nothing else locks that folder.
    """
    folder = path.parent
    if create and not folder.is_dir():
        paths.make_private_dirs(str(folder))
    if platform.on_windows():  # a folder cannot be opened or locked there: the edit's own check refuses
        yield  # a concurrent change instead ("changed while donebell was editing it")
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:  # unset with no config folder: nothing to edit, nothing to lock
        yield
        return
    try:
        files.lock_fd(fd, blocking=True)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def change(path: Path, key: str, raw: str | None) -> Change:
    """Set ``key`` to ``raw`` (``None``: unset it) in the config file; returns what changed."""
    _check_key(key)
    with _editing(path, create=raw is not None):
        return _change_locked(path, key, raw)


def _change_locked(path: Path, key: str, raw: str | None) -> Change:
    if not path.exists() and raw is not None:
        model.init_config(path)  # a fresh file gets its unguessable topic first
    target = target_of(path)
    old_text = read_text(target)
    if old_text is None:  # unset on a missing file: nothing to do
        default = f"{_shown(key, _default(key))} (default)"
        return Change(default, default, changed=False)
    bom, doc = parse_config_document(target, old_text)
    data = doc.value(())
    present = doc.find((key,)) is not None
    old = _shown(key, data[key]) if present else f"{_shown(key, _default(key))} (default)"
    before = dict(data)
    if raw is None:
        if not present:
            return Change(old, old, changed=False)
        del data[key]
        _validated(target, data, key, before)
        doc.remove((key,))
        new = f"{_shown(key, _default(key))} (default)"
    else:
        data[key] = parse_value(key, raw)
        stored = _validated(target, data, key, before)
        if present:
            doc.replace((key,), stored)
        else:
            doc.add_member((), key, stored)
        new = _shown(key, stored)
    edit = FileChange(
        target,
        old_text,
        bom + doc.text,
        "donebell config",
        new_file_mode=0o600,
        force_mode=0o600,
        secret=True,
        backup=False,
    )
    changed = bom + doc.text != old_text  # a rotated secret shows the same stars: compare the file
    try:
        apply(edit, backup_stamp())  # even unchanged: the write also makes a hand-made file owner-only
    except EditError as exc:
        raise ConfigSetError(str(exc)) from None
    after = _settings(target, data, key) if key in model.KNOWN_KEYS else None
    restart = needs_restart(key, after.wake_enabled) if changed and after is not None else None
    return Change(old, new, changed, restart)


def main_set(key: str, value: str | None, *, unset: bool = False, stdin: typing.TextIO | None = None) -> int:
    """``config set`` / ``config unset``; prints ``key: old -> new``."""
    command = "unset" if unset else "set"
    try:
        if not unset and key in SECRET_KEYS:
            if value != "-":
                raise ConfigSetError(
                    f"{key} is a secret: run `donebell config set {key} -` and type it (or pipe it) on stdin, "
                    "so it never lands in your shell history or the process list"
                )
            value = read_secret(key, stdin or sys.stdin)
            if not value.strip():  # an empty pipe or a bare Enter: stored, it would hide behind the mask
                raise ConfigSetError(
                    f"{key}: nothing was read on stdin; an empty secret is refused "
                    f"(to remove it: `donebell config unset {key}`)"
                )
            if not value.strip("*"):  # pasted from an earlier `config show` or `set`
                raise ConfigSetError(f"{key}: that is the mask donebell prints ({REDACTED}), not the secret")
        elif not unset and key == "server":
            value = _server_value(value, stdin)
        path = Path(os.path.abspath(config_path()))
        created = not path.exists() and not unset
        done = change(path, key, None if unset else value)
        if created:
            print(f"wrote {path} with a fresh unguessable topic")
    except ConfigSetError as exc:
        sys.stderr.write(f"donebell config {command}: {exc}\n")
        return 2
    except model.ConfigError as exc:
        sys.stderr.write(f"donebell config {command}: {exc}\n")
        return 1
    except EditError as exc:
        sys.stderr.write(f"donebell config {command}: {exc}\n")
        return 1
    if not done.changed:
        print(f"{key}: {done.new} (unchanged)")
    else:
        print(f"{key}: {done.old} -> {done.new}" if done.old != done.new else f"{key}: {done.new} (changed)")
    if key in model.LEGACY_UNUSED_KEYS:
        print(
            f"note: {key} is accepted for compatibility with the reference notifier's config; donebell does not use it"
        )
    if done.restart:
        print(f"note: {key} takes effect after a restart ({done.restart} read it only when starting): {RESTART_HOW}")
    if key in APPROVAL_KEYS:
        print(approvals_wait_note(path))
    override = f"{schema.ENV_PREFIX}{key.upper()}"
    if override in os.environ:
        print(f"note: {override} is set in this environment and overrides the file")
    print(f"({path})")
    return 0
