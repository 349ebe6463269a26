"""Secrets in message excerpts (issue 14 item 9): redacted at capture by every hook and the scanner,
and again at render, so ``include_message`` never sends or stores a credential verbatim.

The table is the contract: each secret shape must disappear (its secret part appears nowhere),
each look-alike must survive byte for byte. The end-to-end tests push the same table through the
real ``donebell hook claude`` / ``hook codex-stop`` / ``worker local-scanner`` processes and the
real delivery role to the ntfy stand-in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from donebell.shared.records import to_outbox
from donebell.shared.text.redaction import MARK, redact
from support.hooks_harness import HookEnv, claude_event
from support.ntfy_standin import NtfyStandin
from support.payload_kit import Pipeline
from support.scanner_kit import born_ago, fixture_lines, rollout_path

#: (text as an agent might write it, the part that must never be stored or sent)
SECRETS: list[tuple[str, str]] = [
    ("api_key=9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),
    ("API_KEY: 'q1w2e3r4t5y6u7i8o9p0'", "q1w2e3r4t5y6u7i8o9p0"),
    ('{"api_key": "k-11aa22bb33cc44dd"}', "k-11aa22bb33cc44dd"),
    ("x-api-key: 7Hq2Lm9Zp4Rt8Wv1", "7Hq2Lm9Zp4Rt8Wv1"),
    ("token: 5f4dcc3b5aa765d61d83", "5f4dcc3b5aa765d61d83"),
    ("GITHUB_TOKEN=gh-internal-000111222", "gh-internal-000111222"),
    ("password=hunter2hunter2", "hunter2hunter2"),
    ("PASSWORD: 'correct horse battery staple'", "correct horse battery staple"),
    ("db_passwd=Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("passphrase => 'open sesame 42'", "open sesame 42"),
    ("client_secret = 'cs-778899aabbcc'", "cs-778899aabbcc"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("Authorization: Bearer abcDEF123456ghiJKL789", "abcDEF123456ghiJKL789"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA=="),
    ("use Bearer 0a1b2c3d4e5f6a7b8c9d for it", "0a1b2c3d4e5f6a7b8c9d"),
    ("OPENAI key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12"),
    ("sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("ghp_0123456789abcdefghijABCDEFGHIJklmnop", "ghp_0123456789abcdefghijABCDEFGHIJklmnop"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv"),
    ("slack xoxb-1234567890-0987654321-AbCdEfGhIjKl", "xoxb-1234567890-0987654321-AbCdEfGhIjKl"),
    ("xoxp-2222-3333-4444-abcdef", "xoxp-2222-3333-4444-abcdef"),
    ("AKIAIOSFODNN7EXAMPLE is the key id", "AKIAIOSFODNN7EXAMPLE"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ("glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn", "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA7bq"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAA",
    ),
    ("clone https://alice:s3cr3tPass@git.example.com/repo.git", "s3cr3tPass"),
    ("DATABASE_URL=postgres://app:pg-pass-9911@db:5432/prod", "pg-pass-9911"),
]
#: A key block cut off by the excerpt limit: redacted to the end of the text.
UNTERMINATED_KEY = ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")
#: Text that looks like a secret and is not: it must arrive unchanged.
LOOK_ALIKES: list[str] = [
    "max_tokens=4096",
    "total_tokens: 12345",
    "token_count=42",
    "def login(user: str, password: str) -> bool:",
    "token: ${{ secrets.NTFY_TOKEN }}",
    "API_KEY=$OPENAI_API_KEY",
    "git clone git@github.com:org/repo.git",
    "ssh://git@example.com/srv/repo.git",
    "http://localhost:8080/api/v1",
    "mailto:someone@example.com",
    "scikit-learn (sk-learn) 1.5",
    "the task-1234567890abcdefghijklmn ran",
    "-----BEGIN CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----",
    "AKIA is the prefix of an AWS key id",
    "commit 0123456789abcdef0123456789abcdef01234567",
    "thread 01a22be2-8ff4-7060-90c7-45d2cf0697b5",
    "Bearer tokens expire hourly",
    "monkey: banana",
    "secret: true",
]


@pytest.mark.parametrize(("text", "secret"), [*SECRETS, UNTERMINATED_KEY], ids=lambda v: str(v)[:24])
def test_secret_shapes_are_redacted(text: str, secret: str) -> None:
    """Each secret shape loses its secret part and gains the redaction mark."""
    out = redact(text)
    assert secret not in out and MARK in out, out


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_survive(text: str) -> None:
    """Counts, types, references, SSH remotes, public PEM headers, hashes and ids stay verbatim."""
    assert redact(text) == text


def test_redaction_keeps_the_words_around_a_secret() -> None:
    """Only the secret goes: the name, the header scheme, the URL's host stay readable."""
    assert redact("set api_key=9f8e7d6c5b4a39281706 then retry") == f"set api_key={MARK} then retry"
    assert redact("Authorization: Bearer abcDEF123456ghiJKL789") == f"Authorization: Bearer {MARK}"
    assert redact("https://alice:s3cr3tPass@git.example.com/x") == f"https://{MARK}@git.example.com/x"


def _table_message() -> str:
    """Every secret and look-alike of the table, one per line (the unterminated key block last)."""
    return "\n".join([*(text for text, _ in SECRETS), *LOOK_ALIKES, UNTERMINATED_KEY[0]])


def _assert_redacted_everywhere(pipe: Pipeline, sent: str) -> None:
    for _, secret in [*SECRETS, UNTERMINATED_KEY]:
        assert secret not in sent, secret
        assert secret not in pipe.state_text(), secret  # pending, outbox, receipts, log
        assert secret not in pipe.request_bodies(), secret
    for text in LOOK_ALIKES:
        assert text in sent, text


@pytest.fixture()
def pipe(tmp_path: Path, srv: NtfyStandin) -> Pipeline:
    pipeline = Pipeline(HookEnv(tmp_path), srv)
    # Markdown keeps the lines as written, so the look-alikes can be compared byte for byte.
    pipeline.configure(include_message=True, max_message_chars=4000, markdown=True)
    return pipeline


def test_claude_stop_message_is_redacted_at_capture_and_send(pipe: Pipeline) -> None:
    """`hook claude` Stop with the whole table as last_assistant_message: no secret in state or on the wire.

    Before: the excerpt was stored in pending/outbox and sent verbatim."""
    pipe.hooks.claude(claude_event("print-tool", "UserPromptSubmit"))
    pipe.hooks.claude({**claude_event("print-tool", "Stop"), "last_assistant_message": _table_message()})
    assert MARK in pipe.hooks.only("pending")["last_message"]  # redacted before it was stored
    _assert_redacted_everywhere(pipe, pipe.only_message()["message"])


def test_claude_stop_failure_details_are_redacted(pipe: Pipeline) -> None:
    """A StopFailure's error_details (the API's raw answer, stored even with include_message off) are redacted."""
    pipe.configure()
    failure = claude_event("print-apierror529", "StopFailure")
    pipe.hooks.claude({**failure, "error_details": "401 invalid x-api-key: sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"})
    assert "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2" not in json.dumps(pipe.hooks.only("pending"))


def test_codex_stop_message_is_redacted_at_capture_and_send(pipe: Pipeline) -> None:
    """`hook codex-stop` with the table as last_assistant_message: no secret in state or on the wire."""
    hooks = pipe.hooks
    hooks.install_rollout("simple-exec", upto="task_complete")  # the hook's word only: no scanner evidence
    hooks.stop(hooks.stop_payload("simple", last_assistant_message=_table_message()))
    assert MARK in hooks.only("pending")["last_message"]
    _assert_redacted_everywhere(pipe, pipe.only_message()["message"])


def test_scanner_message_is_redacted_at_capture_and_send(pipe: Pipeline) -> None:
    """`worker local-scanner --once` reads a rollout whose task_complete carries the table: redacted."""
    hooks = pipe.hooks
    lines = fixture_lines("simple-exec")
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record.get("payload", {}).get("type") == "task_complete":
            record["payload"]["last_agent_message"] = _table_message()
            lines[i] = json.dumps(record).encode() + b"\n"
    born_ago(hooks.state.ensure(), 3600)  # donebell ran before the task ended: its rollout is news
    rollout_path(hooks.codex_home, "simple-exec").write_bytes(b"".join(lines))
    pipe.worker("local-scanner")
    assert MARK in hooks.only("pending")["last_message"]
    _assert_redacted_everywhere(pipe, pipe.only_message()["message"])


def test_unredacted_outbox_record_is_redacted_at_render(pipe: Pipeline) -> None:
    """A record stored verbatim (by an older version) is redacted when the delivery role renders it."""
    hooks = pipe.hooks
    hooks.claude(claude_event("print-tool", "UserPromptSubmit"))
    hooks.claude(claude_event("print-tool", "Stop"))
    state = hooks.state
    candidate = hooks.only("pending")
    state.create("outbox", to_outbox({**candidate, "last_message": _table_message()}, verdict="idle"))
    state.remove("pending", candidate["key"])
    sent = pipe.only_message()["message"]
    for _, secret in [*SECRETS, UNTERMINATED_KEY]:
        assert secret not in sent and secret not in pipe.request_bodies(), secret
    for text in LOOK_ALIKES:
        assert text in sent, text


def test_a_key_across_the_stored_limit_is_still_redacted(pipe: Pipeline) -> None:
    """The hook cuts a stored excerpt at 4,000 characters after redacting, not before: a key that
    straddles the cut leaves no prefix behind (before: the first 20 characters of the key stayed)."""
    key = "ghp_0123456789abcdefghijABCDEFGHIJklmnop"
    pipe.hooks.claude(claude_event("print-tool", "UserPromptSubmit"))
    pipe.hooks.claude({**claude_event("print-tool", "Stop"), "last_assistant_message": "x" * 3980 + " " + key})
    stored = pipe.hooks.only("pending")["last_message"]
    assert stored == "x" * 3980 + " [REDACTED]" and key[:12] not in stored
