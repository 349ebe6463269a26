"""Reply to continue, end to end: the real CLIs, the real supervisor, the ntfy stand-in's subscriptions.

A finished `codex exec` / `claude -p` turn notifies with a Continue button; the test makes exactly
the HTTP request the ntfy app makes when that button is tapped (method, URL, headers and body of
the `http` action); the wake role, subscribed to the reply topic, starts one new turn in the same
thread with the configured prompt, whose completion notifies again (with buttons again).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import npm_clis
from support.fake_messages import FakeMessages, api_error
from support.fake_messages import Text as ClaudeText
from support.fake_responses import FakeResponses, Text, http_500
from support.scripted_server import Stall

from e2e.agent_proc import RunningAgent, start_agent
from e2e.harness import (
    CodexHome,
    event_payloads,
    make_claude_home,
    make_codex_home,
    read_jsonl,
    run_claude,
    run_codex,
)
from e2e.notes import JSON
from e2e.product import Product
from e2e.product_scenarios import _dump_on_failure

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

WAKE_TOPIC = "donebell-e2e-replies"
PROMPT = "WAKE-PROMPT: please continue"
#: What the user's own wake_codex_args would say in this offline sandbox (donebell adds nothing).
CODEX_ARGS = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust"]
WAKE_CONFIG: JSON = {
    "wake_enabled": True,
    "wake_topic": WAKE_TOPIC,
    "wake_allow_unauthenticated": True,  # the stand-in runs without auth here
    "wake_actions": [{"label": "Continue", "prompt": PROMPT}],
    "wake_codex_args": CODEX_ARGS,
}


class WakeProduct(Product):
    """The product whose supervisor also has the agent's environment, so the wake role can start it."""

    agent_vars: dict[str, str]

    def env(self, **extra: str) -> dict[str, str]:
        base = super().env(**extra)
        merged = {**getattr(self, "agent_vars", {}), **base}
        bins = f"{npm_clis.codex_binary().parent}:{npm_clis.claude_binary().parent}"
        merged["PATH"] = f"{bins}:{base['PATH']}"
        return merged


@contextlib.contextmanager
def wake_product(tmp: Path, server: Any, provider: str, **config: Any) -> Iterator[tuple[WakeProduct, Any]]:
    """A Codex home or Claude config dir wired by `donebell install`, under a running supervisor."""
    with WakeProduct(tmp, {**WAKE_CONFIG, **config}) as product:
        make_home = make_codex_home if provider == "codex" else make_claude_home
        home = make_home(tmp, server, extra_env=product.agent_env())
        product.agent_vars = dict(home.env)
        if isinstance(home, CodexHome):
            product.install(codex=home)
        else:
            product.install(claude=home)
        product.start()
        with _dump_on_failure(product):
            yield product, home


def continue_once(product: Product) -> JSON:
    """The first notification's Continue tapped; the second notification (with buttons again)."""
    [first] = product.expect_matching(1)
    tap(continue_button(first))
    product.wait_until(lambda: len(product.messages()) >= 2, 60, "the second notification")
    second = product.messages()[1]
    continue_button(second)
    return second


def assert_one_confirmed_wake(product: Product) -> None:
    [record] = wake_records(product)
    assert record["status"] == "confirmed", record
    product.expect_matching(2, settle=3.0)  # and nothing more: one turn, one notification


def tap(action: JSON) -> None:
    """Exactly the request the ntfy app makes for an `http` action: its method, url, headers, body."""
    assert action["action"] == "http"
    reply = httpx.request(
        action.get("method") or "POST",
        action["url"],
        headers=action.get("headers") or {},
        content=(action.get("body") or "").encode("utf-8"),
        timeout=10,
    )
    assert reply.status_code == 200, reply.text


def continue_button(message: JSON) -> JSON:
    buttons: list[JSON] = [a for a in message.get("actions") or [] if a.get("label") == "Continue"]
    [button] = buttons
    assert PROMPT not in json.dumps(message), "the prompt must never leave the machine"
    return button


def wake_records(product: Product) -> list[JSON]:
    folder = product.state_dir / "wake" / "replies"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.exists() else []


def codex_turns(home: CodexHome) -> list[JSON]:
    return event_payloads(read_jsonl(home.root_rollout()), "task_complete")


def test_codex_continue_runs_one_new_turn_in_the_same_thread(tmp_path: Path) -> None:
    script = {"root": [Text("FAKE-FINAL: first"), Text("FAKE-FINAL: second")]}
    with FakeResponses(script) as server, wake_product(tmp_path, server, "codex") as (product, home):
        assert run_codex(home, "start").returncode == 0
        assert "FAKE-FINAL: second" in continue_once(product)["message"]
        assert len(home.root_rollouts()) == 1, "the same thread, not a new one"
        assert [t["last_agent_message"] for t in codex_turns(home)] == ["FAKE-FINAL: first", "FAKE-FINAL: second"]
        assert PROMPT in json.dumps(read_jsonl(home.root_rollout()))  # the configured prompt only
        assert_one_confirmed_wake(product)


def test_codex_continue_works_outside_a_git_repository_as_the_users_run_did(tmp_path: Path) -> None:
    """The user's `codex exec --skip-git-repo-check` ran in a folder outside any git repository and
    wake_codex_args does not repeat the flag: the woken `codex exec resume`, started in that folder,
    gets it from the thread's own record (Codex refused it before: "Not inside a trusted directory")."""
    without = ["--dangerously-bypass-hook-trust"]  # the bypass flag would skip the folder check too
    script = {"root": [Text("FAKE-FINAL: first"), Text("FAKE-FINAL: second")]}
    with (
        FakeResponses(script) as server,
        wake_product(tmp_path, server, "codex", wake_codex_args=without) as (
            product,
            home,
        ),
    ):
        assert not any((parent / ".git").exists() for parent in [home.workdir, *home.workdir.parents])
        assert run_codex(home, "start").returncode == 0
        assert "FAKE-FINAL: second" in continue_once(product)["message"]
        assert_one_confirmed_wake(product)


def test_claude_continue_resumes_the_session(tmp_path: Path) -> None:
    script = {"main": [ClaudeText("FAKE-FINAL: first"), ClaudeText("FAKE-FINAL: second")]}
    with FakeMessages(script) as server, wake_product(tmp_path, server, "claude") as (product, home):
        assert run_claude(home, "start").returncode == 0
        assert "FAKE-FINAL: second" in continue_once(product)["message"]
        [transcript] = home.transcripts()  # resumed: the same session file
        assert PROMPT in transcript.read_text()
        assert_one_confirmed_wake(product)


@pytest.mark.parametrize("provider", ["claude", "codex"])
def test_continue_on_a_failed_turns_push_resumes_it(tmp_path: Path, provider: str) -> None:
    """A turn that failed (an API error: Claude's StopFailure, Codex's error turn) is the newest
    ended turn: its push's Continue starts one more turn, never ``superseded`` (issue 34 item 8:
    Claude's ``-p`` transcript ends with the error record and no ``turn_duration``)."""
    if provider == "claude":
        script: dict[str, Any] = {"main": [api_error(500), ClaudeText("FAKE-FINAL: second")]}
        server: Any = FakeMessages(script)
    else:
        server = FakeResponses({"root": [http_500(), Text("FAKE-FINAL: second")]})
    with server, wake_product(tmp_path, server, provider) as (product, home):
        run = run_codex(home, "start") if provider == "codex" else run_claude(home, "start")
        assert run is not None
        [failed] = product.expect_matching(1)
        assert failed["tags"][0] != "white_check_mark", failed  # the failed turn's push
        tap(continue_button(failed))
        product.wait_until(lambda: len(product.messages()) >= 2, 90, "the continued turn's push")
        [record] = wake_records(product)
        assert record["status"] == "confirmed", record
        assert "FAKE-FINAL: second" in product.messages()[1]["message"]


def test_codex_reply_tapped_during_the_users_own_turn_is_superseded_when_it_ends(tmp_path: Path) -> None:
    """Tapped while the user's own turn runs in the thread: queued, then refused ``superseded`` when
    that turn ends (the ticket's turn is no longer the newest ended one, docs/wake.md), so no turn
    is started after the user's; the user's turn gets its own notification."""
    script = {"root": [Text("FAKE-FINAL: first"), Stall(then=Text("FAKE-FINAL: busy")), Text("FAKE-FINAL: woken")]}
    with FakeResponses(script) as server, wake_product(tmp_path, server, "codex") as (product, home):
        assert run_codex(home, "start").returncode == 0
        [first] = product.expect_matching(1)
        thread = str(home.session_meta(home.root_rollout())["id"])
        busy = _resume(home, thread, "the user types more")
        server.wait_for_stall(timeout=60)
        tap(continue_button(first))
        product.wait_until(lambda: [r["status"] for r in wake_records(product)] == ["queued"], 30, "queued")
        server.release_stalls()
        busy.wait(60)
        product.wait_until(lambda: wake_records(product)[0]["status"] == "refused", 60, "refused")
        assert wake_records(product)[0]["reason"] == "superseded"
        product.expect_matching(2, settle=3.0)  # the first turn's and the user's own turn's
        assert [t["last_agent_message"] for t in codex_turns(home)] == ["FAKE-FINAL: first", "FAKE-FINAL: busy"]


def test_codex_tap_while_the_supervisor_is_down_is_handled_once_on_restart(tmp_path: Path) -> None:
    script = {"root": [Text("FAKE-FINAL: first"), Text("FAKE-FINAL: second")]}
    with FakeResponses(script) as server, wake_product(tmp_path, server, "codex") as (product, home):
        assert run_codex(home, "start").returncode == 0
        [first] = product.expect_matching(1)
        product.stop()
        tap(continue_button(first))
        product.start()
        product.wait_until(lambda: len(product.messages()) >= 2, 60, "the second notification")
        product.stop()
        product.start()  # a second restart must not handle the reply again
        product.expect_matching(2, settle=5.0)
        assert len(codex_turns(home)) == 2 and len(wake_records(product)) == 1


def _resume(home: CodexHome, thread: str, prompt: str) -> RunningAgent:
    """`codex exec resume <thread> <prompt>` in the background: a turn someone else started."""
    argv = [str(npm_clis.codex_binary()), "exec", "resume", *CODEX_ARGS, thread, prompt]
    return start_agent(argv, cwd=home.workdir, env=home.env)


@contextlib.contextmanager
def codex_daemon(home: CodexHome) -> Iterator[Path]:
    """`codex app-server daemon start` in the harness's Codex home; stopped (and its helper killed) after."""
    codex = str(npm_clis.codex_binary())
    run = subprocess.run(
        [codex, "app-server", "daemon", "start"], env=home.env, capture_output=True, text=True, timeout=90, check=False
    )
    helpers = [e["details"]["pid"] for e in _json_lines(run.stdout + run.stderr) if e.get("event") == "process_spawned"]
    sock = home.codex_home / "app-server-control" / "app-server-control.sock"
    try:
        assert run.returncode == 0 and sock.exists(), run.stdout + run.stderr
        yield sock
    finally:
        subprocess.run(
            [codex, "app-server", "daemon", "stop"], env=home.env, capture_output=True, timeout=60, check=False
        )
        for pid in helpers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _json_lines(text: str) -> list[JSON]:
    out = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            obj = json.loads(line)
            if isinstance(obj, dict):
                out.append(obj)
    return out


def test_codex_continue_through_the_app_server_daemon(tmp_path: Path) -> None:
    """With the daemon's control socket present, the wake goes through thread/resume + turn/start."""
    script = {"root": [Text("FAKE-FINAL: first"), Text("FAKE-FINAL: daemon turn")]}
    with FakeResponses(script) as server, wake_product(tmp_path, server, "codex") as (product, home):
        assert run_codex(home, "start").returncode == 0
        [first] = product.expect_matching(1)
        with codex_daemon(home):
            tap(continue_button(first))
            product.wait_until(lambda: len(codex_turns(home)) == 2, 90, "the daemon's turn in the same rollout")
            product.wait_until(lambda: wake_records(product)[0]["status"] == "confirmed", 30, "confirmed")
            [record] = wake_records(product)
            assert record["via"] == "app-server" and record["accepted_turn"], record
            assert codex_turns(home)[-1]["last_agent_message"] == "FAKE-FINAL: daemon turn"
            assert len(home.root_rollouts()) == 1
