"""The roles' settings view equals the pydantic loader.

Role processes load ``shared/config/view.py`` (stdlib only) instead of the pydantic ``Settings``,
which the type checker reads in its place. These tests pin that both loaders agree on every key
and on a broad table of real config files and environments: the same values (types included), the
same warnings, the same refusals with the same one-line message; and that the view stands in for
the model where role code reads it. The field table's staleness is in
test_config_fields_generator.py, lax coercions in test_settings_view_coercions.py, secrets in
test_settings_view_secrets.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import pytest
from donebell.shared.config import model as config
from donebell.shared.config import schema
from donebell.shared.config import view as settings_view
from donebell.shared.config.model import Settings
from support.settings_parity import assert_same, private_config, typed, write

# --- parity -----------------------------------------------------------------------------------


@pytest.fixture()
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config path in a private folder, with no DONEBELL_* variable of the developer's shell."""
    return private_config(tmp_path, monkeypatch)


#: Per kind: a valid non-default value as the file holds it, and the same as an environment string.
VALID: dict[str, tuple[Any, Any]] = {
    "str": ("host-a", "host-a"),
    "int": (4, "4"),
    "float": (1.5, "1.5"),
    "bool": (None, None),  # the opposite of the default, see valid_value
    "choice": ("balanced", "balanced"),
    "str_list": (["a", "b"], '["a", "b"]'),
    "watch_roots": (["/srv/a", {"path": "/srv/b", "origin": "lab"}], '["/srv/a", {"path": "/srv/b", "origin": "lab"}]'),
    "secret": ("s3cret-value", "s3cret-value"),
    "str_map_list": ([{"label": "Go", "prompt": "go on"}], '[{"label": "Go", "prompt": "go on"}]'),
}
#: Per kind: a value both loaders must refuse (file form, environment form).
INVALID: dict[str, tuple[Any, Any]] = {
    "str": (5, None),  # any string is a valid string in the environment
    "int": ("four", "four"),
    "float": ("soon", "soon"),
    "bool": ("maybe", "maybe"),
    "choice": ("eager", "eager"),
    "str_list": ([1], "a,b"),
    "watch_roots": ([{"origin": "x"}], "/srv/a"),
    "secret": (5, None),
    "str_map_list": ([{"label": 5, "prompt": "x"}], '["x"]'),
}
SPECIAL_VALID: dict[str, tuple[Any, Any]] = {
    "server": ("http://ntfy.local/", "http://ntfy.local/"),
    "topic": ("abc-123", "abc-123"),
    "wake_topic": ("abc-123", "abc-123"),
    "quiet_hours": ("22:00-07:30", "22:00-07:30"),
    "quiet_hours_tz": ("Europe/Berlin", "Europe/Berlin"),
    "quiet_hours_mode": ("silent", "silent"),
    "approval_wait_seconds": (60, "60"),  # 5..540: the generic 4 is below the floor
}
SPECIAL_INVALID: dict[str, tuple[Any, Any]] = {
    "server": ("ftp://x", "ftp://x"),
    "topic": ("a b", "a b"),
    "wake_topic": ("a b", "a b"),
    "quiet_hours": ("22:00", "25:00-07:00"),
    "quiet_hours_tz": ("Mars/Olympus", "Mars/Olympus"),
}


def valid_value(spec: schema.FieldSpec) -> tuple[Any, Any]:
    if spec.name in SPECIAL_VALID:
        return SPECIAL_VALID[spec.name]
    if spec.kind == "bool":
        return (not spec.default, "false" if spec.default else "yes")
    return VALID[spec.kind]


@pytest.mark.parametrize("spec", settings_view.FIELDS, ids=lambda s: s.name)
def test_every_key_from_file_and_environment(
    cfg: Path, monkeypatch: pytest.MonkeyPatch, spec: schema.FieldSpec
) -> None:
    """Each key: a valid and an invalid value, from the file and from DONEBELL_<KEY>, give the same result."""
    file_value, env_value = valid_value(spec)
    write(cfg, {spec.name: file_value})
    loaded = assert_same(cfg, "loaded")
    assert loaded[1][spec.name] != typed(spec.default)  # the value took effect
    write(cfg, {"topic": "t"})
    monkeypatch.setenv(f"DONEBELL_{spec.name.upper()}", env_value)
    assert_same(cfg, "loaded")
    bad_file, bad_env = SPECIAL_INVALID.get(spec.name, INVALID[spec.kind])
    if bad_env is not None:
        monkeypatch.setenv(f"DONEBELL_{spec.name.upper()}", bad_env)
        refused = assert_same(cfg, "refused")
        assert f"DONEBELL_{spec.name.upper()}" in refused[1]
    monkeypatch.delenv(f"DONEBELL_{spec.name.upper()}")
    write(cfg, {spec.name: bad_file})
    refused = assert_same(cfg, "refused")
    assert str(cfg) in refused[1] and spec.name in refused[1]


CASES: list[tuple[str, Any, dict[str, str], Literal["loaded", "refused"]]] = [
    ("no file", None, {}, "loaded"),
    ("empty object", {}, {}, "loaded"),
    ("BOM", "\ufeff" + json.dumps({"topic": "bom"}), {}, "loaded"),
    ("not JSON", "{topic: x", {}, "refused"),
    ("top-level list", "[1, 2]", {}, "refused"),
    ("legacy keys", {"topic": "t", "goal_poll_seconds": 5, "worker_sqlite_path": "/x"}, {}, "loaded"),
    ("unknown keys", {"topic": "t", "topc": "x", "zzz_unrelated": 1}, {}, "loaded"),
    ("mode off", {"idle_detection_mode": "off"}, {}, "loaded"),
    ("mode unknown", {"idle_detection_mode": "Strict"}, {}, "refused"),
    ("negative seconds", {"idle_grace_seconds": -1}, {}, "refused"),
    ("zero where > 0", {"watch_scan_seconds": 0}, {}, "refused"),
    ("NaN seconds", '{"idle_grace_seconds": NaN}', {}, "refused"),
    ("infinite seconds", '{"idle_grace_seconds": Infinity}', {}, "refused"),  # never finishes waiting (issue 26.7)
    ("priority 0", {"priority": 0}, {}, "refused"),
    ("priority 6", {"priority": 6}, {}, "refused"),
    ("priority 5.0", {"priority": 5.0}, {}, "loaded"),
    ("priority 2.5", {"priority": 2.5}, {}, "refused"),
    ("topic too long", {"topic": "x" * 65}, {}, "refused"),
    ("topic 64", {"topic": "x" * 64}, {}, "loaded"),
    ("server trailing slashes", {"server": "https://ntfy.example///"}, {}, "loaded"),
    ("two bad keys: first in model order", {"max_attempts": -1, "topic": "a b"}, {}, "refused"),
    ("env beats a bad file value", {"priority": 9}, {"DONEBELL_PRIORITY": "2"}, "loaded"),
    ("env beats a good file value", {"topic": "file"}, {"DONEBELL_TOPIC": "env"}, "loaded"),
    ("lower-case variable", {}, {"donebell_topic": "lower"}, "loaded"),
    ("empty string variable", {}, {"DONEBELL_TOPIC": "", "DONEBELL_USERNAME": ""}, "loaded"),
    ("empty number variable", {}, {"DONEBELL_IDLE_GRACE_SECONDS": ""}, "refused"),
    ("empty list variable", {}, {"DONEBELL_TAGS": ""}, "refused"),
    ("null optional list variable", {"chain_notify": ["x"]}, {"DONEBELL_CHAIN_NOTIFY": "null"}, "loaded"),
    ("plain optional list variable", {}, {"DONEBELL_CHAIN_NOTIFY": "notify-send"}, "refused"),
    ("JSON string for a list", {}, {"DONEBELL_CHAIN_NOTIFY": '"a"'}, "refused"),
    ("comma-separated tags", {"tags": "warning, skull,,"}, {}, "loaded"),
    ("comma-separated tags variable", {}, {"DONEBELL_TAGS": '"warning,skull"'}, "loaded"),
    ("tags a number", {"tags": 5}, {}, "refused"),
    ("variable 'null' for a secret", {}, {"DONEBELL_TOKEN": "null"}, "loaded"),
    ("numeric-looking topic variable", {}, {"DONEBELL_TOPIC": "123", "DONEBELL_ORIGIN": "true"}, "loaded"),
    (
        "watch_roots strings and objects",
        {"watch_roots": ["/a", {"path": "/b", "origin": "o", "sqlite_path": "/b/s.sqlite", "x": 1}]},
        {},
        "loaded",
    ),
    ("watch_roots object without path", {"watch_roots": ["/a", {"origin": "o"}]}, {}, "refused"),
    ("watch_roots object with a number", {"watch_roots": [{"path": "/a", "origin": 5}]}, {}, "refused"),
    ("watch_roots not a list", {"watch_roots": "/a"}, {}, "refused"),
    ("watch_roots null origin", {"watch_roots": [{"path": "/a", "origin": None}]}, {}, "loaded"),
    ("watch_roots variable", {}, {"DONEBELL_WATCH_ROOTS": ' [{"path": "/w", "sqlite_path": "/w/db"}] '}, "loaded"),
    ("watch_roots variable object", {}, {"DONEBELL_WATCH_ROOTS": '{"path": "/w"}'}, "refused"),
    ("tags tuple-free list", {"tags": []}, {}, "loaded"),
    ("wake_actions four buttons", {"wake_actions": [{"label": "a", "prompt": "b"}] * 4}, {}, "refused"),
    ("wake_actions without a prompt", {"wake_actions": [{"label": "a"}]}, {}, "refused"),
    ("wake_actions blank label", {"wake_actions": [{"label": " ", "prompt": "p"}]}, {}, "refused"),
    ("wake_actions empty", {"wake_actions": []}, {}, "loaded"),
    # issue 34 item 9: a prompt no agent can be started with is refused at load, not every 5 s
    ("wake_actions prompt with a NUL", {"wake_actions": [{"label": "a", "prompt": "go\u0000on"}]}, {}, "refused"),
    (
        "wake_actions prompt over 128 KiB",
        {"wake_actions": [{"label": "a", "prompt": "p" * (128 << 10)}]},
        {},
        "refused",
    ),
    (
        "wake_actions prompt just under 128 KiB",
        {"wake_actions": [{"label": "a", "prompt": "p" * ((128 << 10) - 1)}]},
        {},
        "loaded",
    ),
    ("tags with a number", {"tags": ["a", 5]}, {}, "refused"),
    ("chain_notify null", {"chain_notify": None}, {}, "loaded"),
    ("username null", {"username": None}, {}, "loaded"),
    ("topic null", {"topic": None}, {}, "refused"),
    ("empty token", {"token": ""}, {}, "loaded"),
    # issue 15: values that used to load and then failed at the first delivery
    ("server with an unclosed IPv6 bracket", {"server": "http://[::1"}, {}, "refused"),
    ("server with a trailing newline", {"server": "https://ntfy.example\n"}, {}, "refused"),
    ("server variable with a trailing newline", {}, {"DONEBELL_SERVER": "https://ntfy.example\n"}, "refused"),
    ("server port 99999", {"server": "http://127.0.0.1:99999"}, {}, "refused"),
    ("server port 0", {"server": "http://127.0.0.1:0"}, {}, "refused"),
    ("server port not a number", {"server": "http://127.0.0.1:8o"}, {}, "refused"),
    ("server without a host", {"server": "https://"}, {}, "refused"),
    ("server with a query", {"server": "https://ntfy.example/?x=1"}, {}, "refused"),
    ("server IPv6 with port", {"server": "http://[::1]:8080/ntfy"}, {}, "loaded"),
    ("server with user-info", {"server": "https://u:p@ntfy.example"}, {}, "loaded"),
    ("token with a trailing newline", {"token": "tk_abc\n"}, {}, "refused"),
    ("token variable with a trailing newline", {}, {"DONEBELL_TOKEN": "tk_abc\n"}, "refused"),
    ("token with a space", {"token": "tk abc"}, {}, "refused"),
    ("token not ASCII", {"token": "tk_\u00e9t\u00e9"}, {}, "refused"),
    ("password with a trailing newline", {"username": "u", "password": "pw\n"}, {}, "refused"),
    ("password with inner space and accents", {"username": "u", "password": "p\u00e4ss w\u00f6rd"}, {}, "loaded"),
    ("username with a colon", {"username": "u:x", "password": "pw"}, {}, "refused"),
    ("username with a tab", {"username": "u\t", "password": "pw"}, {}, "refused"),
]


@pytest.mark.parametrize("name, data, env, expect", CASES, ids=[c[0] for c in CASES])
def test_both_loaders_agree(
    cfg: Path, monkeypatch: pytest.MonkeyPatch, name: str, data: Any, env: dict[str, str], expect: str
) -> None:
    """Files, variables, legacy and unknown keys, watch_roots forms and refusals give the same outcome."""
    if data is not None:
        write(cfg, data)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert_same(cfg, expect)


def test_one_error_class_for_both_loaders() -> None:
    """`except config.ConfigError` catches the view's refusals (callers need not know which loader ran)."""
    assert settings_view.ConfigError is config.ConfigError is schema.ConfigError


def test_both_settings_types_read_alike(cfg: Path) -> None:
    """Attribute access, secrets and watch root entries read the same in the model and the view."""
    write(cfg, {"topic": "t", "token": "tok", "watch_roots": ["/a", {"path": "/b", "origin": "o"}]})
    readers: list[settings_view.SettingsLike] = [config.load(cfg).settings, settings_view.load(cfg).settings]
    assert isinstance(readers[1], settings_view.SettingsView)  # the view stands in for the model
    for settings in readers:
        assert settings.topic == "t" and settings.token is not None and settings.token.get_secret_value() == "tok"
        first, second = settings.watch_roots
        assert first == "/a" and not isinstance(second, str) and (second.path, second.origin) == ("/b", "o")
        assert second.sqlite_path is None
        assert settings.model_dump(mode="json")["token"] == "**********"


def test_view_is_frozen_and_defaults_match_the_model() -> None:
    """A default-built view holds exactly the model's keys and defaults, and cannot be changed by accident."""
    view = settings_view.SettingsView()
    assert list(vars(view)) == list(Settings.model_fields)
    assert typed(view.model_dump(mode="json")) == typed(Settings.model_validate({}).model_dump(mode="json"))
    with pytest.raises(AttributeError):
        view.topic = "changed"
    assert view.model_dump()["tags"] is not settings_view.SettingsView().model_dump()["tags"]  # no shared default
    with pytest.raises(TypeError, match="topc"):
        settings_view.SettingsView(topc="x")


#: What role code may call on its settings besides the keys: the model methods the view implements.
VIEW_METHODS = {"model_dump", "redacted"}


def test_role_code_reads_only_what_the_view_holds() -> None:
    """The type checker reads role settings as the pydantic model, so it would let a role call a
    model method the view lacks: every ``settings.<name>`` under workers/ is a key or a view method
    (Claude Code's ``settings.json``, which its install and doctor edit and read, is a file)."""
    workers = Path(__file__).resolve().parents[1] / "workers"
    used = {
        name
        for module in workers.rglob("*.py")
        for name in re.findall(r"(?<![\"'`/])\bsettings\.(?!json\b)(\w+)", module.read_text(encoding="utf-8"))
    }
    assert len(used) > 20  # the scan sees the roles' reads
    assert used - set(Settings.model_fields) - VIEW_METHODS == set()
    view = settings_view.SettingsView()
    assert all(callable(getattr(view, name)) for name in VIEW_METHODS)
