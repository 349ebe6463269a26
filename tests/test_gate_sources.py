"""The same gate decision whichever source (Stop hook, legacy notify, scanner) reports a turn, in any order."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir
from fixtures.gate.kit import (
    CHILD_THREAD,
    PARENT_THREAD,
    PARENT_TURN,
    SIMPLE_THREAD,
    SIMPLE_TURN,
    CodexWorld,
    fast_settings,
    gate,
    lines_of,
    turn_records,
    where,
)

SOURCES = ("codex-stop", "codex-notify", "scanner")
ORDERS = list(itertools.permutations(SOURCES))


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> CodexWorld:
    return CodexWorld(isolated_env["codex_home"], state)


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(s.split("-")[-1] for s in o) for o in ORDERS])
@pytest.mark.parametrize("gate_between", [False, True])
def test_completed_turn_sends_exactly_once(
    world: CodexWorld, state: StateDir, order: tuple[str, ...], gate_between: bool
) -> None:
    """Three signals of one finished root turn, in any order, with or without gate passes between: one outbox record."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    world.add_thread(SIMPLE_THREAD)
    keys = set()
    for source in order:
        keys.add(world.submit(SIMPLE_THREAD, SIMPLE_TURN, source=source))
        if gate_between:
            gate(state, fast_settings())
    gate(state, fast_settings())
    assert len(keys) == 1 and state.count("outbox") == 1 and state.count("pending") == 0
    assert state.count("suppressed") == 0


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(s.split("-")[-1] for s in o) for o in ORDERS])
def test_running_child_holds_whatever_the_source(world: CodexWorld, state: StateDir, order: tuple[str, ...]) -> None:
    """A root with a running child stays pending for every source order; the child's end releases exactly one."""
    child = lines_of("subagent-child.jsonl")
    world.write_rollout(PARENT_THREAD, lines_of("subagent-parent.jsonl"))
    world.write_rollout(CHILD_THREAD, child[:9])
    world.add_thread(PARENT_THREAD)
    world.add_edge(PARENT_THREAD, CHILD_THREAD)
    for source in order:
        key = world.submit(PARENT_THREAD, PARENT_TURN, source=source)
        gate(state, fast_settings())
        assert where(state, key) == "pending"
    world.write_rollout(CHILD_THREAD, child)
    gate(state, fast_settings())
    assert state.count("outbox") == 1 and where(state, key) == "outbox"


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(s.split("-")[-1] for s in o) for o in ORDERS])
def test_stop_before_completion_then_other_sources(world: CodexWorld, state: StateDir, order: tuple[str, ...]) -> None:
    """Signals arriving before and after task_complete is written converge on one decision."""
    recs = lines_of("simple-exec.jsonl")
    world.write_rollout(SIMPLE_THREAD, recs[:-1])
    world.add_thread(SIMPLE_THREAD)
    first, *rest = order
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN, source=first)
    gate(state, fast_settings())
    assert where(state, key) == "pending"
    world.append(SIMPLE_THREAD, recs[-1:])
    for source in rest:
        world.submit(SIMPLE_THREAD, SIMPLE_TURN, source=source)
    gate(state, fast_settings())
    assert where(state, key) == "outbox" and state.count("outbox") == 1


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(s.split("-")[-1] for s in o) for o in ORDERS])
def test_superseded_predecessor_whatever_the_source(world: CodexWorld, state: StateDir, order: tuple[str, ...]) -> None:
    """Two turns of one root reported by different sources: the older is superseded, the newer sent."""
    world.write_rollout(SIMPLE_THREAD, [*lines_of("simple-exec.jsonl"), *turn_records("t-second")])
    world.add_thread(SIMPLE_THREAD)
    newer = world.submit(SIMPLE_THREAD, "t-second", source=order[0])
    older = world.submit(SIMPLE_THREAD, SIMPLE_TURN, source=order[1])
    gate(state, fast_settings())
    assert where(state, older) == "suppressed" and where(state, newer) == "outbox"
