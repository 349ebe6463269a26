"""A token with a stray newline, or a password in the server URL, never reaches any output (issue 15, items 1-2).

Through the real commands against a real stand-in server: ``donebell test``, a delivery worker,
``config check|show``, ``doctor --json``, ``status --json`` and ``explain``; every state file is
searched as well. The token's printable core is the needle: it must appear nowhere, in no form.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from support.delivery_kit import TOPIC, Env
from support.ntfy_standin import NtfyStandin

pytestmark = pytest.mark.usefixtures("no_outside_config")

TOKEN = "tk_leakytokenabcdefghijklmnopqr"
PASSWORD = "pw-Url-S3cret-4242"


def _outputs(env: Env, *commands: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for args in commands:
        run = env.run_cli(*args)
        out[" ".join(args)] = run.stdout + run.stderr
    return out


@pytest.mark.parametrize("where", ["file", "environment"])
def test_a_token_with_a_trailing_newline_is_a_config_error_not_a_leak(
    srv: NtfyStandin, tmp_path: Path, where: str
) -> None:
    """It was sent, httpx refused the header quoting its bytes, and that text went to notify.log,
    last_error, `donebell test`, doctor and explain. Now every command refuses it up front (exit 78,
    naming the key), the worker does not loop, the queued record is untouched, the token is nowhere."""
    env = Env(tmp_path, server=srv.url, **({"token": TOKEN + "\n"} if where == "file" else {}))
    environ_extra = {"DONEBELL_TOKEN": TOKEN + "\n"} if where == "environment" else {}
    record = env.queue()
    if environ_extra:
        import subprocess
        import sys

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "donebell.supervisor.cli", *args],
                capture_output=True,
                text=True,
                env={**env.environ(), **environ_extra},
                timeout=30,
            )
    else:
        run = env.run_cli
    test = run("test")
    assert test.returncode == 78 and "token" in test.stderr and "trailing newline" in test.stderr, test
    worker = run("worker", "delivery", "--once")
    assert worker.returncode == 78 and "token" in worker.stderr, worker
    check = run("config", "check")
    assert check.returncode == 1 and "token" in check.stderr
    texts = {
        name: r.stdout + r.stderr
        for name, r in (
            ("test", test),
            ("worker", worker),
            ("check", check),
            ("doctor", run("doctor", "--json")),
            ("explain", run("explain", "--json", str(record["thread_id"]))),
            ("status", run("status", "--json")),
        )
    }
    texts["state"] = env.all_state_text()
    leaks = [name for name, text in texts.items() if TOKEN in text]
    assert leaks == [] and srv.requests == []
    assert env.state.read("outbox", record["key"])["attempts"] == 0  # type: ignore[index]  # waits, untouched, for a fixed config


def test_an_error_an_older_version_stored_is_scrubbed_in_every_output(tmp_path: Path) -> None:
    """An outbox record whose last_error quotes the token as httpx printed it (bytes repr, JSON-escaped
    in the log) was shown as is by doctor --json and explain; each output now masks every form."""
    env = Env(tmp_path, server="http://127.0.0.1:9", token=TOKEN + "\n")
    quoted = f"network: Illegal header value b'Bearer {TOKEN}\\n'"
    record = env.queue(attempts=3, last_error=quoted, next_attempt_at=4e9)
    texts = _outputs(
        env,
        ("doctor", "--json"),
        ("doctor",),
        ("explain", "--json", str(record["thread_id"])),
        ("explain", str(record["thread_id"])),
        ("status", "--json"),
    )
    assert (
        "Illegal header value" in texts["doctor --json"]
        and "Illegal header value" in texts["explain --json " + record["thread_id"]]
    )
    assert [name for name, text in texts.items() if TOKEN in text] == []


def test_password_in_the_server_url_is_never_shown(srv: NtfyStandin, tmp_path: Path) -> None:
    """`config show` (documented as redacted) and `donebell test` ("subscribe to http://user:pw@…")
    printed the password of a `user:password@` server. Now the user stays, the password is masked or
    dropped, in every output and state file; the request still authenticates with it."""
    with NtfyStandin(
        users={"phil": PASSWORD}, default_access="deny-all", access={"phil": {TOPIC: "read-write"}}
    ) as auth_srv:
        server = auth_srv.url.replace("http://", f"http://phil:{PASSWORD}@")
        env = Env(tmp_path, server=server)
        show = env.run_cli("config", "show")
        assert show.returncode == 0 and json.loads(show.stdout)["server"].startswith("http://phil:**********@127.0.0.1")
        test = env.run_cli("test")
        assert test.returncode == 0, test.stdout + test.stderr
        assert f"subscribe to {auth_srv.url}/{TOPIC}" in test.stdout and len(auth_srv.messages()) == 1
        texts = {"show": show.stdout, "test": test.stdout + test.stderr}
        texts.update(_outputs(env, ("test", "--json"), ("config", "check"), ("doctor", "--json"), ("status", "--json")))
        texts["state"] = env.all_state_text()
        encoded = base64.b64encode(f"phil:{PASSWORD}".encode()).decode()
        assert [name for name, text in texts.items() if PASSWORD in text or encoded in text] == []


def test_every_form_a_library_prints_is_masked() -> None:
    """raw, stripped, bytes repr, str repr, JSON-escaped (once and of a repr), URL-encoded, Base64 of user:pass."""
    from donebell.shared.config import secret_text

    secret = "s3cr\u00e9t/+\n"
    forms = [
        secret,
        secret.strip(),
        repr(secret.encode())[2:-1],
        repr(secret)[1:-1],
        json.dumps(secret)[1:-1],
        json.dumps(repr(secret.encode())[2:-1])[1:-1],
        "s3cr%C3%A9t%2F%2B",
        base64.b64encode(f"phil:{secret}".encode()).decode(),
        base64.b64encode(f":{secret}".encode()).decode(),
    ]
    for form in forms:
        text = f"error: <{form}> end"
        assert secret_text.scrub(text, [secret], "phil") == f"error: <{secret_text.MASK}> end", form
    assert secret_text.scrub("ab cd", ["ab"]) == "ab cd"  # too short to scrub without mangling the text


def test_shown_urls_lose_the_password() -> None:
    from donebell.shared.config import secret_text

    assert (
        secret_text.redact_url("https://phil:pw@ntfy.example:8443/x") == "https://phil:**********@ntfy.example:8443/x"
    )
    assert secret_text.redact_url("https://phil@ntfy.example") == "https://phil@ntfy.example"
    assert secret_text.public_url("https://phil:pw@ntfy.example/x") == "https://ntfy.example/x"
    assert secret_text.url_passwords("https://phil:p%40ss@h") == ["p%40ss", "p@ss"]


def test_settings_secrets_of_both_loaders(tmp_path: Path) -> None:
    """What a role scrubs a failed pass's error with: token, password, URL password (both loaders)."""
    from donebell.shared.config import model, secret_text, view

    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "topic": "t",
                "token": TOKEN,
                "username": "phil",
                "password": "pw-1234",
                "server": f"https://phil:{PASSWORD}@ntfy.example",
            }
        )
    )
    path.chmod(0o600)
    for loaded in (model.load(path), view.load(path)):
        secrets, user = secret_text.settings_secrets(loaded.settings)
        assert sorted(secrets) == sorted([TOKEN, "pw-1234", PASSWORD]) and user == "phil"
        text = secret_text.scrub(f"boom at https://phil:{PASSWORD}@ntfy.example with {TOKEN}", secrets, user)
        assert PASSWORD not in text and TOKEN not in text


@pytest.mark.parametrize("name", ["DONEBELL_TOKEN", "donebell_token"])
def test_unvalidated_secret_reads_see_the_variable_as_the_loaders_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """What status and the log scrub without validating: the variable's text exactly as the loaders
    take it (``true`` stays the string a token is, not a bool), in any case, over the file's."""
    from donebell.shared.config import secret_text, view

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"topic": "t", "token": "file-token"}))
    path.chmod(0o600)
    monkeypatch.setenv("DONEBELL_CONFIG", str(path))
    monkeypatch.setenv(name, "true")
    token = view.load(path).settings.token
    assert token is not None and token.get_secret_value() == "true"
    assert secret_text.configured_secrets()[0] == ["true"]
