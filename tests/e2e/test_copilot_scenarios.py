"""The whole product around the real GitHub Copilot CLI in print mode (`copilot -p`).

Each scenario wires a throwaway COPILOT_HOME with `donebell install --service none --copilot`, runs
the real supervisor, drives the real CLI against the scripted Messages server (`FakeCopilot`) and
asserts the exact notifications the ntfy stand-in received (count and kind), that nothing more
arrives for a settle period, and that `donebell status` is healthy. Two records prove the CLI
really ran each scenario: the model requests the fake served (`server.served()`) and a recorder
hook file beside donebell's (`recorder.labels()`: the hooks Copilot called, in order).

What Copilot does per scenario (1.0.102, docs/agent-facts.md "Copilot CLI"): a background shell or
agent outlives the root's first `agentStop` and `sessionEnd`; its completion turn
(`<system_notification>`) ends with the task's real `agentStop`; a detached shell never reports back.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from support.fake_copilot import FakeCopilot, Stall, Text, shell, task

from e2e.copilot_harness import make_copilot_home, run_copilot, start_copilot
from e2e.copilot_product import copilot_product, install_copilot, only_session
from e2e.harness import make_claude_home
from e2e.notes import done
from e2e.product import Product
from e2e.product_scenarios import log_entries, sent_receipts
from e2e.recorder import Recorder

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("copilot_cli")]

TITLE = "work"  # the harness's work dir; the notification title is the project folder name
#: The hooks the recorder captures beside donebell's (camelCase events, Copilot's own names).
RECORDED = ("agentStop", "subagentStop", "notification", "errorOccurred", "sessionEnd")


def root_stops(recorder: Recorder) -> list[dict[str, Any]]:
    """The root's agentStop payloads (a subagent's carries `agentId`)."""
    return [p for p in recorder.payloads("agentStop") if "agentId" not in p]


def notices(recorder: Recorder) -> list[str]:
    return [p.get("notification_type", "?") for p in recorder.payloads("notification")]


def test_copilot_simple(tmp_path: Path, recorder: Recorder) -> None:
    """A text-only `copilot -p` turn: exactly one "done" with its final message."""
    with (
        FakeCopilot({"main": [Text("FAKE-FINAL: hello")]}) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        run = run_copilot(home, "say hello")
        assert run.returncode == 0, run.describe()
        assert [r.route for r in server.served()] == ["main"] and not server.unscripted
        recorder.settle()
        assert recorder.labels() == ["agentStop", "sessionEnd"]
        session = only_session(home)
        product.expect([done(TITLE, "FAKE-FINAL: hello", session)])
        [receipt] = sent_receipts(product)
        assert receipt["session_id"] == session, receipt
        product.assert_healthy()


def test_copilot_tool(tmp_path: Path, recorder: Recorder) -> None:
    """A turn that runs a shell command notifies once, after the final answer."""
    script = {"main": [shell("echo tool-ran > tool_output.txt", text="Running it."), Text("done after the tool")]}
    with (
        FakeCopilot(script) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks("permissionRequest", *RECORDED)) as (product, home),
    ):
        run = run_copilot(home, "run the tool")
        assert run.returncode == 0, run.describe()
        assert (home.workdir / "tool_output.txt").read_text() == "tool-ran\n"
        recorder.settle()
        # permissionRequest fires for every call, even with --allow-all-tools: it is no prompt.
        assert recorder.labels() == ["permissionRequest", "agentStop", "sessionEnd"]
        product.expect([done(TITLE, "done after the tool", only_session(home))])
        product.assert_healthy()


def test_copilot_sync_subagent(tmp_path: Path, recorder: Recorder) -> None:
    """A subagent's own agentStop (its sessionId is the agent's id) is no root stop: one "done",
    for the root's final answer, under the root session."""
    script: dict[str, list[Any]] = {
        "main": [task("quick work"), Text("FINAL after the subagent")],
        "sub": [Text("SUBAGENT-RESULT: quick")],
    }
    with (
        FakeCopilot(script) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        run = run_copilot(home, "delegate")
        assert run.returncode == 0, run.describe()
        assert [r.route for r in server.served()] == ["main", "sub", "main"]
        recorder.settle()
        assert recorder.labels() == ["agentStop", "subagentStop", "agentStop", "sessionEnd"]
        sub_stop, root_stop = recorder.payloads("agentStop")
        assert sub_stop["agentId"] == sub_stop["sessionId"] != root_stop["sessionId"], (sub_stop, root_stop)
        product.expect([done(TITLE, "FINAL after the subagent", only_session(home))])
        product.assert_healthy()


def test_copilot_background_agent(tmp_path: Path, recorder: Recorder) -> None:
    """A background agent still working at the root's first agentStop and sessionEnd holds the task:
    nothing until its completion turn ends, then one "done" for that final answer."""
    script: dict[str, list[Any]] = {
        "main": [task("slow work", name="fakebg", background=True), Text("turn end; the agent works"), Text("FINAL")],
        "sub": [Stall(then=Text("SUBAGENT-RESULT: slow"))],
    }
    with (
        FakeCopilot(script) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        cli = start_copilot(home, "delegate in the background")
        try:
            server.wait_for_stall(timeout=60)
            recorder.wait_for("sessionEnd", timeout=30)  # -p fires it at every idle, not at the end
            assert len(root_stops(recorder)) == 1
            product.expect_none(2.0)  # the background agent still works
        finally:
            released = time.time()
            server.release_stalls()
        run = cli.wait(60)
        assert run.returncode == 0, run.describe()
        assert [r.route for r in server.served()] == ["main", "main", "sub", "main"]
        assert len(root_stops(recorder)) == 2 and notices(recorder) == ["agent_idle"], recorder.labels()
        product.expect([done(TITLE, "FINAL", only_session(home))], after=released)
        product.assert_healthy()


def test_copilot_background_shell(tmp_path: Path, recorder: Recorder) -> None:
    """A background shell (`mode: async`) running at the root's first agentStop holds the task until
    its `shell_completed` turn ends: one "done", after the shell, for the final answer."""
    # Paths inside the work folder: a path outside it makes Copilot ask even with --allow-all-tools.
    command = "until [ -e release-shell ]; do sleep 0.1; done; echo BG-DONE"
    script = {"main": [shell(command, background=True, shell_id="fakebg"), Text("turn end; shell runs"), Text("FINAL")]}
    with (
        FakeCopilot(script) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        cli = start_copilot(home, "run it in the background")
        try:
            recorder.wait_for("sessionEnd", timeout=60)
            assert len(root_stops(recorder)) == 1
            product.expect_none(2.0)  # the shell still runs
        finally:
            released = time.time()
            (home.workdir / "release-shell").touch()
        run = cli.wait(60)
        assert run.returncode == 0, run.describe()
        assert [r.route for r in server.served()] == ["main"] * 3
        assert len(root_stops(recorder)) == 2 and notices(recorder) == ["shell_completed"], recorder.labels()
        product.expect([done(TITLE, "FINAL", only_session(home))], after=released)
        product.assert_healthy()


def test_copilot_detached_shell(tmp_path: Path, recorder: Recorder) -> None:
    """A detached shell never reports back and does not hold the task: the CLI exits at once and
    one "done" comes while the shell still runs."""
    script = {
        "main": [shell("sleep 8; touch detached-finished", detach=True, shell_id="fakedt"), Text("FINAL, detached")]
    }
    try:
        with (
            FakeCopilot(script) as server,
            copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
        ):
            run = run_copilot(home, "start it detached")
            assert run.returncode == 0, run.describe()
            product.expect([done(TITLE, "FINAL, detached", only_session(home))], settle=1.0)
            assert not (home.workdir / "detached-finished").exists(), "the notification waited for the shell"
            assert len(server.served()) == 2 and len(root_stops(recorder)) == 1
            product.assert_healthy()
    finally:
        kill_left_behind(tmp_path)


def kill_left_behind(tmp_path: Path) -> None:
    """The detached shell left the CLI's process group: end what still runs in this test's folder."""
    for proc in psutil.process_iter(["cwd"]):
        with contextlib.suppress(psutil.Error):
            if str(proc.info["cwd"] or "").startswith(str(tmp_path)):
                proc.kill()


def test_copilot_stop_hook_block(tmp_path: Path, recorder: Recorder) -> None:
    """Another agentStop hook blocks the first stop (`decision: block`): one more turn whose prompt
    is the reason, and one "done", for that turn's answer."""
    block_once = (
        "import json,sys\np=json.load(sys.stdin)\nif not p.get('stop_hook_active'):"
        " print(json.dumps({'decision':'block','reason':'HOOK-BLOCK: one more turn'}))"
    )
    hooks = recorder.hooks(*RECORDED) | {"agentStop": [recorder.command("agentStop"), blocking(block_once)]}
    script = {"main": [Text("first answer, blocked"), Text("FINAL after the block")]}
    with FakeCopilot(script) as server, copilot_product(tmp_path, server, hooks=hooks) as (product, home):
        run = run_copilot(home, "do it twice")
        assert run.returncode == 0, run.describe()
        assert len(server.served()) == 2
        assert [p["stop_hook_active"] for p in recorder.payloads("agentStop")] == [False, True]
        product.expect([done(TITLE, "FINAL after the block", only_session(home))])
        product.assert_healthy()


def blocking(source: str) -> str:
    """A hook command running ``source`` under this interpreter (its stdout is the hook's answer)."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(source)}"


def test_copilot_resume(tmp_path: Path) -> None:
    """`copilot --resume=<id> -p` continues the finished session (same id, same log): a second,
    separate "done" for the second task."""
    with FakeCopilot({"main": [Text("first answer")]}) as server, copilot_product(tmp_path, server) as (product, home):
        assert run_copilot(home, "first task").returncode == 0
        session = only_session(home)
        first = done(TITLE, "first answer", session)
        product.expect([first])
        server.add("main", Text("second answer"))
        run = run_copilot(home, "second task", extra_args=[f"--resume={session}"])
        assert run.returncode == 0, run.describe()
        assert only_session(home) == session and "session.resume" in home.event_types(session)
        product.expect([first, done(TITLE, "second answer", session)])
        assert len(sent_receipts(product)) == 2
        product.assert_healthy()


def test_copilot_scanner_alone_notifies_once(tmp_path: Path) -> None:
    """donebell's hook file gone (never installed, or the hooks killed): the local scanner reads the
    session log and gives the one "done", for the right project and final message."""
    with (
        FakeCopilot({"main": [Text("FAKE-FINAL: unhooked")]}) as server,
        copilot_product(tmp_path, server) as (
            product,
            home,
        ),
    ):
        for wired in home.installed_hook_files():
            wired.unlink()
        run = run_copilot(home, "say hello")
        assert run.returncode == 0, run.describe()
        product.expect([done(TITLE, "FAKE-FINAL: unhooked", only_session(home))], deadline=40)
        [receipt] = sent_receipts(product)
        assert receipt["sources"] == ["copilot-events"], receipt
        product.assert_healthy()


def shell_form(hooks: dict[str, Any]) -> dict[str, Any]:
    """Claude hook entries as one shell string each (what install writes for Claude before 2.1.197):
    Copilot runs a Claude entry's ``command`` through the shell and ignores an exec form's ``args``."""
    for groups in hooks.values():
        for entry in (e for group in groups for e in group["hooks"]):
            entry["command"] = shlex.join([entry["command"], *entry.pop("args", [])])
    return hooks


@pytest.mark.usefixtures("agent_clis")
def test_copilot_runs_a_projects_claude_hooks_once(tmp_path: Path, recorder: Recorder) -> None:
    """A trusted project's `.claude/settings.json` carrying donebell's Claude hooks: Copilot runs
    them too (Claude-shaped payloads, `COPILOT_CLI=1`); donebell's Claude hook ignores them, so
    they are no second notification."""
    with FakeCopilot({"main": [Text("FAKE-FINAL: both wired")]}) as server, Product(tmp_path) as product:
        home = make_copilot_home(tmp_path, server, extra_env=product.agent_env())
        claude = make_claude_home(tmp_path, "http://127.0.0.1:9", extra_env=product.agent_env())
        product.install(claude=claude)
        install_copilot(product, home)
        hooks = shell_form(json.loads((claude.config_dir / "settings.json").read_text())["hooks"])
        hooks["Stop"].append({"hooks": [{"type": "command", "command": recorder.command("Stop")}]})
        (home.workdir / ".claude").mkdir()
        (home.workdir / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
        product.start()
        run = run_copilot(home, "say hello", extra_args=["--trust-folder"])
        assert run.returncode == 0, run.describe()
        [claude_stop] = recorder.records("Stop")  # the project's Claude hooks did run
        assert "COPILOT_CLI" in claude_stop["env_keys"], claude_stop
        product.expect([done(TITLE, "FAKE-FINAL: both wired", only_session(home))])
        [receipt] = sent_receipts(product)
        assert receipt["provider"] == "copilot", receipt
        ignored = {e["hook_event"] for e in log_entries(product, msg="claude hook run by copilot: ignored")}
        assert {"UserPromptSubmit", "Stop", "SessionEnd"} <= ignored, product.diagnostics()
        product.assert_healthy()
