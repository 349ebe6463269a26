"""Smoke tests proving the e2e harness drives the REAL codex and claude CLIs offline.

They check only what the harness promises (scripted turns reach the CLI, the CLI writes its
rollout / transcript, and calls the recorded hooks); donebell's own behaviour is tested elsewhere.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.fake_messages import FakeMessages, GoalVerdict, agent, api_error, bash
from support.fake_messages import Stall as CStall
from support.fake_messages import Text as CText
from support.fake_responses import (
    FakeResponses,
    Text,
    create_goal,
    exec_command,
    http_500,
    spawn_agent,
    update_goal,
    wait_agent,
)
from support.scripted_server import Script, Stall

from e2e.harness import (
    event_payloads,
    make_claude_home,
    make_codex_home,
    read_jsonl,
    run_claude,
    run_claude_interrupted,
    run_codex,
    run_codex_interrupted,
)
from e2e.recorder import Recorder

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]


# ==== Codex ===================================================================================


def test_codex_simple_turn(tmp_path: Path, recorder: Recorder) -> None:
    """A text-only turn ends with task_complete, and both the Stop hook and legacy notify fire."""
    with FakeResponses({"root": [Text("FAKE-FINAL: hello")]}) as server:
        home = make_codex_home(tmp_path, server, notify=recorder.argv("notify"), hooks=recorder.hooks("Stop"))
        run = run_codex(home, "say hello")
        notify = recorder.wait_for("notify")[0]["argv_json"][-1]
    assert run.returncode == 0, run.describe()
    rollout = read_jsonl(home.root_rollout())
    thread_id = rollout[0]["payload"]["id"]
    assert [p["last_agent_message"] for p in event_payloads(rollout, "task_complete")] == ["FAKE-FINAL: hello"]
    stop = recorder.payloads("Stop")
    assert [(s["hook_event_name"], s["session_id"], s["last_assistant_message"]) for s in stop] == [
        ("Stop", thread_id, "FAKE-FINAL: hello")
    ]
    assert (notify["type"], notify["thread-id"], notify["client"]) == ("agent-turn-complete", thread_id, "codex_exec")
    assert [r.path for r in server.requests] == ["/v1/responses"] and not server.unscripted


def test_codex_tool_call(tmp_path: Path, recorder: Recorder) -> None:
    """An exec_command call really runs in the work dir and its output goes back to the model."""
    script = {"root": [exec_command("echo tool-ran > tool_output.txt && echo hello-from-shell"), Text("done")]}
    with FakeResponses(script) as server:
        home = make_codex_home(tmp_path, server, hooks=recorder.hooks("PostToolUse", "Stop"))
        run = run_codex(home, "run the tool")
    assert run.returncode == 0, run.describe()
    assert (home.workdir / "tool_output.txt").read_text() == "tool-ran\n"
    outputs = [i for i in server.requests[1].body["input"] if i.get("type") == "function_call_output"]
    assert "hello-from-shell" in outputs[-1]["output"]
    assert recorder.payloads("PostToolUse")[0]["tool_name"] == "Bash"
    assert event_payloads(read_jsonl(home.root_rollout()), "task_complete")[0]["last_agent_message"] == "done"


def test_codex_subagent(tmp_path: Path, recorder: Recorder) -> None:
    """spawn_agent creates a child thread with its own rollout; the child's requests route to 'child'."""
    script: Script = {
        "root": [spawn_agent("CHILD-TASK: say hi"), wait_agent(), Text("Root: child finished")],
        "child": [Text("Child: hi")],
    }
    with FakeResponses(script) as server:
        home = make_codex_home(tmp_path, server, hooks=recorder.hooks("Stop", "SubagentStop"))
        run = run_codex(home, "delegate")
    assert run.returncode == 0, run.describe()
    root_meta = home.session_meta(home.root_rollout())
    [child] = home.child_rollouts()
    assert len(run.session_files) == 2
    child_meta = home.session_meta(child)
    assert (child_meta["thread_source"], child_meta["parent_thread_id"]) == ("subagent", root_meta["id"])
    assert event_payloads(read_jsonl(child), "task_complete")[0]["last_agent_message"] == "Child: hi"
    assert [r.headers["x-codex-parent-thread-id"] for r in server.requests_for("child")] == [root_meta["id"]]
    wait_args = server.requests_for("root")[2].body["input"]
    assert any("Child: hi" in str(i.get("output", "")) for i in wait_args)  # wait_agent found the child
    assert [p["session_id"] for p in recorder.payloads("Stop")] == [root_meta["id"]]
    assert len(recorder.payloads("SubagentStop")) == 1


def test_codex_http_500(tmp_path: Path, recorder: Recorder) -> None:
    """An HTTP 500 fails the turn: task_complete carries an error and no Stop hook runs."""
    with FakeResponses({"root": [http_500()]}) as server:
        home = make_codex_home(tmp_path, server, hooks=recorder.hooks("Stop", "SessionEnd"))
        run = run_codex(home, "fail please")
    assert not run.timed_out, run.describe()
    [done] = event_payloads(read_jsonl(home.root_rollout()), "task_complete")
    assert done["last_agent_message"] is None and done["error"]["message"], done
    recorder.wait_for("SessionEnd")
    assert recorder.records("Stop") == []
    assert len(server.requests) == 1  # request_max_retries = 0


def test_codex_sigint_aborts_turn(tmp_path: Path, recorder: Recorder) -> None:
    """SIGINT while the model stream is stalled writes turn_aborted and fires the Interrupt hook."""
    with FakeResponses({"root": [Stall()]}) as server:
        home = make_codex_home(tmp_path, server, hooks=recorder.hooks("Stop", "Interrupt"))
        run = run_codex_interrupted(home, server, "hang", timeout=30)
    assert not run.timed_out and run.returncode != 0, run.describe()
    [aborted] = event_payloads(read_jsonl(home.root_rollout()), "turn_aborted")
    assert aborted["reason"] == "interrupted"
    assert len(recorder.wait_for("Interrupt")) == 1 and recorder.records("Stop") == []


def test_codex_goal_tools(tmp_path: Path) -> None:
    """create_goal / update_goal calls reach Codex's goal store (goals_1.sqlite)."""
    script = {"root": [create_goal("ship the thing"), update_goal("complete"), Text("goal done")]}
    with FakeResponses(script) as server:
        home = make_codex_home(tmp_path, server)
        run = run_codex(home, "set a goal")
    assert run.returncode == 0, run.describe()
    with sqlite3.connect(home.codex_home / "goals_1.sqlite") as db:
        rows = db.execute("SELECT objective, status FROM thread_goals").fetchall()
    assert rows == [("ship the thing", "complete")]
    assert server.remaining("root") == 0


# ==== Claude Code =============================================================================


def test_claude_simple_turn(tmp_path: Path, recorder: Recorder) -> None:
    """A text-only print turn fires Stop with no background tasks and writes the transcript."""
    with FakeMessages({"main": [CText("FAKE-FINAL: hello")]}) as server:
        home = make_claude_home(tmp_path, server, hooks=recorder.hooks("Stop", "SessionEnd"))
        run = run_claude(home, "say hello")
    assert run.returncode == 0, run.describe()
    [stop] = recorder.payloads("Stop")
    assert (stop["last_assistant_message"], stop["background_tasks"]) == ("FAKE-FINAL: hello", [])
    [transcript] = home.transcripts()
    assert transcript.stem == stop["session_id"]
    assert run.stdout_json()[-1]["result"] == "FAKE-FINAL: hello"
    # 2.1.197 probes `HEAD /` first; 2.1.332 sends no probe.
    assert [r.method for r in server.requests if r.method != "HEAD"] == ["POST"] and not server.unscripted
    assert [r.path for r in server.requests if r.method == "HEAD"] in ([], ["/"])


def test_claude_tool_call(tmp_path: Path, recorder: Recorder) -> None:
    """A Bash tool_use really runs and its result is sent back in the next request."""
    script = {"main": [bash("echo tool-ran > tool_output.txt && echo hi", text="Running it."), CText("done")]}
    with FakeMessages(script) as server:
        home = make_claude_home(tmp_path, server, hooks=recorder.hooks("PostToolUse", "Stop"))
        run = run_claude(home, "run the tool")
    assert run.returncode == 0, run.describe()
    assert (home.workdir / "tool_output.txt").read_text() == "tool-ran\n"
    last_user = server.requests_for("main")[1].body["messages"][-1]["content"]
    assert any(b.get("type") == "tool_result" and "hi" in str(b.get("content")) for b in last_user)
    assert recorder.payloads("PostToolUse")[0]["tool_response"]["stdout"] == "hi"
    assert recorder.payloads("Stop")[0]["last_assistant_message"] == "done"


def test_claude_529_fires_stop_failure(tmp_path: Path, recorder: Recorder) -> None:
    """A 529 on every attempt (one retry here) ends the turn with StopFailure instead of Stop."""
    with FakeMessages({"main": [api_error(529), api_error(529)]}) as server:
        home = make_claude_home(tmp_path, server, hooks=recorder.hooks("Stop", "StopFailure"), max_retries=1)
        run = run_claude(home, "overload me")
        [failure] = recorder.wait_for("StopFailure")  # fire-and-forget: may land after exit
    assert not run.timed_out and run.returncode == 1, run.describe()
    assert failure["stdin"]["error"] == "server_error"
    assert recorder.records("Stop") == [] and len(server.requests_for("main")) == 2
    errors = [r for r in read_jsonl(home.transcripts()[0]) if r.get("isApiErrorMessage")]
    assert [e["apiErrorStatus"] for e in errors] == [529]


def test_claude_background_bash(tmp_path: Path, recorder: Recorder) -> None:
    """The first Stop lists the running background shell; its completion starts a second turn."""
    script = {
        "main": [
            bash("sleep 1; echo BG-DONE", "Sleep in background", run_in_background=True),
            CText("turn end; background still running"),
            CText("FINAL after background"),
        ]
    }
    with FakeMessages(script) as server:
        home = make_claude_home(tmp_path, server, hooks=recorder.hooks("Stop"))
        run = run_claude(home, "start a background job")
    assert run.returncode == 0, run.describe()
    first, second = recorder.payloads("Stop")
    [task] = first["background_tasks"]
    assert (task["type"], task["status"], task["command"]) == ("shell", "running", "sleep 1; echo BG-DONE")
    assert (second["background_tasks"], second["last_assistant_message"]) == ([], "FINAL after background")
    assert "<task-notification>" in str(server.requests_for("main")[2].body["messages"][-1])


def test_claude_subagent_routes_to_sub(tmp_path: Path, recorder: Recorder) -> None:
    """An Agent tool_use starts a subagent whose own request is answered from the 'sub' script."""
    script: Script = {"main": [agent("do the sub work"), CText("root done")], "sub": [CText("SUB-RESULT: ok")]}
    with FakeMessages(script) as server:
        home = make_claude_home(tmp_path, server, hooks=recorder.hooks("SubagentStop", "Stop"))
        run = run_claude(home, "delegate")
    assert run.returncode == 0, run.describe()
    assert [r.route for r in server.requests if r.method == "POST"] == ["main", "sub", "main"]
    assert recorder.payloads("SubagentStop")[0]["last_assistant_message"] == "SUB-RESULT: ok"
    assert len(home.subagent_transcripts()) == 1 and len(run.session_files) == 2 and not server.unscripted


def test_claude_goal_evaluator(tmp_path: Path, recorder: Recorder) -> None:
    """`/goal` asks the 'goal' route; a not-met verdict continues the turn, a met one ends it."""
    script: Script = {
        "main": [CText("working on it"), CText("now done")],
        "goal": [GoalVerdict(False, "not yet"), GoalVerdict(True, "met")],
    }
    with FakeMessages(script) as server:
        home = make_claude_home(tmp_path, server, hooks=recorder.hooks("Stop"))
        run = run_claude(home, "/goal the work is done")
    assert run.returncode == 0, run.describe()
    assert [r.route for r in server.requests if r.method == "POST"] == ["main", "goal", "main", "goal"]
    assert [s["stop_hook_active"] for s in recorder.payloads("Stop")] == [False, True]
    statuses = [
        r["attachment"]
        for r in read_jsonl(home.transcripts()[0])
        if r.get("type") == "attachment" and r["attachment"].get("type") == "goal_status"
    ]
    assert statuses[-1]["met"] is True


def test_claude_sigint_mid_stream(tmp_path: Path, recorder: Recorder) -> None:
    """SIGINT during a stalled stream ends `claude -p` with no Stop or StopFailure, only SessionEnd."""
    with FakeMessages({"main": [CStall()]}) as server:
        home = make_claude_home(tmp_path, server, hooks=recorder.hooks("Stop", "StopFailure", "SessionEnd"))
        run = run_claude_interrupted(home, server, "hang", timeout=30)
        recorder.wait_for("SessionEnd")
    assert not run.timed_out, run.describe()
    assert run.stdout_json()[-1]["terminal_reason"] == "aborted_streaming"
    assert recorder.labels() == ["SessionEnd"]
    # The "[Request interrupted by user]" record is flushed in only ~3 runs of 4: not asserted.
    users = [r for r in read_jsonl(home.transcripts()[0]) if r.get("type") == "user"]
    assert users[0]["message"]["content"] == "hang"
