"""The one schema and normalizer of configuration values: hooks, role processes and the CLI use it.

Each key is a :class:`FieldSpec` in the generated table :data:`donebell.shared.config.fields.FIELDS`
(rendered from :class:`donebell.shared.config.model.Settings` by ``python -m
tools.gen_settings_view``). :func:`normalize` turns one raw value (from the JSON file,
or :func:`env_value` of a ``DONEBELL_<KEY>`` string) into the value every reader sees, with pydantic's
lax coercions (:mod:`.settings_coerce`), bounds, choices and the shared rules (:mod:`.config_rules`);
it raises :class:`Invalid` otherwise.

* role processes and the CLI validate every key through :func:`donebell.shared.config.light.read_values`,
  which calls :func:`normalize` per key and refuses the config on the first invalid one; the CLI
  then hands the normalized values to pydantic (its edge), which must accept them unchanged;
* hooks call :func:`read_keys` for the few keys they need: the same normalization, but a missing
  or broken file counts as absent and an invalid value as its default (a hook never fails the
  agent; the worker's full validation reports the problem loudly).

Hook path module: no ``typing``, ``pathlib``, ``dataclasses`` or ``re`` at import
(tests/test_import_cost.py).
"""

from __future__ import annotations

import json
import os

from donebell.shared.config import coerce

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~2.5 ms of start-up: annotations only
    from collections.abc import Iterable
    from typing import Any

ENV_PREFIX = "DONEBELL_"
Invalid = coerce.Invalid


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
        rule: str | None = None,  # a key of config_rules.RULES
        before: str | None = None,  # a key of config_rules.BEFORE_RULES
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


def read_keys(
    specs: Iterable[FieldSpec], names: tuple[str, ...], refused: dict[str, str] | None = None
) -> dict[str, Any]:
    """The named keys, normalized, from the config file and the environment; never raises.

    The hook reader: a missing, unreadable or broken file counts as empty, and a key whose value
    is invalid reads as its default (see the module docstring); ``refused`` then gets the key and
    the loaders' reason, so the hook can say why it ignored it.
    """
    from donebell.shared.config.raw_file import ConfigFileError, read_object
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
