"""Every configuration reader gives the same value for the same raw input (issue 16: one normalizer).

The readers: pydantic-settings reading the raw file and environment itself (the reference,
tests/support/pydantic_config.py), the CLI's ``config.load``, the roles' ``view.load``,
and the hook's ``schema.read_keys`` (through ``HookContext``). One table of raw values,
each given in the file and as ``DONEBELL_<KEY>``; all readers must agree. A value the loaders
refuse reads as the key's default in the hook, which never fails the agent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.config import model, view
from donebell.shared.config.fields import FIELDS
from donebell.workers.kit.hook_context import HOOK_KEYS, HookContext
from support import pydantic_config
from support.hooks_harness import HookEnv, claude_event

SPECS = {spec.name: spec for spec in FIELDS}

#: (key, raw value in the file, the same as an environment string or None when it has no string form)
VALUES: list[tuple[str, Any, str | None]] = [
    ("include_message", 1, "1"),
    ("include_message", 0, "0"),
    ("include_message", True, "true"),
    ("include_message", "yes", "yes"),
    ("include_message", "on", "ON"),
    ("include_message", "off", "off"),
    ("include_message", 1.0, "t"),
    ("include_message", "maybe", "maybe"),
    ("include_message", 2, "2"),
    ("include_message", None, None),
    ("enable_claude_code", 0, "0"),
    ("enable_claude_code", "false", "false"),
    ("enable_claude_code", "n", "N"),
    ("enable_claude_code", 1, "1"),
    ("enable_claude_code", "nope", "nope"),
    ("origin", "lab-1", "lab-1"),
    ("origin", 5, None),
    ("origin", "", ""),
    ("chain_notify", ["notify-send", "x"], '["notify-send", "x"]'),
    ("chain_notify", None, "null"),
    ("chain_notify", "notify-send", "notify-send"),
    ("chain_notify", [1], "[1]"),
    ("chain_notify", [], "[]"),
    ("approvals_enabled", "on", "on"),
    ("approvals_enabled", "sometimes", "sometimes"),
    ("wake_enabled", 1, "1"),
    ("wake_enabled", [], "[]"),
    ("approval_wait_seconds", 30, "30"),
    ("approval_wait_seconds", "90.5", "90.5"),
    ("approval_wait_seconds", 4, "4"),
    ("approval_wait_seconds", 541, "541"),
    ("approval_wait_seconds", "soon", "soon"),
    ("approval_wait_interactive_seconds", 0, "0"),
    ("approval_wait_interactive_seconds", "12.5", "12.5"),
    ("approval_wait_interactive_seconds", 16, "16"),
    ("approval_wait_interactive_seconds", -1, "-1"),
]


@pytest.fixture()
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.lower().startswith("donebell_"):
            monkeypatch.delenv(name)
    path = tmp_path / "config.json"
    monkeypatch.setenv("DONEBELL_CONFIG", str(path))
    return path


def typed(value: Any) -> Any:
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def loader_values(loader: Any, path: Path) -> tuple[str, Any]:
    """("loaded", the hook keys' values) or ("refused", the one-line error)."""
    try:
        settings = loader(path).settings
    except model.ConfigError as exc:
        return ("refused", str(exc))
    return ("loaded", {key: typed(getattr(settings, key)) for key in HOOK_KEYS})


def hook_values() -> dict[str, Any]:
    context = HookContext("claude")
    values = {key: typed(context.config[key]) for key in HOOK_KEYS}
    values["(include_message)"] = context.include_message
    values["(claude_enabled)"] = context.claude_enabled
    return values


def expected_hook(reference: tuple[str, Any], key: str) -> dict[str, Any]:
    """What the hook must read: the loaders' values, or the key's default where they refuse it."""
    if reference[0] == "loaded":
        values = dict(reference[1])
    else:
        assert key in reference[1], reference  # refused for this key, not for something else
        values = {k: typed(SPECS[k].fresh_default()) for k in HOOK_KEYS}
    values["(include_message)"] = values["include_message"] == ("bool", True)
    values["(claude_enabled)"] = values["enable_claude_code"] == ("bool", True)
    return values


def assert_all_agree(path: Path, key: str) -> tuple[str, Any]:
    reference = loader_values(pydantic_config.load, path)
    assert loader_values(model.load, path) == reference  # the CLI
    assert loader_values(view.load, path) == reference  # role processes
    assert hook_values() == expected_hook(reference, key)  # hooks
    return reference


@pytest.mark.parametrize("key, file_value, env_value", VALUES, ids=[f"{k}={v!r}" for k, v, _ in VALUES])
def test_every_reader_agrees(
    cfg: Path, monkeypatch: pytest.MonkeyPatch, key: str, file_value: Any, env_value: str | None
) -> None:
    """One raw value, from the file and from DONEBELL_<KEY>: the CLI, the roles and the hook read the same."""
    cfg.write_text(json.dumps({key: file_value}), encoding="utf-8")
    cfg.chmod(0o600)
    from_file = assert_all_agree(cfg, key)
    if env_value is None:
        return
    cfg.write_text("{}", encoding="utf-8")
    monkeypatch.setenv(f"DONEBELL_{key.upper()}", env_value)
    from_env = assert_all_agree(cfg, key)
    if from_file[0] == from_env[0] == "loaded":
        assert from_env == from_file  # the string form means the same value


def test_table_covers_both_outcomes_for_every_hook_key(cfg: Path) -> None:
    """The table exercises a loaded and a refused value for each key the hook reads (so it cannot pass idly)."""
    seen: dict[str, set[str]] = {key: set() for key in HOOK_KEYS}
    for key, file_value, _ in VALUES:
        cfg.write_text(json.dumps({key: file_value}), encoding="utf-8")
        seen[key].add(loader_values(pydantic_config.load, cfg)[0])
    assert all(outcomes == {"loaded", "refused"} for outcomes in seen.values()), seen


def test_a_broken_file_reads_as_defaults_in_the_hook(cfg: Path) -> None:
    """Not JSON: the loaders refuse it, the hook reads every key's default and keeps working."""
    cfg.write_text("{include_message: 1", encoding="utf-8")
    assert loader_values(model.load, cfg)[0] == "refused"
    assert hook_values() == expected_hook(("refused", "include_message"), "include_message")


@pytest.mark.parametrize("where", ["file", "environment"])
def test_claude_hook_stores_the_message_with_include_message_1(tmp_path: Path, where: str) -> None:
    """The reported bug, end to end: `"include_message": 1` (or DONEBELL_INCLUDE_MESSAGE=1) makes the
    real Claude hook store the final message, as the CLI and the delivery role read it."""
    hooks = HookEnv(tmp_path)
    env: dict[str, str] = {}
    if where == "file":
        hooks.write_config(include_message=1)
    else:
        env["DONEBELL_INCLUDE_MESSAGE"] = "1"
    hooks.claude(claude_event("print-tool", "UserPromptSubmit"), **env)
    payload = {**claude_event("print-tool", "Stop"), "last_assistant_message": "all done"}
    hooks.claude(payload, **env)
    assert hooks.only("pending").get("last_message") == "all done"


@pytest.mark.parametrize("raw", [[{"label": "a", "prompt": "b"}], [], [1], [{"a": 1}], "x", [{"a": "b"}, None]])
def test_str_map_list_kind_matches_pydantic(raw: Any) -> None:
    """The normalizer's ``list[dict[str, str]]`` kind (the wake branch's wake_actions) refuses and
    accepts as pydantic does, with its location and message."""
    from donebell.shared.config.schema import FieldSpec, Invalid, normalize
    from pydantic import TypeAdapter, ValidationError

    spec = FieldSpec("k", "str_map_list", [], env_json="strict")
    try:
        expected: tuple[str, Any] = ("ok", TypeAdapter(list[dict[str, str]]).validate_python(raw))
    except ValidationError as exc:
        err = exc.errors()[0]
        expected = ("refused", (".".join(["k", *(str(p) for p in err["loc"])]), err["msg"]))
    try:
        got: tuple[str, Any] = ("ok", normalize(spec, raw))
    except Invalid as exc:
        got = ("refused", (exc.loc, exc.msg))
    assert got == expected
