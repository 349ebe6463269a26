"""The one schema, normalizer and reader of configuration values: hooks, role processes and the CLI use it.

Each key is a :class:`FieldSpec` in the generated table :data:`donebell.shared.config.fields.FIELDS`
(rendered from :class:`donebell.shared.config.model.Settings` by ``python -m tools.gen_config_fields``).
:func:`normalize` turns one raw value (from the JSON file, or :func:`env_value` of a
``DONEBELL_<KEY>`` string) into the value every reader sees, with pydantic's lax coercions
(:mod:`.coerce`), bounds, choices and the shared rules (:mod:`.rules`); it raises :class:`Invalid`
otherwise. The file is one JSON object (:func:`read_object`, the stdlib only). Two readers apply
the normalizer to the file and the environment:

* :func:`read_values`, the strict one: every key, refusing the config on the first invalid one
  with one :class:`ConfigError` line. Role processes (:mod:`.view`) and the CLI (:mod:`.model`,
  which hands the values to pydantic, its edge: pydantic must accept them unchanged) use it;
* :func:`read_keys`, the hook's: the same normalization of a few keys, but a missing or broken file
  counts as absent and an invalid value as its default (a hook never fails the agent; the
  roles' full validation reports the problem loudly).

Hook path module: no ``typing``, ``pathlib``, ``dataclasses`` or ``re`` at import
(tests/test_import_cost.py); what only the strict reader needs is imported inside it.
"""

from __future__ import annotations

import os

from donebell.shared import lean_json as json
from donebell.shared.config import coerce

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~2.5 ms of start-up: annotations only
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any

ENV_PREFIX = "DONEBELL_"
_BOM = b"\xef\xbb\xbf"
Invalid = coerce.Invalid


class ConfigError(Exception):
    """The configuration is invalid; ``str()`` is one line naming the key and the file (or variable)."""


class ConfigFileError(Exception):
    """The config file exists but cannot be read as a JSON object."""


class EnvNotJson(Exception):
    """A ``DONEBELL_<KEY>`` of a list key that is not JSON (pydantic-settings refuses it before validation)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class FieldSpec:
    """One configuration key as the generator read it from the pydantic model."""

    __slots__ = ("name", "kind", "default", "optional", "ge", "gt", "le", "lt", "choices", "rule", "before", "env_json")

    def __init__(
        self,
        name: str,
        kind: str,  # str | int | float | bool | choice | str_list | str_map_list | watch_roots | secret
        default: Any,
        *,
        optional: bool = False,  # None is accepted
        ge: float | None = None,
        gt: float | None = None,
        le: float | None = None,
        lt: float | None = None,
        choices: tuple[str, ...] = (),
        rule: str | None = None,  # a key of rules.RULES
        before: str | None = None,  # a key of rules.BEFORE_RULES
        env_json: str | None = None,  # "strict": the variable must be JSON; "lenient": may be a plain string
    ) -> None:
        self.name, self.kind, self.default, self.optional = name, kind, default, optional
        self.ge, self.gt, self.le, self.lt = ge, gt, le, lt
        self.choices, self.rule, self.before, self.env_json = choices, rule, before, env_json

    def __repr__(self) -> str:
        return f"FieldSpec({self.name!r}, {self.kind!r}, {self.default!r})"

    def fresh_default(self) -> Any:
        """The default, a new list each time (no shared mutable default)."""
        return list(self.default) if isinstance(self.default, list) else self.default


def environment() -> dict[str, str]:
    """``DONEBELL_<KEY>`` variables by lower-cased name (pydantic-settings matches case-insensitively; later wins)."""
    return {name.lower(): value for name, value in os.environ.items()}


def env_value(spec: FieldSpec, env: dict[str, str]) -> tuple[bool, Any]:
    """``(present, raw)`` of the key's variable: list keys decode JSON, every other key keeps the string.

    ``"null"`` for a list key counts as unset, as pydantic-settings drops a None. Raises
    :class:`EnvNotJson` for a list key whose variable is not JSON (a ``list | None`` key passes
    the string on, and validation refuses it).
    """
    raw = env.get(f"{ENV_PREFIX.lower()}{spec.name}")
    if raw is None:
        return False, None
    if not spec.env_json:
        return True, raw
    try:
        decoded = json.loads(raw)
    except ValueError:
        if spec.env_json == "strict":
            raise EnvNotJson(f"{ENV_PREFIX}{spec.name.upper()}") from None
        return True, raw
    return (decoded is not None), decoded


def normalize(spec: FieldSpec, value: Any) -> Any:
    """The key's value as every reader sees it (secrets as plain strings); raises :class:`Invalid`."""
    if spec.before is not None:
        from donebell.shared.config.rules import BEFORE_RULES

        value = BEFORE_RULES[spec.before](value)
    if value is None and spec.optional:
        return None
    kind = spec.kind
    if kind == "str" or kind == "secret":
        result: Any = coerce.string(spec.name, value)
    elif kind == "int":
        result = coerce.integer(spec.name, value)
    elif kind == "float":
        result = coerce.number(spec.name, value)
    elif kind == "bool":
        result = coerce.boolean(spec.name, value)
    elif kind == "choice":
        if not (isinstance(value, str) and value in spec.choices):
            raise Invalid(spec.name, f"Input should be {coerce.choices_text(spec.choices)}")
        result = value
    elif kind == "str_list":
        result = [coerce.string(f"{spec.name}.{i}", item) for i, item in enumerate(coerce.list_of(spec.name, value))]
    elif kind == "str_map_list":
        result = [str_map(f"{spec.name}.{i}", item) for i, item in enumerate(coerce.list_of(spec.name, value))]
    elif kind == "watch_roots":
        result = [watch_root(f"{spec.name}.{i}", item) for i, item in enumerate(coerce.list_of(spec.name, value))]
    else:
        raise AssertionError(f"unknown field kind {kind!r}")
    coerce.bounds(spec.name, result, gt=spec.gt, ge=spec.ge, lt=spec.lt, le=spec.le)
    if spec.rule is not None:
        from donebell.shared.config.rules import RULES

        try:
            result = RULES[spec.rule](result)
        except ValueError as exc:
            raise Invalid(spec.name, str(exc)) from None  # our rule's words, without pydantic's "Value error, "
    return result


def str_map(loc: str, value: Any) -> dict[str, str]:
    """One ``{"name": "text", ...}`` entry of a ``list[dict[str, str]]`` key."""
    if not isinstance(value, dict):
        raise Invalid(loc, "Input should be a valid dictionary")
    return {k: coerce.string(f"{loc}.{k}", v) for k, v in value.items()}


def watch_root(loc: str, value: Any) -> str | dict[str, str | None]:
    """A ``watch_roots`` entry: a path string, or ``{"path", "origin", "sqlite_path"}`` (other keys dropped)."""
    if isinstance(value, str):
        return value
    # pydantic tries str first, then WatchRoot, and reports the str attempt first.
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        extra = {name: value.get(name) for name in ("origin", "sqlite_path")}
        if all(v is None or isinstance(v, str) for v in extra.values()):
            return {"path": value["path"], **extra}
    raise Invalid(f"{loc}.str", "Input should be a valid string")


def pick(spec: FieldSpec, data: dict[str, Any], env: dict[str, str]) -> Any:
    """The raw value of one key: environment over file over default (raises :class:`EnvNotJson`)."""
    present, raw = env_value(spec, env)
    if present:
        return raw
    return data[spec.name] if spec.name in data else spec.fresh_default()


def read_file(path: Path | None = None) -> tuple[Path, dict[str, Any] | None]:
    """``(path, data)``; data is None when the file does not exist (see :func:`read_object`)."""
    from donebell.shared.paths import RelativePathError, config_path

    try:
        path = path or config_path()
    except RelativePathError as exc:
        raise ConfigFileError(str(exc)) from None
    return path, read_object(path)


def read_object(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object in the config file at ``path``; None when it does not exist. A UTF-8 BOM
    is accepted (Windows editors write one); :class:`ConfigFileError` otherwise."""
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


def read_keys(
    specs: Iterable[FieldSpec], names: tuple[str, ...], refused: dict[str, str] | None = None
) -> dict[str, Any]:
    """The named keys, normalized, from the config file and the environment; never raises.

    The hook reader: a missing, unreadable or broken file counts as empty, and a key whose value
    is invalid reads as its default (see the module docstring); ``refused`` then gets the key and
    the loaders' reason, so the hook can say why it ignored it.
    """
    from donebell.shared.paths import RelativePathError, config_path_str

    try:
        data = read_object(config_path_str()) or {}
    except (ConfigFileError, RelativePathError):
        data = {}
    env = environment()
    out: dict[str, Any] = {}
    for spec in specs:
        if spec.name not in names:
            continue
        try:
            out[spec.name] = normalize(spec, pick(spec, data, env))
        except Invalid as exc:
            out[spec.name] = spec.fresh_default()
            if refused is not None:
                refused[spec.name] = f"{exc.loc}: {exc.msg}"
        except EnvNotJson as exc:
            out[spec.name] = spec.fresh_default()
            if refused is not None:
                refused[spec.name] = f"{exc.name}: not valid JSON"
    return out


class ReadValues:
    """What :func:`read_values` found: every key's normalized value, plus what ``config check`` reports."""

    __slots__ = ("values", "path", "exists", "unused_legacy", "warnings")

    def __init__(
        self, values: dict[str, Any], path: Path, exists: bool, unused_legacy: list[str], warnings: list[str]
    ) -> None:
        self.values, self.path, self.exists = values, path, exists
        self.unused_legacy, self.warnings = unused_legacy, warnings


def read_values(specs: tuple[FieldSpec, ...], legacy: frozenset[str], path: Path | None = None) -> ReadValues:
    """File + environment, every key normalized (secrets as plain strings, watch roots as dicts);
    raise :class:`ConfigError` with one clear line on any problem."""
    try:
        path, data = read_file(path)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from None
    data = data or {}
    env, present = environment(), {}
    for spec in specs:  # every variable first: pydantic-settings decodes them all before validating
        try:
            found, raw = env_value(spec, env)
        except EnvNotJson as exc:
            raise ConfigError(f"config error in {exc.name}: {spec.name}: not valid JSON") from None
        if found:
            present[spec.name] = raw
    values: dict[str, Any] = {}
    for spec in specs:
        value = present[spec.name] if spec.name in present else data.get(spec.name, spec.fresh_default())
        try:
            values[spec.name] = normalize(spec, value)
        except Invalid as exc:
            env_name = f"{ENV_PREFIX}{exc.loc.split('.')[0].upper()}"
            origin = env_name if env_name in os.environ else str(path)
            raise ConfigError(f"config error in {origin}: {exc.loc}: {exc.msg}") from None
    refuse_loose_secret_file(path, data)
    known = {spec.name for spec in specs}
    unused = sorted(k for k in data if k in legacy)
    warnings = _unknown_key_warnings(path, [k for k in data if k not in known and k not in legacy], known)
    return ReadValues(values, path, bool(data) or os.path.exists(path), unused, warnings)


def refuse_loose_secret_file(path: Path, data: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` if the file holds a secret and others can read it.

    Only a secret in the file itself counts: one from ``DONEBELL_TOKEN`` leaves the file public.
    """
    from donebell.shared import platform
    from donebell.shared.config.rules import file_holds_secret

    if platform.on_windows() or not file_holds_secret(data) or not os.path.exists(path):
        return
    mode = os.stat(path).st_mode & 0o7777  # stat.S_IMODE without the import
    if mode & 0o077:
        raise ConfigError(
            f"config error in {path}: token/password: the file is readable by others (mode {mode:04o}); "
            f"run: chmod 600 {path}"
        )


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


def overridden(specs: Iterable[FieldSpec], names: Iterable[str], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (the file's content) with the named keys' ``DONEBELL_<KEY>`` values over it, nothing
    validated: for the reads that scrub secrets from output, which must work on a refused config too.
    A list variable that is not JSON is left out."""
    env, wanted, out = environment(), set(names), dict(data)
    for spec in specs:
        if spec.name in wanted:
            try:
                found, raw = env_value(spec, env)
            except EnvNotJson:
                continue
            if found:
                out[spec.name] = raw
    return out
