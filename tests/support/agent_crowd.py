"""Many root tasks, Codex, Claude and Copilot, ending at once as the real agents end them.

Each task is set up while "running" (its rollout, transcript or session log written up to the
final answer, Claude's UserPromptSubmit hook fired), then ended on a schedule, in the order the
real CLIs use:

* Codex (the recorded ``simple-exec`` rollout, :class:`support.rig.Rig`): the Stop hook runs and
  returns, then Codex appends ``task_complete``;
* Claude Code 2.1.332 (the recorded ``simple`` run, fresh session and prompt ids): the transcript
  gets the final assistant message, the Stop hook runs and returns, then the transcript gets the
  ``stop_hook_summary`` and its closing records;
* Copilot CLI 1.0.102 in ``-p`` (the recorded ``print-simple`` run, fresh session and interaction
  ids, in a Copilot home of its own): the turn ends and the ``agentStop`` hook runs while the
  session log still lacks the turn (Copilot flushes it in batches, after the hook); then the log
  gets the turn's end and the hook's records, the ``sessionEnd`` hook runs, and the log gets its
  records and ``session.shutdown`` as the CLI exits.

A task's end, for its notification's latency, is the last write the notification could have
waited out: its last write (the file's mtime, as the e2e suite's latency figure reads it), or,
when the notification came before that write's quiet window was over, the write before it (under
load a Claude Stop hook can outlast the window: the transcript was quiet since the final answer,
and donebell may rightly notify from it). Every hook is a real ``donebell hook`` process.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from donebell.shared.keys import event_key, sequence_id

from support.claude_fixtures import events_332, session_of, transcript_lines
from support.rig import Rig, Turn

SCENARIO = "simple"
COPILOT_SCENARIO = "print-simple"
COPILOT_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "copilot"
_STAMP = re.compile(rb'"timestamp":"[^"]*"')


@dataclass
class Task:
    """One root task: how it ends, and when it did."""

    provider: str  # "codex", "claude" or "copilot"
    sequence_id: str
    path: Path  # the rollout or transcript
    end: Any  # () -> None: the task's last steps, hooks included
    writes: list[float] = field(default_factory=list)  # the file's mtime after each final write
    hook_rc: int | None = None

    def quiet_since(self, grace: float) -> float | None:
        """When the file went quiet for ``grace`` seconds: the first final write that no other
        followed within ``grace`` (the last write, unless a hook outlasted the window)."""
        for at, after in itertools.pairwise(self.writes):
            if after - at >= grace:
                return at
        return self.writes[-1] if self.writes else None

    def waited_out(self, notified: float, grace: float) -> float:
        """The last final write whose quiet window was over when the notification came (the first
        write if none was: then the overhead reads negative, and is reported so)."""
        return max((at for at in self.writes if at + grace <= notified), default=self.writes[0])


def default_hook_command() -> list[str]:
    """This venv's ``donebell`` command (``python -m`` where there is none)."""
    script = Path(sys.executable).with_name("donebell")
    return [str(script)] if script.exists() else [sys.executable, "-m", "donebell.supervisor.cli"]


def codex_task(rig: Rig, command: list[str]) -> Task:
    turn = rig.new_turn()
    task = Task("codex", turn.sequence_id, turn.rollout, None)
    task.end = lambda: _end_codex(rig, command, turn, task)
    return task


def _end_codex(rig: Rig, command: list[str], turn: Turn, task: Task) -> None:
    task.hook_rc = run_hook(rig, command, ["codex-stop"], rig.stop_payload(turn))
    turn.completion = _restamp(turn.completion)  # Codex stamps task_complete when it writes it
    rig.complete(turn, backdate=0)
    task.writes.append(turn.rollout.stat().st_mtime)


def claude_task(rig: Rig, command: list[str]) -> Task:
    """A Claude session whose prompt was submitted (hook fired) and whose answer is being written."""
    session, prompt = str(uuid.uuid4()), str(uuid.uuid4())
    lines = _claude_lines(session, prompt)
    folder = rig.claude_dir / "projects" / "-home-dev-project"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    answer = next(i for i, line in enumerate(lines) if b'"stop_reason":"end_turn"' in line)
    summary = next(i for i, line in enumerate(lines) if b'"subtype":"stop_hook_summary"' in line)
    path.write_bytes(_restamp(b"".join(lines[:answer])))
    payloads = _claude_payloads(session, prompt, path)
    assert run_hook(rig, command, ["claude"], payloads["UserPromptSubmit"]) == 0
    key = event_key("claude", session, prompt)
    task = Task("claude", sequence_id("claude", key), path, None)

    def end() -> None:
        with open(path, "ab") as f:
            f.write(_restamp(b"".join(lines[answer:summary])))  # each record stamped as it is written
        task.writes.append(path.stat().st_mtime)
        task.hook_rc = run_hook(rig, command, ["claude"], payloads["Stop"])
        with open(path, "ab") as f:
            f.write(_restamp(b"".join(lines[summary:])))
        task.writes.append(path.stat().st_mtime)

    task.end = end
    return task


def copilot_task(rig: Rig, command: list[str], home: Path) -> Task:
    """A ``copilot -p`` session in Copilot home ``home`` whose prompt's turn is running: its log
    holds the records up to the final reply."""
    session = str(uuid.uuid4())
    log = home / "session-state" / session / "events.jsonl"
    records, payloads = _copilot_run(session, str(uuid.uuid4()), home, log)
    reply = next(i for i, r in enumerate(records) if r["type"] == "assistant.message")
    stop = next(i for i, r in enumerate(records) if (r.get("data") or {}).get("hookType") == "agentStop")
    end = next(i for i, r in enumerate(records) if (r.get("data") or {}).get("hookType") == "sessionEnd")
    log.parent.mkdir(parents=True, exist_ok=True)
    _log_records(log, records[:reply], time.time())
    interaction = next(r["data"]["interactionId"] for r in records if r["type"] == "user.message")
    task = Task("copilot", sequence_id("copilot", event_key("copilot", session, interaction)), log, None)

    def finish() -> None:
        ended = time.time()
        task.hook_rc = run_hook(rig, command, ["copilot", "agentStop"], _now_ms(payloads["agentStop"]), COPILOT_ENV)
        _log_records(log, records[reply:stop], ended)  # the batch Copilot flushes after the hook started
        _log_records(log, records[stop:end], time.time())
        task.writes.append(log.stat().st_mtime)
        run_hook(rig, command, ["copilot", "sessionEnd"], _now_ms(payloads["sessionEnd"]), COPILOT_ENV)
        _log_records(log, records[end:], time.time())  # ... and session.shutdown as the CLI exits
        task.writes.append(log.stat().st_mtime)

    task.end = finish
    return task


#: What Copilot CLI adds to a hook's environment (the hook tells its agent by it).
COPILOT_ENV = {"COPILOT_CLI": "1", "COPILOT_CLI_BINARY_VERSION": "1.0.102"}


def _copilot_run(
    session: str, interaction: str, home: Path, log: Path
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The recorded run's log records and hook payloads, made this session's."""
    folder = COPILOT_FIXTURES / COPILOT_SCENARIO
    calls = [json.loads(line) for line in (folder / "hooks.jsonl").read_text().splitlines() if line.strip()]
    old_session = str(next(c["payload"]["sessionId"] for c in calls))
    old_log = f"@HOME@/.copilot/session-state/{old_session}/events.jsonl"
    lines = (folder / "events.jsonl").read_text().splitlines()
    old_interaction = next(json.loads(line)["data"]["interactionId"] for line in lines if '"user.message"' in line)

    def local(text: str) -> str:
        text = text.replace(old_log, str(log)).replace("@HOME@/.copilot", str(home)).replace("@PROJECT@", str(home))
        return text.replace(old_session, session).replace(old_interaction, interaction)

    records = [json.loads(local(line)) for line in lines if line.strip()]
    return records, {c["event"]: json.loads(local(json.dumps(c["payload"]))) for c in calls}


def _log_records(log: Path, records: list[dict[str, Any]], at: float) -> None:
    """Append ``records`` to a Copilot session log, each stamped ``at`` (ISO, milliseconds)."""
    stamp = dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    with open(log, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps({**r, "timestamp": stamp}) + "\n" for r in records))


def _now_ms(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "timestamp": int(time.time() * 1000)}


def run_hook(
    rig: Rig, command: list[str], args: list[str], payload: dict[str, Any], env: dict[str, str] | None = None
) -> int:
    """One real hook process, as the agent runs it: ``command`` (the installed ``donebell``) with
    ``hook <args>``, the payload on stdin, the agent blocked until it exits."""
    done = subprocess.run(
        [*command, "hook", *args],
        input=json.dumps(payload).encode(),
        env=rig.env(**(env or {})),
        capture_output=True,
        timeout=120,
        check=False,
    )
    return done.returncode


def _restamp(data: bytes) -> bytes:
    now = time.time()
    stamp = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode() + b"Z"
    data = _STAMP.sub(b'"timestamp":"' + stamp + b'"', data)
    return re.sub(rb'"completed_at":\d+', b'"completed_at":' + str(int(now)).encode(), data)


def _claude_lines(session: str, prompt: str) -> list[bytes]:
    old_session, old_prompt = session_of(SCENARIO).encode(), _prompt_id().encode()
    out = []
    for line in transcript_lines(SCENARIO):
        out.append(line.replace(old_session, session.encode()).replace(old_prompt, prompt.encode()))
    return out


def _prompt_id() -> str:
    return str(next(p["prompt_id"] for p in events_332(SCENARIO) if p.get("prompt_id")))


def _claude_payloads(session: str, prompt: str, transcript: Path) -> dict[str, dict[str, Any]]:
    old_session, old_prompt = session_of(SCENARIO), _prompt_id()
    out = {}
    for payload in events_332(SCENARIO):
        text = json.dumps(payload).replace(old_session, session).replace(old_prompt, prompt)
        doc = json.loads(text)
        doc["transcript_path"] = str(transcript)
        out[str(doc["hook_event_name"])] = doc
    return out


def end_all(tasks: list[Task], within: float) -> float:
    """End every task, their starts spread evenly over ``within`` seconds, each on its own thread
    (an agent waits for its own hook only); returns the spread of the end times in seconds."""
    gap = within / max(1, len(tasks) - 1)
    start = time.monotonic()
    threads = []
    for i, task in enumerate(tasks):
        delay = start + i * gap - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        thread = threading.Thread(target=task.end, name=f"agent-{i}", daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(120)
    ends = [t.writes[-1] for t in tasks if t.writes]
    return max(ends) - min(ends) if ends else float("nan")
