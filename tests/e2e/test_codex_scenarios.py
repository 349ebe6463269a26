"""The whole product around the real Codex CLI: install, `donebell run`, hooks, scanner, gate, ntfy.

Each scenario wires a throwaway CODEX_HOME with `donebell install --service none --codex`, runs
the real supervisor, drives `codex exec` against the scripted Responses server and asserts the
exact set of notifications the ntfy stand-in received (title, wording, tags), that nothing more
arrives for a settle period, and that `donebell status` is healthy afterwards.

Codex runs with `--dangerously-bypass-hook-trust` (so the Stop hook install wrote really runs)
except in `test_codex_hooks_untrusted`, where the notify and the scanner must carry the signal.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.fake_responses import (
    FakeResponses,
    Text,
    child_order_router,
    create_goal,
    exec_command,
    http_500,
    spawn_agent,
    update_goal,
    wait_agent,
)
from support.scripted_server import RecordedRequest, Stall

from e2e.app_server import CodexAppServer
from e2e.harness import (
    CodexHome,
    event_payloads,
    read_jsonl,
    run_codex,
    run_codex_interrupted,
    start_codex,
)
from e2e.notes import done, failed, stopped
from e2e.product_scenarios import codex_product, log_entries, sent_receipts, trust_codex_stop_hook

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

TITLE = "work"  # the harness's work dir; the notification title is the project folder name


def root_thread(home: CodexHome) -> str:
    return str(home.session_meta(home.root_rollout())["id"])


# ==== one turn ================================================================================


def test_codex_simple(tmp_path: Path) -> None:
    """A text-only `codex exec` turn gives exactly one "done" notification with its final message."""
    with (
        FakeResponses({"root": [Text("FAKE-FINAL: hello")]}) as server,
        codex_product(tmp_path, server) as (product, home),
    ):
        run = run_codex(home, "say hello")
        assert run.returncode == 0, run.describe()
        product.expect([done(TITLE, "FAKE-FINAL: hello", root_thread(home))])
        product.assert_healthy()


def test_codex_install_wires_stop_hook_and_notify(tmp_path: Path) -> None:
    """With the hooks.json and notify `donebell install` wrote, one run calls both donebell's Stop hook
    and its notify, and they converge on the one sent record (the convergence guarantee)."""
    with FakeResponses({"root": [Text("both signals")]}) as server, codex_product(tmp_path, server) as (product, home):
        run = run_codex(home, "signal twice")
        assert run.returncode == 0, run.describe()
        thread = root_thread(home)
        product.expect([done(TITLE, "both signals", thread)])
        [receipt] = sent_receipts(product)
        assert receipt["thread_id"] == thread and "codex-stop" in receipt["sources"], receipt
        stop = log_entries(product, hook="codex-stop", thread_id=thread)
        notify = log_entries(product, hook="codex-notify", thread_id=thread)
        assert [e["msg"] for e in stop] == ["codex codex-stop: created"], product.diagnostics()
        # The notify runs after task_complete; it merges, or finds the record already promoted.
        assert [e["key"] for e in notify] == [receipt["key"]], product.diagnostics()
        assert notify[0]["msg"] in ("codex codex-notify: merged", "codex codex-notify: duplicate")
        if notify[0]["msg"].endswith("merged"):
            assert "codex-notify" in receipt["sources"], receipt
        product.assert_healthy()


def test_codex_tool_call(tmp_path: Path) -> None:
    """A turn that runs a shell command notifies once, after the command and the final answer."""
    script = {"root": [exec_command("echo tool-ran > tool_output.txt"), Text("done after the tool")]}
    with FakeResponses(script) as server, codex_product(tmp_path, server) as (product, home):
        run = run_codex(home, "run the tool")
        assert run.returncode == 0, run.describe()
        assert (home.workdir / "tool_output.txt").read_text() == "tool-ran\n"
        product.expect([done(TITLE, "done after the tool", root_thread(home))])
        product.assert_healthy()


def test_codex_model_error(tmp_path: Path) -> None:
    """An HTTP 500 fails the turn (no Stop hook, no notify): the scanner alone gives one "failed"."""
    with (
        FakeResponses({"root": [http_500("fake upstream failure")]}) as server,
        codex_product(tmp_path, server) as (product, home),
    ):
        run = run_codex(home, "fail please")
        assert not run.timed_out, run.describe()
        [complete] = event_payloads(read_jsonl(home.root_rollout()), "task_complete")
        error = complete["error"]["message"]  # Codex words a 500 itself ("high demand...")
        assert error and complete["last_agent_message"] is None, complete
        product.expect([failed(TITLE, error, root_thread(home))])
        assert sent_receipts(product)[0]["sources"] == ["scanner"]
        product.assert_healthy()


def test_codex_sigint_abort(tmp_path: Path) -> None:
    """Ctrl-C during the model stream aborts the turn: exactly one "stopped" notification."""
    with FakeResponses({"root": [Stall()]}) as server, codex_product(tmp_path, server) as (product, home):
        run = run_codex_interrupted(home, server, "hang", timeout=30)
        assert not run.timed_out and run.returncode != 0, run.describe()
        assert event_payloads(read_jsonl(home.root_rollout()), "turn_aborted")
        product.expect([stopped(TITLE, root_thread(home))])
        product.assert_healthy()


# ==== subagents ===============================================================================


def test_codex_subagent(tmp_path: Path) -> None:
    """A root whose turn ends while its child still works (the long-lived `codex app-server`) is
    notified once, for the root, only after the child finished; the child itself never notifies."""
    release = tmp_path / "release-child"
    script: dict[str, list[Any]] = {
        "root": [
            spawn_agent("CHILD-1: say hi"),
            wait_agent(),
            spawn_agent("CHILD-2: keep working"),
            Text("Root: handed off"),
        ],
        "child1": [Text("Child 1: hi")],
        # Child 2 works until the test lets it finish.
        "child2": [
            exec_command(f"while [ ! -e {release} ]; do sleep 0.05; done; echo released"),
            Text("Child 2: done"),
        ],
    }
    with (
        FakeResponses(script, router=child_order_router()) as server,
        codex_product(tmp_path, server) as (product, home),
    ):
        trust_codex_stop_hook(home)  # app-server has no --dangerously-bypass-hook-trust
        with CodexAppServer(home) as app:
            thread = app.start_thread()
            turn = app.start_turn(thread, "delegate twice")
            app.wait_turn_completed(thread, turn)
            # The root's turn is over; child 2 still runs: nothing may be sent.
            product.expect_none(3.0)
            [pending] = product.records("pending")
            assert pending["probe"]["waiting_for"]["reason"] == "child-running", product.diagnostics()
            child_done_before = time.time()
            release.touch()
            server.wait_for_requests(2, route="child2", timeout=30)
            product.expect([done(TITLE, "Root: handed off", thread)], after=child_done_before)
            assert app.turns_started(thread) == [turn]  # no further root turn
        children = home.child_rollouts()
        assert len(children) == 2 and all(event_payloads(read_jsonl(c), "task_complete") for c in children)
        child_ids = {str(home.session_meta(c)["id"]) for c in children}
        suppressed = {r["thread_id"]: r["reason"] for r in product.records("suppressed")}
        assert set(suppressed) == child_ids and set(suppressed.values()) == {"subagent"}, suppressed
        [receipt] = sent_receipts(product)
        assert "codex-stop" in receipt["sources"], receipt  # the trusted hook really ran
        product.assert_healthy()


# ==== goals and resume ========================================================================


def test_codex_goal_completes(tmp_path: Path) -> None:
    """A goal left active when `codex exec` exits holds every notification; resuming the thread and
    completing the goal gives exactly one, for the completing turn."""
    script = {"root": [create_goal("ship the thing"), Text("turn one; the goal goes on")]}
    with FakeResponses(script) as server, codex_product(tmp_path, server) as (product, home):
        run = run_codex(home, "set a goal")
        assert run.returncode == 0, run.describe()
        thread = root_thread(home)
        product.expect_none(3.0)  # goal active: the completed turn and the aborted continuation wait
        server.add("root", update_goal("complete"), Text("goal done"))
        run = run_codex(home, "finish the goal", extra_args=["resume", thread])
        assert run.returncode == 0, run.describe()
        product.expect([done(TITLE, "goal done", thread)])
        reasons = sorted(r["reason"] for r in product.records("suppressed"))
        assert reasons and set(reasons) == {"superseded"}, reasons
        product.assert_healthy()


def test_codex_exec_resume(tmp_path: Path) -> None:
    """`codex exec resume` on a finished thread gives a second, separate notification for the second task."""
    with FakeResponses({"root": [Text("first answer")]}) as server, codex_product(tmp_path, server) as (product, home):
        assert run_codex(home, "first task").returncode == 0
        thread = root_thread(home)
        first = done(TITLE, "first answer", thread)
        product.expect([first])
        server.add("root", exec_command("echo again"), Text("second answer"))
        run = run_codex(home, "second task", extra_args=["resume", thread])
        assert run.returncode == 0, run.describe()
        assert root_thread(home) == thread  # the same rollout, one more turn
        product.expect([first, done(TITLE, "second answer", thread)])
        turns = {r["turn_id"] for r in sent_receipts(product)}
        assert len(turns) == 2
        product.assert_healthy()


# ==== concurrency, trust, crashes ==============================================================


def _by_prompt(req: RecordedRequest) -> str:
    """Route each concurrent root by the prompt its conversation began with."""
    for item in (req.body or {}).get("input", []):
        if isinstance(item, dict) and item.get("role") == "user":
            for part in item.get("content") or []:
                text = part.get("text", "") if isinstance(part, dict) else ""
                if text.startswith("task-"):
                    return text
    return "unknown"


def test_codex_three_sessions_at_once(tmp_path: Path) -> None:
    """Three `codex exec` sessions in three projects at the same time give three notifications,
    each with its own project title, final message and thread id."""
    names = ("alpha", "beta", "gamma")
    script: dict[str, list[Any]] = {
        f"task-{n}": [exec_command(f"sleep 0.3; echo {n}"), Text(f"FINAL {n}")] for n in names
    }
    with FakeResponses(script, router=_by_prompt) as server, codex_product(tmp_path, server) as (product, home):
        agents = {}
        for n in names:
            project = home.root / n
            project.mkdir()
            agents[n] = start_codex(replace(home, workdir=project), f"task-{n}")
        runs = {n: a.wait(60) for n, a in agents.items()}
        assert all(r.returncode == 0 for r in runs.values()), {n: r.describe() for n, r in runs.items()}
        assert not server.unscripted
        threads = {
            Path(home.session_meta(p)["cwd"]).name: str(home.session_meta(p)["id"]) for p in home.root_rollouts()
        }
        assert sorted(threads) == sorted(names)
        product.expect([done(n, f"FINAL {n}", threads[n]) for n in names])
        product.assert_healthy()


def test_codex_hooks_untrusted(tmp_path: Path) -> None:
    """Without `--dangerously-bypass-hook-trust` exec skips the untrusted Stop hook silently; the
    legacy notify and the rollout scanner still deliver exactly one notification."""
    with FakeResponses({"root": [Text("no hook ran")]}) as server, codex_product(tmp_path, server) as (product, home):
        run = run_codex(home, "untrusted", bypass_hook_trust=False)
        assert run.returncode == 0, run.describe()
        thread = root_thread(home)
        product.expect([done(TITLE, "no hook ran", thread)])
        [receipt] = sent_receipts(product)
        assert "codex-stop" not in receipt["sources"] and receipt["sources"], receipt
        assert not log_entries(product, hook="codex-stop"), "the untrusted Stop hook ran"
        assert log_entries(product, hook="codex-notify", thread_id=thread), "notify is not subject to trust"
        product.assert_healthy()


def test_codex_supervisor_killed_and_restarted(tmp_path: Path) -> None:
    """SIGKILL of the supervisor mid-task (its roles orphaned), a restart that takes them over, then
    a crash of everything while the turn ends: exactly one notification, sent after the restart."""
    script = {"root": [exec_command("echo working"), Stall(then=Text("finished while down"))]}
    # No on-demand worker from the hooks: with the service down, nothing may send until it is back.
    with (
        FakeResponses(script) as server,
        codex_product(tmp_path, server, extra_env={"DONEBELL_KICK_COMMAND": "off"}) as (product, home),
    ):
        agent = start_codex(home, "long task")
        server.wait_for_stall(timeout=60)
        # 1. kill -9 the supervisor alone: its roles live on as orphans; a new one stops them first.
        orphans = product.role_pids()
        product.supervisors[-1].send_signal(signal.SIGKILL)
        product.supervisors[-1].wait(10)
        product.start()
        product.wait_until(
            lambda: not any(product.alive(p) for p in orphans.values() if p),
            15,
            "the orphaned roles to be stopped by the new supervisor",
        )
        # 2. a crash of the supervisor and every role while the turn ends.
        product.crash()
        threading.Timer(0.2, server.release_stalls).start()
        run = agent.wait(60)
        assert run.returncode == 0, run.describe()
        thread = root_thread(home)
        assert [r["key"] for r in product.records("pending")], "the hooks recorded nothing while down"
        product.expect_none(2.0)
        restarted = time.time()
        product.start()
        product.expect([done(TITLE, "finished while down", thread)], after=restarted)
        product.assert_healthy()
