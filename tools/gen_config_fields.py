"""Generate ``shared/config/fields.py``, the field table every configuration reader normalizes with.

    python -m tools.gen_config_fields          # rewrite the table
    python -m tools.gen_config_fields --check  # exit 1 if it is out of date

:class:`donebell.shared.config.model.Settings` stays the single source of every key, type, default,
bound and rule; hooks and role processes cannot import it (pydantic costs the hook its start-up
budget and each role ~16-24 MiB of resident memory), so they read this table: one ``FieldSpec``
per key, importable on the hook path. The generator refuses a model it cannot reproduce exactly
(a new type, constraint, validator or setting source), so a model change either regenerates
cleanly or fails loudly here; ``tests/test_config_fields_generator.py`` fails when the committed
table is stale, and ``tests/test_settings_view.py`` checks that the readers accept, refuse and
produce what pydantic does.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
from donebell.shared.config import schema
from donebell.shared.config.model import LEGACY_UNUSED_KEYS, Settings, WatchRoot
from donebell.shared.config.rules import BEFORE_RULES, RULES, SECRET_KEYS
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from tools.generated import write_or_check

MODULE = Path(__file__).resolve().parent.parent / "shared" / "config" / "fields.py"

#: model_config entries the view's loader assumes (anything else changes where values come from).
EXPECTED_CONFIG = {
    "env_prefix": schema.ENV_PREFIX,
    "case_sensitive": False,
    "extra": "ignore",
    "env_nested_delimiter": None,
    "env_ignore_empty": False,
    "env_parse_none_str": None,
    "env_file": None,
    "secrets_dir": None,
    "enable_decoding": True,
    "allow_inf_nan": False,  # coerce.number refuses inf and nan as the model does
}
_BOUNDS = {annotated_types.Ge: "ge", annotated_types.Gt: "gt", annotated_types.Le: "le", annotated_types.Lt: "lt"}
_SCALARS = {str: "str", int: "int", float: "float", bool: "bool"}


class UnsupportedModel(Exception):
    """The model uses something the normalizer cannot reproduce: extend shared/config/schema.py first."""


class Kind(typing.NamedTuple):
    """How the normalizer validates one field."""

    kind: str
    optional: bool = False
    env_json: str | None = None
    choices: tuple[str, ...] = ()


def kind_of(name: str, annotation: Any) -> Kind:
    """The engine kind of a field annotation; raises :class:`UnsupportedModel` for anything else."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        inner = kind_of(name, next(a for a in args if a is not type(None)))
        # pydantic-settings: a union holding a list may take an undecodable string (then refused)
        env_json = "lenient" if inner.env_json else None
        return inner._replace(optional=True, env_json=env_json)
    if annotation in _SCALARS:
        return Kind(_SCALARS[annotation])
    if annotation is SecretStr:
        return Kind("secret")
    if origin is typing.Literal and all(isinstance(a, str) for a in args):
        return Kind("choice", choices=tuple(args))
    if origin is list and args == (str,):
        return Kind("str_list", env_json="strict")
    if origin is list and args == (dict[str, str],):
        return Kind("str_map_list", env_json="strict")
    if origin is list and len(args) == 1 and set(typing.get_args(args[0])) == {str, WatchRoot}:
        check_watch_root_model()
        return Kind("watch_roots", env_json="strict")
    raise UnsupportedModel(f"{name}: the normalizer has no kind for {annotation!r}")


def check_watch_root_model() -> None:
    """``schema.watch_root`` and ``view.WatchRootEntry`` know the pydantic ``WatchRoot``'s three keys."""
    shape = {n: (i.annotation, i.is_required(), i.default) for n, i in WatchRoot.model_fields.items()}
    expected = {"path": (str, True, PydanticUndefined), "origin": (str | None, False, None)}
    expected["sqlite_path"] = (str | None, False, None)
    if shape != expected or WatchRoot.model_config.get("extra", "ignore") != "ignore":
        raise UnsupportedModel(f"WatchRoot changed ({shape}): update view.WatchRootEntry and schema.watch_root")


def default_of(name: str, info: FieldInfo) -> Any:
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        raise UnsupportedModel(f"{name}: a required key (no default) is not supported")
    else:
        value = info.default
    if not _literal(value):
        raise UnsupportedModel(f"{name}: default {value!r} is not a plain JSON value")
    return value


def _literal(value: Any) -> bool:
    if isinstance(value, list):
        return all(_literal(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _literal(v) for k, v in value.items())
    return value is None or isinstance(value, str | int | float | bool)


def bounds_of(name: str, info: FieldInfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in info.metadata:
        attr = _BOUNDS.get(type(item))
        if attr is None:
            raise UnsupportedModel(f"{name}: constraint {item!r} is not supported by the normalizer")
        out[attr] = getattr(item, attr)
    return out


def rules_of(model: type[Settings]) -> dict[str, dict[str, str]]:
    """``{"after": field -> rule, "before": field -> rule}``; each model validator must delegate
    to the rule of the same field in the table of its mode."""
    decorators = model.__pydantic_decorators__
    for kind in ("validators", "root_validators", "model_validators", "field_serializers", "model_serializers"):
        if getattr(decorators, kind):
            raise UnsupportedModel(f"the normalizer cannot reproduce the model's {kind}")
    tables = {"after": RULES, "before": BEFORE_RULES}
    rules: dict[str, dict[str, str]] = {"after": {}, "before": {}}
    for name, dec in decorators.field_validators.items():
        for field_name in dec.info.fields:
            table = tables.get(dec.info.mode, {})
            rule = table.get(field_name)
            code = getattr(dec.func, "__func__", dec.func).__code__
            if rule is None or rule.__name__ not in code.co_names:
                raise UnsupportedModel(
                    f"validator {name} of {field_name}: make it an 'after' (or 'before') validator calling "
                    f"rules.RULES[{field_name!r}] (BEFORE_RULES) so every reader shares one rule"
                )
            rules[dec.info.mode][field_name] = field_name
    return rules


def check_config(model: type[Settings]) -> None:
    for key, expected in EXPECTED_CONFIG.items():
        if model.model_config.get(key) != expected:
            raise UnsupportedModel(f"model_config[{key!r}] is {model.model_config.get(key)!r}, not {expected!r}")


DOCSTRING = '''\
"""GENERATED by `python -m tools.gen_config_fields` from donebell.shared.config.model.Settings.
Do not edit by hand: change the model and regenerate (tests/test_config_fields_generator.py checks it).

The field table every configuration reader normalizes with (:mod:`donebell.shared.config.schema`):
hooks, role processes (:mod:`donebell.shared.config.view`) and the CLI (:mod:`donebell.shared.config.model`).
Hook path module: it imports nothing but the schema.
"""

from __future__ import annotations

from donebell.shared.config.schema import FieldSpec

'''


def lit(value: Any) -> str:
    """A Python literal for a plain JSON value, strings in double quotes."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(lit(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in value.items()) + "}"
    return repr(value)


def render(model: type[Settings] = Settings) -> str:
    """The text of ``shared/config/fields.py`` for ``model``."""
    check_config(model)
    rules = rules_of(model)
    specs, secrets = [], []
    for name, info in model.model_fields.items():
        kind = kind_of(name, info.annotation)
        default = default_of(name, info)
        if default is None and not kind.optional:
            raise UnsupportedModel(f"{name}: default None needs an optional type")
        args = [lit(name), lit(kind.kind), lit(default)]
        extras: dict[str, Any] = {"optional": kind.optional or None, **bounds_of(name, info)}
        extras.update(choices=kind.choices or None, rule=rules["after"].get(name), env_json=kind.env_json)
        extras.update(before=rules["before"].get(name))
        args += [f"{k}={lit(v)}" for k, v in extras.items() if v is not None]
        specs.append(f"    FieldSpec({', '.join(args)}),\n")
        secrets += [name] if kind.kind == "secret" else []
    if tuple(secrets) != SECRET_KEYS:  # the loose-file refusal and the scrubbing of output read that list
        raise UnsupportedModel(f"rules.SECRET_KEYS must name the secret keys, in order: {secrets}")
    legacy = "".join(f"        {lit(k)},\n" for k in sorted(LEGACY_UNUSED_KEYS))
    return "".join(
        [
            DOCSTRING,
            "#: Keys of the reference notifier's ``ntfy-config.json`` that donebell accepts but does not use.\n",
            f"LEGACY_UNUSED_KEYS = frozenset(\n    {{\n{legacy}    }}\n)\n\n",
            "#: Every key in the model's order (errors are reported for the first bad key in this order).\n",
            "FIELDS: tuple[FieldSpec, ...] = (\n",
            *specs,
            ")\n",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Write (or ``--check``) the table."""
    return write_or_check("gen_config_fields", __doc__, MODULE, render, argv)


if __name__ == "__main__":
    sys.exit(main())
