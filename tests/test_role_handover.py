"""A bounded worker that finds work written during its exit does not strand it."""

from __future__ import annotations

from pathlib import Path

from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate
from donebell.shared.statedir import StateDir
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.role import Role, run_role


class _LateArrivalRole(Role):
    """Idle every pass; its first pass lets a 'hook' write a record after the idle decision."""

    name = "handover-test"
    passes: list[int] = []

    def bounded(self) -> bool:
        return True

    def run_pass(self) -> PassResult:
        seen = self.state.count("pending")
        type(self).passes.append(seen)
        if len(type(self).passes) == 1:
            key = event_key("codex", "late", "1")
            self.state.create("pending", new_candidate(key=key, provider="codex", source="codex-stop"))
        return PassResult(idle=True)

    def work_arrived_since(self, wall_time: float) -> bool:
        return self.state.changed_since("pending", wall_time) and self.state.count("pending") > (type(self).passes[-1])


class _QuietRole(_LateArrivalRole):
    name = "handover-quiet"
    passes: list[int] = []

    def run_pass(self) -> PassResult:
        type(self).passes.append(self.state.count("pending"))
        return PassResult(idle=True)


def test_record_written_while_a_bounded_run_exits_gets_another_pass(isolated_env: dict[str, Path]) -> None:
    """Work that appears after the idle decision is picked up after the lock is released."""
    assert run_role(_LateArrivalRole, []) == 0
    assert _LateArrivalRole.passes == [0, 1]
    state = StateDir(isolated_env["state"])
    assert state.lock_owner("handover-test") is None  # the lock was released at the end


def test_quiet_bounded_run_exits_after_one_pass(isolated_env: dict[str, Path]) -> None:
    """Without late work a bounded run makes exactly one pass and exits."""
    assert run_role(_QuietRole, []) == 0
    assert _QuietRole.passes == [0]
