"""Both provider gates are one ladder of named checks; the last evaluation's steps are stored and explained."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.statedir import StateDir
from donebell.supervisor.commands.explain import main
from donebell.workers.agents.claude import gate as claude
from donebell.workers.agents.codex import gate as codex
from donebell.workers.kit import ladder
from fixtures.gate.claude_kit import ClaudeWorld, claude_lines
from fixtures.gate.kit import (
    ABORT_THREAD,
    ABORT_TURN,
    CHILD_THREAD,
    PARENT_THREAD,
    PARENT_TURN,
    SIMPLE_THREAD,
    SIMPLE_TURN,
    CodexWorld,
    ev,
    fast_settings,
    gate,
    last_decision,
    later,
    lines_of,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "gate.md"
TOOL_SESSION = "bcd90786-c5dc-4556-ab76-41b75d464f9d"
TOOL_PROMPT = "b522e1c8-ef06-4602-a43c-969646624918"
CODEX_STEPS = ["identity", "root", "completion", "goal", "technical-turn", "descendants", "quiet-window"]


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> CodexWorld:
    return CodexWorld(isolated_env["codex_home"], state)


def test_a_held_root_records_every_step_up_to_the_one_that_waits(
    world: CodexWorld, state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    """A root held by a running child: the steps before it passed, descendants waits; explain prints them."""
    world.write_rollout(PARENT_THREAD, lines_of("subagent-parent.jsonl"))
    world.write_rollout(CHILD_THREAD, lines_of("subagent-child.jsonl")[:9])
    world.add_thread(PARENT_THREAD)
    world.add_edge(PARENT_THREAD, CHILD_THREAD)
    key = world.submit(PARENT_THREAD, PARENT_TURN)
    gate(state, fast_settings())
    steps = last_decision(state, key)["record"]["probe"]["ladder"]
    assert steps == [[name, "passed"] for name in CODEX_STEPS[:5]] + [["descendants", "wait child-running"]]
    assert main([PARENT_THREAD]) == 0
    out = capsys.readouterr().out
    assert "gate checks, last evaluation:" in out
    assert re.search(r"technical-turn\s+passed\n\s+descendants\s+wait child-running", out), out


def test_a_suppression_receipt_keeps_the_steps_that_decided(
    world: CodexWorld, state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    """A superseded turn's receipt carries the ladder up to the completion step, and explain --json shows it."""
    world.write_rollout(SIMPLE_THREAD, [*lines_of("simple-exec.jsonl"), ev("task_started", "t-next")])
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    gate(state, fast_settings())
    receipt = last_decision(state, key)["record"]
    assert receipt["probe_ladder"] == [
        ["identity", "passed"],
        ["root", "passed"],
        ["completion", "suppress superseded"],
    ]
    assert main([key, "--json"]) == 0
    assert '"suppress superseded"' in capsys.readouterr().out


def test_balanced_marks_the_assumed_step(world: CodexWorld, state: StateDir) -> None:
    """A silent open turn promoted by balanced after the grace shows its completion step as assumed."""
    world.write_rollout(ABORT_THREAD, lines_of("abort-sigint-turn_aborted.jsonl")[:10])
    key = world.submit(ABORT_THREAD, ABORT_TURN)
    settings = fast_settings(idle_detection_mode="balanced", idle_probe_grace_seconds=30)
    gate(state, settings)
    world.age(ABORT_THREAD, 60)
    gate(state, settings, later(31))
    outbox = state.read("outbox", key)
    assert outbox is not None and outbox["verdict"] == "balanced"
    assert ["completion", "assumed"] in outbox["probe"]["ladder"]
    assert [name for name, _ in outbox["probe"]["ladder"]] == CODEX_STEPS


def test_a_promoted_claude_prompt_passed_all_nine_checks(isolated_env: dict[str, Path], state: StateDir) -> None:
    """A plain Claude Stop: every check of the Claude ladder passed, in the documented order."""
    claude_world = ClaudeWorld(isolated_env["claude_dir"] / "projects" / "-w", state)
    claude_world.transcript(TOOL_SESSION, claude_lines("print-tool.jsonl"))
    claude_world.session_record(TOOL_SESSION, 1, TOOL_PROMPT)
    key = claude_world.submit(TOOL_SESSION, TOOL_PROMPT, epoch=1)
    gate(state, fast_settings(), later(1))
    outbox = state.read("outbox", key)
    assert outbox is not None
    assert outbox["probe"]["ladder"] == [[name, "passed"] for name in ladder.names(claude.LADDER)]


@pytest.mark.parametrize(("heading", "steps"), [("Codex", codex.LADDER), ("Claude", claude.LADDER)])
def test_docs_list_each_ladder_in_order(heading: str, steps: ladder.Ladder[Any]) -> None:
    """docs/gate.md names every check of each provider's ladder, in the order the gate runs them."""
    section = DOCS.read_text(encoding="utf-8").split(f"## {heading} decision order", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"^\d+\. \*\*[^*]+\*\* \(`([a-z-]+)`[;)]", section, flags=re.M)
    assert named == ladder.names(steps)


def test_a_decision_before_the_ladder_replaces_an_older_trace(world: CodexWorld, state: StateDir) -> None:
    """Switched to idle_detection_mode off, the promotion's trace is the one mode-off step, not the old wait."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl")[:-1])
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    gate(state, fast_settings())
    assert last_decision(state, key)["record"]["probe"]["ladder"][-1] == ["completion", "wait awaiting-completion"]
    gate(state, fast_settings(idle_detection_mode="off"))
    outbox = state.read("outbox", key)
    assert outbox is not None and outbox["probe"]["ladder"] == [["mode-off", "promote off"]]


@pytest.mark.parametrize(
    ("mode", "after", "expected"),
    [
        ("strict", 0.0, "wait remote-unresponsive"),
        ("strict", 100.0, "suppress unverifiable"),
        ("balanced", 100.0, "promote balanced"),
    ],
)
def test_an_offline_remote_root_records_one_remote_root_step(mode: str, after: float, expected: str) -> None:
    """A root that does not answer: no provider check ran, so the trace is the remote-root step alone."""
    from donebell.shared.records import new_candidate
    from donebell.workers.gate.remote import UNRESPONSIVE, offline_verdict

    record = new_candidate(key="k" * 64, provider="codex", source="remote-scanner", thread_id="t", turn_id="u")
    settings = fast_settings(idle_detection_mode=mode, idle_probe_grace_seconds=30)
    verdict = offline_verdict({**record}, settings, record["created_at"] + after, UNRESPONSIVE, "no answer")
    assert verdict.probe_update["ladder"] == [["remote-root", expected]]


@pytest.mark.parametrize(
    ("last", "stored", "shown"),
    [
        (
            {"decision": "wait", "reason": "quiet-window"},
            [["root", "passed"], ["quiet-window", "wait quiet-window"]],
            True,
        ),
        ({"decision": "promote", "reason": "idle"}, [["root", "passed"], ["quiet-window", "passed"]], True),
        ({"decision": "promote", "reason": "balanced"}, [["root", "assumed"]], True),
        # the commit's own "changed" wait ran no ladder: the stored steps led to an older decision
        ({"decision": "wait", "reason": "changed"}, [["root", "passed"], ["quiet-window", "passed"]], False),
        ({"decision": "suppress", "reason": "superseded"}, [["quiet-window", "wait quiet-window"]], False),
        ({"decision": "wait", "reason": "quiet-window"}, "not a list", False),
    ],
)
def test_explain_shows_stored_steps_only_when_they_led_to_the_last_decision(
    last: dict[str, str], stored: object, shown: bool
) -> None:
    """A trace is printed only next to the decision it produced, never next to a later one it did not."""
    from donebell.supervisor.commands.explain import current_ladder

    assert current_ladder(stored, [{"decision": "wait", "reason": "x"}, last]) == (stored if shown else [])
