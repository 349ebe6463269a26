"""Generate ``shared/config/fields.py`` (the field table of every reader) and ``shared/config/view.py``
(the pydantic-free settings of role processes) from the model.

    python -m tools.gen_settings_view          # rewrite both modules
    python -m tools.gen_settings_view --check  # exit 1 if one is out of date

:class:`donebell.shared.config.model.Settings` stays the single source of every key, type, default,
bound and rule; role processes load the generated view instead, because importing pydantic and
pydantic-settings costs each of them ~16-24 MiB of resident memory (the target: <= 35 MiB a process).
The generator refuses a model it cannot mirror exactly (a new type, constraint, validator or
setting source), so a model change either regenerates cleanly or fails loudly here;
``tests/test_settings_view_generator.py`` fails when the committed module is stale, and
``tests/test_settings_view.py`` checks that both loaders accept, refuse and produce the same things.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
from donebell.shared.config import raw_file
from donebell.shared.config.light import BEFORE_RULES, RULES
from donebell.shared.config.model import LEGACY_UNUSED_KEYS, Settings, WatchRoot
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from tools.generated import write_or_check

MODULE = Path(__file__).resolve().parent.parent / "shared" / "config" / "view.py"
#: The field table itself, importable by the hook path (no typing, pathlib or dataclasses).
FIELDS_MODULE = MODULE.with_name("fields.py")

#: model_config entries the view's loader assumes (anything else changes where values come from).
EXPECTED_CONFIG = {
    "env_prefix": raw_file.ENV_PREFIX,
    "case_sensitive": False,
    "extra": "ignore",
    "env_nested_delimiter": None,
    "env_ignore_empty": False,
    "env_parse_none_str": None,
    "env_file": None,
    "secrets_dir": None,
    "enable_decoding": True,
    "allow_inf_nan": False,  # settings_coerce.number refuses inf and nan as the model does
}
_BOUNDS = {annotated_types.Ge: "ge", annotated_types.Gt: "gt", annotated_types.Le: "le", annotated_types.Lt: "lt"}
_SCALARS = {str: "str", int: "int", float: "float", bool: "bool"}


class UnsupportedModel(Exception):
    """The model uses something the light view cannot reproduce: extend settings_light first."""


class Kind(typing.NamedTuple):
    """How one field is typed in the view, in the protocol, and validated by the engine."""

    kind: str
    view: str
    protocol: str
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
        return inner._replace(
            view=f"{inner.view} | None", protocol=f"{inner.protocol} | None", optional=True, env_json=env_json
        )
    if annotation in _SCALARS:
        return Kind(_SCALARS[annotation], annotation.__name__, annotation.__name__)
    if annotation is SecretStr:
        return Kind("secret", "Secret", "SecretLike")
    if origin is typing.Literal and all(isinstance(a, str) for a in args):
        text = "Literal[" + ", ".join(lit(a) for a in args) + "]"
        return Kind("choice", text, text, choices=tuple(args))
    if origin is list and args == (str,):
        return Kind("str_list", "list[str]", "list[str]", env_json="strict")
    if origin is list and args == (dict[str, str],):
        return Kind("str_map_list", "list[dict[str, str]]", "list[dict[str, str]]", env_json="strict")
    if origin is list and len(args) == 1 and set(typing.get_args(args[0])) == {str, WatchRoot}:
        check_watch_root_model()
        return Kind("watch_roots", "list[str | WatchRootEntry]", "Sequence[str | WatchRootLike]", env_json="strict")
    raise UnsupportedModel(f"{name}: the settings view has no kind for {annotation!r}")


def check_watch_root_model() -> None:
    """``WatchRootEntry`` (hand-written in settings_light) must mirror the pydantic ``WatchRoot``."""
    shape = {n: (i.annotation, i.is_required(), i.default) for n, i in WatchRoot.model_fields.items()}
    expected = {"path": (str, True, PydanticUndefined), "origin": (str | None, False, None)}
    expected["sqlite_path"] = (str | None, False, None)
    if shape != expected or WatchRoot.model_config.get("extra", "ignore") != "ignore":
        raise UnsupportedModel(
            f"WatchRoot changed ({shape}): update settings_light.WatchRootEntry and config_schema.watch_root"
        )


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
            raise UnsupportedModel(f"{name}: constraint {item!r} is not supported by the settings view")
        out[attr] = getattr(item, attr)
    return out


def rules_of(model: type[Settings]) -> dict[str, dict[str, str]]:
    """``{"after": field -> rule, "before": field -> rule}``; each model validator must delegate
    to the rule of the same field in the table of its mode."""
    decorators = model.__pydantic_decorators__
    for kind in ("validators", "root_validators", "model_validators", "field_serializers", "model_serializers"):
        if getattr(decorators, kind):
            raise UnsupportedModel(f"the settings view cannot mirror the model's {kind}")
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
                    f"settings_light.RULES[{field_name!r}] (BEFORE_RULES) so both loaders share one rule"
                )
            rules[dec.info.mode][field_name] = field_name
    return rules


def check_config(model: type[Settings]) -> None:
    for key, expected in EXPECTED_CONFIG.items():
        if model.model_config.get(key) != expected:
            raise UnsupportedModel(f"model_config[{key!r}] is {model.model_config.get(key)!r}, not {expected!r}")


DOCSTRING = '''\
"""GENERATED by `python -m tools.gen_settings_view` from donebell.shared.config.model.Settings.
Do not edit by hand: change the model and regenerate (tests/test_settings_view_generator.py checks it).

The configuration of role processes, without pydantic: :func:`load` reads the same file and the
same ``DONEBELL_<KEY>`` overrides as :func:`donebell.shared.config.model.load`, accepts and refuses the
same values with the same one-line :class:`ConfigError`, and returns a frozen :class:`SettingsView`
(secrets as :class:`Secret`, masked when printed). Code that only reads settings annotates with
:class:`SettingsLike`, which the pydantic ``Settings`` and :class:`SettingsView` both satisfy.
"""

from __future__ import annotations

'''

ENGINE_IMPORTS = """
from donebell.shared.config.fields import FIELDS, LEGACY_UNUSED_KEYS
from donebell.shared.config.light import (
    ConfigError,
    Secret,
    SecretLike,
    SettingsViewBase,
    WatchRootEntry,
    WatchRootLike,
    read_values,
)

__all__ = [
    "FIELDS",
    "LEGACY_UNUSED_KEYS",
    "ConfigError",
    "LoadedView",
    "Secret",
    "SecretLike",
    "SettingsLike",
    "SettingsView",
    "WatchRootEntry",
    "WatchRootLike",
    "load",
]

"""


def stdlib_imports(uses_sequence: bool, uses_literal: bool) -> str:
    """The standard-library imports, only those the rendered annotations use (ruff: no unused import)."""
    lines = ["from collections.abc import Sequence\n"] if uses_sequence else []
    lines += ["from dataclasses import dataclass, field\n", "from pathlib import Path\n"]
    lines.append(f"from typing import Any, {'Literal, ' if uses_literal else ''}Protocol\n")
    return "".join(lines)


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


FOOTER = '''

@dataclass(frozen=True)
class LoadedView:
    """A loaded configuration plus what ``config check`` reports about it."""

    settings: SettingsView
    path: Path
    exists: bool
    unused_legacy: list[str]
    warnings: list[str]


def load(path: Path | None = None) -> LoadedView:
    """Load and validate; raise :class:`ConfigError` with one clear line on any problem."""
    raw = read_values(FIELDS, LEGACY_UNUSED_KEYS, path)
    return LoadedView(SettingsView(**raw.values), raw.path, raw.exists, raw.unused_legacy, raw.warnings)
'''


FIELDS_DOCSTRING = '''\
"""GENERATED by `python -m tools.gen_settings_view` from donebell.shared.config.model.Settings.
Do not edit by hand: change the model and regenerate (tests/test_settings_view_generator.py checks it).

The field table every configuration reader normalizes with (:mod:`donebell.shared.config.schema`):
hooks, role processes (:mod:`donebell.shared.config.view`) and the CLI (:mod:`donebell.shared.config.model`).
Hook path module: it imports nothing but the schema.
"""

from __future__ import annotations

from donebell.shared.config.schema import FieldSpec

'''


def render_fields(model: type[Settings] = Settings) -> str:
    """The text of ``shared/config/fields.py`` for ``model``: the schema every reader uses."""
    return FIELDS_DOCSTRING + _render(model)[1]


def render(model: type[Settings] = Settings) -> str:
    """The text of ``shared/config/view.py`` for ``model``."""
    return _render(model)[0]


def _render(model: type[Settings]) -> tuple[str, str]:
    """``(settings_view text, config_fields table)`` for ``model``."""
    check_config(model)
    rules = rules_of(model)
    specs, protocol, view = [], [], []
    uses_literal = uses_sequence = False
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
        protocol.append(f"    @property\n    def {name}(self) -> {kind.protocol}: ...\n")
        value = lit(default)
        if isinstance(default, list):
            value = f"field(default_factory={'lambda: ' + value if default else 'list'})"
        if info.description:
            view.append(f"    #: {info.description}\n")
        view.append(f"    {name}: {kind.view} = {value}\n")
        uses_literal |= kind.kind == "choice"
        uses_sequence |= "Sequence[" in kind.protocol
    legacy = "".join(f"        {lit(k)},\n" for k in sorted(LEGACY_UNUSED_KEYS))
    table = "".join(
        [
            "#: Keys of the reference notifier's ``ntfy-config.json`` that donebell accepts but does not use.\n",
            f"LEGACY_UNUSED_KEYS = frozenset(\n    {{\n{legacy}    }}\n)\n\n",
            "#: Every key in the model's order (errors are reported for the first bad key in this order).\n",
            "FIELDS: tuple[FieldSpec, ...] = (\n",
            *specs,
            ")\n",
        ]
    )
    view_text = "".join(
        [
            DOCSTRING,
            stdlib_imports(uses_sequence, uses_literal),
            ENGINE_IMPORTS,
            "\nclass SettingsLike(Protocol):\n",
            '    """What code that only reads settings relies on (pydantic ``Settings`` and ``SettingsView`` fit)."""\n\n',
            "\n".join(protocol),
            '\n    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:\n',
            '        """Every key; in ``json`` mode secrets are masked and watch root objects are dicts."""\n',
            "        ...\n",
            "\n\n@dataclass(frozen=True)\n",
            "class SettingsView(SettingsViewBase):\n",
            '    """Every configuration key (validated only when built by :func:`load`)."""\n\n',
            *view,
            FOOTER,
        ]
    )
    return view_text, table


def main(argv: list[str] | None = None) -> int:
    """Write (or ``--check``) both modules; ``--output`` names the view, the table goes beside it."""
    args = list(sys.argv[1:] if argv is None else argv)
    view_rc = write_or_check("gen_settings_view", __doc__, MODULE, render, args)
    fields_args = [a for a in args if a == "--check"]
    if "--output" in args:
        fields_args += ["--output", str(Path(args[args.index("--output") + 1]).with_name(FIELDS_MODULE.name))]
    return max(view_rc, write_or_check("gen_settings_view", __doc__, FIELDS_MODULE, render_fields, fields_args))


if __name__ == "__main__":
    sys.exit(main())
