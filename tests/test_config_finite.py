"""Every numeric key refuses non-finite and out-of-range values before anything runs (issue 26 item 7).

``wake_ticket_ttl_seconds: 1e309`` (JSON reads it as infinity) or ``DONEBELL_..._SECONDS=inf``
passed ``config check`` and then overflowed a date at render time: every notification was
dead-lettered. Both loaders (the pydantic model of the CLI and the view of role processes)
and the hook reader must refuse them with the same one line, and ``config set`` without a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.shared.config import model, schema, view
from donebell.shared.config.fields import FIELDS
from donebell.shared.config.model import MAX_SECONDS, Settings
from donebell.workers.wake.actions import wake_actions
from support.delivery_kit import THREAD, Env, outbox_record
from support.settings_parity import assert_same, private_config, write

pytestmark = pytest.mark.usefixtures("no_outside_config")

NUMERIC = [spec.name for spec in FIELDS if spec.kind in ("int", "float")]
#: Raw text of the JSON file (1e309 and NaN are what a careless edit writes) and env strings.
FILE_VALUES = ["1e309", "-1e309", "NaN", "Infinity", "-Infinity", "1e300", '"inf"', '"nan"']
ENV_VALUES = ["inf", "-inf", "nan", "Infinity", "1e309", "1e300"]


@pytest.fixture()
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return private_config(tmp_path, monkeypatch)


@pytest.mark.parametrize("key", NUMERIC)
def test_every_numeric_key_refuses_non_finite_and_huge_values_in_both_loaders(
    cfg: Path, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    for raw in FILE_VALUES:
        write(cfg, f'{{"{key}": {raw}}}')
        reference = assert_same(cfg, "refused")
        assert key in reference[1], (raw, reference)
    write(cfg, {})
    for raw in ENV_VALUES:
        monkeypatch.setenv(f"DONEBELL_{key.upper()}", raw)
        reference = assert_same(cfg, "refused")
        assert key in reference[1], (raw, reference)
        monkeypatch.delenv(f"DONEBELL_{key.upper()}")


def test_the_hook_reader_takes_the_default_for_a_non_finite_value(cfg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DONEBELL_CONFIG", str(cfg))
    write(cfg, '{"idle_grace_seconds": 1e309, "wake_ticket_ttl_seconds": NaN}')
    refused: dict[str, str] = {}
    names = ("idle_grace_seconds", "wake_ticket_ttl_seconds")
    values = schema.read_keys(FIELDS, names, refused)
    assert values == {"idle_grace_seconds": 2.0, "wake_ticket_ttl_seconds": 86400.0}
    assert sorted(refused) == sorted(names)


def test_the_largest_accepted_ttl_still_renders_a_notification(tmp_path: Path) -> None:
    """The upper bound is one every renderer can turn into a date: nothing is dead-lettered."""
    env = Env(tmp_path, wake_enabled=True, wake_topic="donebell-wake", wake_ticket_ttl_seconds=MAX_SECONDS)
    s = env.settings()
    assert s.wake_ticket_ttl_seconds == MAX_SECONDS
    (button,) = wake_actions(outbox_record(thread_id=THREAD, turn_id="turn-1"), s, state=env.state)
    assert json.dumps(button) and button["body"].startswith("dbw1.")  # a signed ticket, no overflow
    with pytest.raises(model.ConfigError, match="wake_ticket_ttl_seconds"):
        write(env.config_path, {"topic": "t", "wake_ticket_ttl_seconds": MAX_SECONDS * 2})
        view.load(env.config_path)


@pytest.mark.parametrize("raw", ["inf", "nan", "1e309", "-1", "1e300"])
def test_config_set_refuses_a_non_finite_or_huge_number_in_one_line(tmp_path: Path, raw: str) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text('{"topic": "t"}\n', encoding="utf-8")
    os.chmod(cfg, 0o600)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
    environ.update(DONEBELL_CONFIG=str(cfg), DONEBELL_STATE_DIR=str(tmp_path / "state"))
    for key in ("wake_ticket_ttl_seconds", "max_attempts"):
        result = subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", "config", "set", key, raw],
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 2, result
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert key in result.stderr and "was not changed" in result.stderr
        assert cfg.read_text(encoding="utf-8") == '{"topic": "t"}\n'
    check = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "config", "check"],
        env={**environ, "DONEBELL_WAKE_TICKET_TTL_SECONDS": raw},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 1 and "wake_ticket_ttl_seconds" in check.stderr, check
    assert "Traceback" not in check.stderr


def test_the_model_refuses_infinity_given_directly() -> None:
    for value in (float("inf"), float("nan"), 1e300):
        with pytest.raises(ValueError, match="wake_ticket_ttl_seconds"):
            Settings(wake_ticket_ttl_seconds=value)
