"""The Copilot CLI gate: which task a signal ends, and whether that task truly has no more work.

Candidates come in two kinds (docs/gate.md, "Copilot CLI"):

* a **signal** (``agentStop`` / ``sessionEnd`` hook): keyed by its own timestamp, no task yet. Once
  the session log has caught up with it, the gate finds the task in force at that moment and folds
  the signal into the task's key (``merged``); the task is then judged like any candidate;
* a **task** (``interaction_id`` set; merged signals, or the scanner's own candidate).

The ladder (:mod:`donebell.workers.kit.ladder`):

1. identity      a session id and the log's path
2. log           the session log can be read (missing: lag for :data:`LAG_SECONDS`, then unknown)
3. caught-up     a signal: the log reaches the signal's moment (else it still lags). Copilot writes
                 the log in batches after the hook runs, and in order: once a record stamped at or
                 after the signal is on disk, so is everything before it, the turn the signal ends
                 included (this evidence replaced a fixed 0.5 s wait after every signal)
4. task          the signal's task (then ``merged`` into its key) or the candidate's own task
5. newer-task    a later prompt in the session -> ``superseded``
6. ended         an API error ends the task as ``failed``, an interrupt as ``stopped``
7. root-idle     the root turn ended and no Stop hook is still deciding (a block: one more turn)
8. background    no background shell / agent of the session still running (the CLI gone ends them)
9. quiet-window  the log unchanged for ``idle_grace_seconds``, unless it ends with ``session.shutdown``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from donebell.shared.keys import event_key
from donebell.workers.agents.copilot.events import SessionLog, Task, read_log
from donebell.workers.kit import ladder
from donebell.workers.kit.gate_context import GateContext
from donebell.workers.kit.hook_context import stored_excerpt
from donebell.workers.kit.ladder import SKIP_REST, Evaluation, Outcome
from donebell.workers.kit.verdict import Verdict
from donebell.workers.kit.weak_merge import MERGED

NAME = "copilot"
#: How long a signal may wait for the log to reach it; it appears 38-160 ms after the first
#: agentStop hook starts (docs/agent-facts.md).
LAG_SECONDS = 5.0
LAG_RETRY_SECONDS = 0.25
BUSY_RETRY_SECONDS = 1.0
KILLED_NOTE = "background work stopped when Copilot CLI exited"


class CopilotEvaluation(Evaluation):
    """The evidence the Copilot checks gather about one candidate, in ladder order."""

    min_wait = 0.05

    def __init__(self, record: dict[str, Any], ctx: GateContext) -> None:
        super().__init__(record, ctx)
        path = record.get("transcript_path")
        self.path = path if isinstance(path, str) and path else None
        if self.path is not None:
            self.watch.append(Path(self.path))
        self.session_id = ""
        self.log: SessionLog | None = None
        self.task: Task | None = None
        self.note: str | None = None
        changed = record.get("updated_at") or record.get("created_at") or ctx.now
        self.signalled_at = float(changed) if isinstance(changed, (int, float)) else ctx.now

    def promote(self) -> Verdict:
        log, task = self.log, self.task
        outcome = self.record.get("outcome") or "done"
        fields: dict[str, Any] = {"outcome": outcome}
        if task is not None:
            if task.error:  # the API's own text may echo a credential
                from donebell.shared.text.redaction import redact

                fields.update(outcome="failed", error=redact(task.error))
            elif task.aborted:
                fields["outcome"] = "stopped"
            fields.update(task_started_ms=task.started_ms, task_ended_ms=task.last_turn_end_ms or self.now * 1000)
            fields["last_message"] = stored_excerpt(task.last_reply, self.settings.include_message is True)
            fields["has_final_message"] = task.last_reply is not None
        if log is not None and log.cwd and not self.record.get("cwd"):
            fields["cwd"] = log.cwd  # the log watcher's candidate: the project names the push
        if self.note:
            fields["note"] = self.note
        reason = "balanced" if self.assumed else "idle"
        skipped = [f"{log.invalid_lines} unreadable log line(s) skipped"] if log and log.invalid_lines else []
        evidence = "; ".join([f"task {task.interaction_id} ended" if task else "no log", *skipped, *self.assumed])
        fingerprint = (log.size, log.mtime) if log is not None else ()
        return Verdict.promote(reason, evidence, fields=fields, fingerprint=fingerprint)


def check_identity(ev: CopilotEvaluation) -> Outcome:
    session_id = ev.record.get("session_id")
    if not isinstance(session_id, str) or not session_id or ev.path is None:
        return ev.unknown("no-ids", "candidate lacks a session id or the session log's path") or SKIP_REST
    ev.session_id = session_id
    return None


def check_log(ev: CopilotEvaluation) -> Outcome:
    assert ev.path is not None
    log = read_log(ev.path)
    if not log.exists or log.error:
        if ev.now - ev.signalled_at < LAG_SECONDS:
            return ev.busy("log-lag", "session log not written yet", LAG_RETRY_SECONDS)
        return ev.unknown("log-missing", log.error or "session log missing") or SKIP_REST
    ev.log = log
    return None


def check_caught_up(ev: CopilotEvaluation) -> Outcome:
    signal_ms = ev.record.get("signal_ms")
    if ev.log is None or ev.record.get("interaction_id") is not None or not isinstance(signal_ms, (int, float)):
        return None
    if ev.log.last_ms >= signal_ms:
        return None
    if ev.now - ev.signalled_at < LAG_SECONDS:
        return ev.busy("log-lag", "the session log has not reached the signal yet", LAG_RETRY_SECONDS)
    return ev.unknown("log-behind", "the session log never reached the signal")


def check_task(ev: CopilotEvaluation) -> Outcome:
    log = ev.log
    if log is None:
        return None
    interaction = ev.record.get("interaction_id")
    if isinstance(interaction, str):
        ev.task = log.task(interaction)
        if ev.task is None:
            return ev.unknown("task-not-in-log", f"no prompt of task {interaction} in the session log")
        return None
    signal_ms = ev.record.get("signal_ms")
    task = log.task_at(float(signal_ms)) if isinstance(signal_ms, (int, float)) else None
    if task is None and log.partial:
        return ev.unknown("no-task", "no prompt before the signal in the part of the session log read")
    if task is None:  # the log reached the signal: a session that ended before any prompt
        return Verdict.suppress("technical-turn", f"{ev.record.get('signal')} of a session with no prompt before it")
    real = event_key(NAME, ev.session_id, task.interaction_id)
    fields = {"merged_into": real, "interaction_id": task.interaction_id, "task_started_ms": task.started_ms}
    return Verdict.suppress(MERGED, f"{ev.record.get('signal')} of task {task.interaction_id}", fields=fields)


def check_newer_task(ev: CopilotEvaluation) -> Outcome:
    if ev.log is None or ev.task is None:
        return None
    newer = ev.log.newer_than(ev.task)
    if newer is not None:
        return Verdict.suppress("superseded", f"a later prompt (task {newer.interaction_id}) in the session")
    return None


def check_ended(ev: CopilotEvaluation) -> Outcome:
    """An API error or an interrupt ends the task: nothing of it runs on once the log is idle."""
    task = ev.task
    if task is not None and (task.error or task.aborted) and ev.log is not None and not ev.log.busy:
        return SKIP_REST
    return None


def check_root_idle(ev: CopilotEvaluation) -> Outcome:
    log = ev.log
    if log is None:
        return None
    if log.busy:
        return ev.busy("turn-running", "the root agent's turn is still running", BUSY_RETRY_SECONDS)
    if log.open_stop_hooks:
        return ev.busy("stop-hook-running", "an agentStop hook is still deciding", LAG_RETRY_SECONDS)
    return None


def check_background(ev: CopilotEvaluation) -> Outcome:
    log = ev.log
    if log is None:
        return None
    if log.lost_background:
        ev.note = KILLED_NOTE
    if not log.background:
        return None
    orphan_at = log.mtime + ev.settings.subagent_orphan_seconds
    if ev.now >= orphan_at:
        ev.note = "background work silent past the orphan bound"
        return None
    running = ", ".join(log.background)
    return ev.busy("background-running", f"{running} still running", BUSY_RETRY_SECONDS * 5, orphan_at=orphan_at)


def check_quiet_window(ev: CopilotEvaluation) -> Outcome:
    if ev.log is None or ev.log.shutdown:  # the CLI wrote session.shutdown and exited: nothing more comes
        return None
    return ev.quiet_window(ev.log.mtime, "session log")


LADDER: ladder.Ladder[CopilotEvaluation] = (
    ("identity", check_identity),
    ("log", check_log),
    ("caught-up", check_caught_up),
    ("task", check_task),
    ("newer-task", check_newer_task),
    ("ended", check_ended),
    ("root-idle", check_root_idle),
    ("background", check_background),
    ("quiet-window", check_quiet_window),
)


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """Decide one Copilot candidate."""
    return ladder.run(LADDER, CopilotEvaluation(record, ctx))
