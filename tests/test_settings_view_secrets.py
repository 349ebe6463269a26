"""Secrets in both settings loaders: a loose file holding a token or password is refused alike, and
no repr, str or dump of the roles' view ever shows one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from donebell.shared.config import view
from support.settings_parity import assert_same, private_config, write


@pytest.fixture()
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config path in a private folder, with no DONEBELL_* variable of the developer's shell."""
    return private_config(tmp_path, monkeypatch)


@pytest.mark.parametrize("secret", ["token", "password"])
def test_loose_file_with_a_secret_is_refused_by_both(cfg: Path, monkeypatch: pytest.MonkeyPatch, secret: str) -> None:
    """A token or password in a file others can read is refused with the same chmod hint; 0600 loads."""
    write(cfg, {"topic": "t", secret: "hunter2"}, mode=0o644)
    refused = assert_same(cfg, "refused")
    assert "chmod 600" in refused[1] and "hunter2" not in refused[1]
    cfg.chmod(0o600)
    assert_same(cfg, "loaded")
    # the secret from the environment with a loose file that holds none: the file is not secret (issue 15)
    write(cfg, {"topic": "t"}, mode=0o644)
    monkeypatch.setenv(f"DONEBELL_{secret.upper()}", "hunter2")
    assert_same(cfg, "loaded")
    # a password inside the server URL is a secret in the file
    monkeypatch.delenv(f"DONEBELL_{secret.upper()}")
    write(cfg, {"topic": "t", "server": "https://u:hunter2@ntfy.example"}, mode=0o644)
    refused = assert_same(cfg, "refused")
    assert "chmod 600" in refused[1] and "hunter2" not in refused[1]


def test_secrets_never_print(cfg: Path) -> None:
    """repr/str of the view, its secrets and its dumps never show a token or password."""
    write(cfg, {"topic": "t", "token": "tok-123456", "password": "pw-654321", "username": "u"})
    settings = view.load(cfg).settings
    assert settings.token is not None and settings.token.get_secret_value() == "tok-123456"
    shown = [repr(settings), str(settings), repr(settings.token), str(settings.password)]
    shown += [json.dumps(settings.model_dump(mode="json")), json.dumps(settings.redacted())]
    for text in shown:
        assert "tok-123456" not in text and "pw-654321" not in text
    assert settings.redacted()["token"] == "**********"
