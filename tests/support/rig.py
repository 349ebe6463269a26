"""A private donebell installation for one reliability test: state dir, config, Codex home, processes.

A :class:`Rig` writes real Codex rollouts (the recorded ``simple-exec`` run with fresh thread and
turn ids, so any number of distinct root tasks can run at once), feeds the real Stop payload to
``donebell hook codex-stop``, and runs ``donebell worker local-scanner|delivery --once`` as real
processes (``runner.py``) against the ntfy stand-in. It also reads the state directory back for
the invariants: where a key is, whether every record file is complete.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donebell.shared.keys import event_key, sequence_id
from donebell.shared.statedir import PIPELINE, InvalidRecord, StateDir, decode

from support.codex_home import index_threads
from support.runner import Proc, Result, Spawner
from support.scanner_kit import born_ago

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "codex"
ROLLOUTS = Path(__file__).resolve().parents[1] / "fixtures" / "codex" / "rollouts"
FIXTURE_THREAD = b"01a22be2-8ff4-7060-90c7-45d2cf0697b5"
FIXTURE_TURN = b"01a22be2-9063-7c32-bfff-4b6d573f20c6"
#: Folders whose ``*.json`` files are records that must always parse (no partial file visible).
RECORD_FOLDERS = (*PIPELINE, "claude")
#: Short timings so a cycle takes milliseconds (docs/gate.md, docs/delivery.md).
FAST_CONFIG: dict[str, Any] = {
    "idle_grace_seconds": 0.2,
    "idle_probe_grace_seconds": 3.0,
    "unknown_retry_max_seconds": 0.5,
    "retry_max_seconds": 1.0,
    "timeout_seconds": 2.0,
    "watch_scan_seconds": 1.0,
}


@dataclass
class Turn:
    """One Codex root turn: its rollout and the identity every source computes for it."""

    thread_id: str
    turn_id: str
    rollout: Path
    completion: bytes  # the rollout lines from task_complete on, appended by Rig.complete()

    @property
    def key(self) -> str:
        key: str = event_key("codex", self.thread_id, self.turn_id)
        return key

    @property
    def sequence_id(self) -> str:
        sid: str = sequence_id("codex", self.key)
        return sid


def _fixture_lines() -> list[bytes]:
    return (ROLLOUTS / "simple-exec.jsonl").read_bytes().splitlines(keepends=True)


def _turn_lines(thread: str, at: float) -> tuple[list[bytes], str]:
    """The recorded run's lines for ``thread`` with a fresh turn id, stamped ``at``."""
    turn = str(uuid.uuid4())
    stamp, epoch = _iso(at), str(int(at)).encode()
    lines = []
    for line in _fixture_lines():
        line = re.sub(rb'"timestamp":"[^"]*"', b'"timestamp":"' + stamp + b'"', line)
        line = re.sub(rb'"(started_at|completed_at)":\d+', rb'"\1":' + epoch, line)
        lines.append(line.replace(FIXTURE_THREAD, thread.encode()).replace(FIXTURE_TURN, turn.encode()))
    return lines, turn


def _completion_index(lines: list[bytes]) -> int:
    return next(i for i, line in enumerate(lines) if b'"type":"task_complete"' in line)


def _iso(at: float) -> bytes:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode() + b"Z"


class Rig:
    """One installation under ``root``, talking to the stand-in at ``server``."""

    def __init__(self, root: Path, spawner: Spawner, server: str, topic: str, **config: Any) -> None:
        self.root, self.spawner = root, spawner
        self.state_dir = root / "state"
        self.config_path = root / "config" / "config.json"
        self.codex_home = root / "codex"
        self.claude_dir = root / "claude"
        for path in (self.config_path.parent, self.codex_home, self.claude_dir):
            path.mkdir(parents=True, exist_ok=True)
        # donebell has been installed for a while: a rollout the test backdates is news, not
        # history from before the state directory existed (tests/test_first_week_replay.py).
        born_ago(StateDir(self.state_dir).ensure(), 3600)
        self.extra_env: dict[str, str] = {"DONEBELL_KICK_COMMAND": "off"}
        self.config: dict[str, Any] = {}
        self.write_config(**{"server": server, "topic": topic, **FAST_CONFIG, **config})

    def use_state_dir(self, path: Path) -> None:
        """Put the state directory elsewhere (a small tmpfs), as long-installed as the default one."""
        self.state_dir = path
        born_ago(StateDir(path).ensure(), 3600)

    # configuration and environment ---------------------------------------------------------

    def write_config(self, **values: Any) -> None:
        """Replace the whole config file (mode 0600)."""
        self.config = dict(values)
        tmp = self.config_path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(self.config, f)
        os.replace(tmp, self.config_path)

    def update_config(self, **changes: Any) -> None:
        self.write_config(**{**self.config, **changes})

    @property
    def topic(self) -> str:
        return str(self.config["topic"])

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DONEBELL_", "CODEX_", "CLAUDE_"))}
        env.update(
            DONEBELL_STATE_DIR=str(self.state_dir),
            DONEBELL_CONFIG=str(self.config_path),
            CODEX_HOME=str(self.codex_home),
            CLAUDE_CONFIG_DIR=str(self.claude_dir),
        )
        env.update(self.extra_env)
        env.update(extra)
        return env

    @property
    def state(self) -> StateDir:
        return StateDir(self.state_dir)

    # processes -------------------------------------------------------------------------------

    def start(
        self, *argv: str, stdin: bytes | None = None, crash_at: int | None = None, env: Mapping[str, str] | None = None
    ) -> Proc:
        extra = dict(env or {})
        if crash_at is not None:
            extra["DONEBELL_CRASH_AT"] = str(crash_at)
        return self.spawner.start(list(argv), self.env(**extra), stdin)

    def run(
        self,
        *argv: str,
        stdin: bytes | None = None,
        crash_at: int | None = None,
        timeout: float = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        return self.start(*argv, stdin=stdin, crash_at=crash_at, env=env).result(timeout)

    def hook_stop(self, turn: Turn, crash_at: int | None = None, env: Mapping[str, str] | None = None) -> Result:
        payload = json.dumps(self.stop_payload(turn)).encode()
        return self.run("hook", "codex-stop", stdin=payload, crash_at=crash_at, env=env)

    def scan_once(self, crash_at: int | None = None, env: Mapping[str, str] | None = None) -> Result:
        return self.run("worker", "local-scanner", "--once", crash_at=crash_at, env=env)

    def deliver_once(self, crash_at: int | None = None, env: Mapping[str, str] | None = None) -> Result:
        return self.run("worker", "delivery", "--once", crash_at=crash_at, env=env)

    def settle(
        self,
        keys: Iterable[str],
        timeout: float = 15.0,
        scan: bool = True,
        env: Mapping[str, str] | None = None,
        drain: bool = False,
    ) -> int:
        """Run scanner + delivery passes until every key has a receipt (and, with ``drain``, until
        ``pending/`` is empty too); returns the passes used."""
        wanted = list(keys)
        deadline = time.monotonic() + timeout
        passes = 0
        while time.monotonic() < deadline:
            if scan:
                self.scan_once(env=env)
            self.deliver_once(env=env)
            passes += 1
            finished = all(self.state.locate(k) in ("sent", "suppressed", "dead") for k in wanted)
            if finished and not self.state.count("outbox") and not (drain and self.state.count("pending")):
                return passes
            time.sleep(0.1)
        return passes

    # Codex rollouts ---------------------------------------------------------------------------

    def new_turn(self, *, complete: bool = False, at: float | None = None) -> Turn:
        """A fresh root thread with one turn, its rollout written up to (not including) task_complete."""
        at = time.time() if at is None else at
        thread = str(uuid.uuid4())
        lines, turn_id = _turn_lines(thread, at)
        cut = _completion_index(lines)
        day = dt.datetime.fromtimestamp(at, dt.UTC)
        folder = self.codex_home.joinpath("sessions", day.strftime("%Y"), day.strftime("%m"), day.strftime("%d"))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{thread}.jsonl"
        path.write_bytes(b"".join(lines[:cut]))
        result = Turn(thread, turn_id, path, b"".join(lines[cut:]))
        if complete:
            self.complete(result)
        return result

    def hooked(self, n: int) -> list[Turn]:
        """``n`` finished root turns, each reported by a real ``hook codex-stop`` process, then completed."""
        turns = [self.new_turn() for _ in range(n)]
        for turn in turns:
            assert self.hook_stop(turn).rc == 0
            self.complete(turn)
        return turns

    def backlog(self, n: int) -> list[Turn]:
        """``n`` finished root turns whose candidates the real Stop hook code wrote, called in this
        process (a hook process per turn would take minutes for a large backlog); Codex's
        ``state_5.sqlite`` lists their threads, as in a real home."""
        import io
        import sys

        saved_env, saved_stdin = dict(os.environ), sys.stdin
        os.environ.update(self.env())
        try:
            from donebell.workers.agents.codex.hook import codex_stop
            from donebell.workers.kit.hook_context import HookContext

            ctx, turns = HookContext("codex-stop"), []
            for _ in range(n):
                turn = self.new_turn()
                sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(self.stop_payload(turn)).encode()))
                codex_stop(ctx, [])
                self.complete(turn, backdate=5.0)
                turns.append(turn)
            index_threads(self.codex_home, [(t.thread_id, t.rollout) for t in turns])
            return turns
        finally:
            sys.stdin = saved_stdin
            os.environ.clear()
            os.environ.update(saved_env)

    def next_turn(self, previous: Turn, *, complete: bool = False) -> Turn:
        """The thread's next turn (a new turn id) appended to the same rollout, up to task_complete."""
        lines, turn_id = _turn_lines(previous.thread_id, time.time())
        cut = _completion_index(lines)
        with open(previous.rollout, "ab") as f:
            f.write(b"".join(lines[1:cut]))  # no second session_meta: a thread has one
        result = Turn(previous.thread_id, turn_id, previous.rollout, b"".join(lines[cut:]))
        if complete:
            self.complete(result)
        return result

    def complete(self, turn: Turn, *, backdate: float = 1.0) -> None:
        """Append task_complete (Codex writes it just after the Stop hook); age the file by ``backdate``
        so the gate's quiet window has passed and a pass is deterministic."""
        with open(turn.rollout, "ab") as f:
            f.write(turn.completion)
        if backdate:
            then = time.time() - backdate
            os.utime(turn.rollout, (then, then))

    def stop_payload(self, turn: Turn) -> dict[str, Any]:
        payload: dict[str, Any] = json.loads((FIXTURES / "hook-payloads" / "simple--Stop.json").read_text())["stdin"]
        payload.update(session_id=turn.thread_id, turn_id=turn.turn_id, transcript_path=str(turn.rollout))
        return payload

    # reading the state back ---------------------------------------------------------------------

    def where(self, key: str) -> list[str]:
        """Every pipeline folder holding ``key`` (more than one only between two steps of a move)."""
        return [f for f in PIPELINE if self.state.exists(f, key)]

    def where_or_dead_letter(self, key: str) -> list[str]:
        """Like :meth:`where`, plus ``dead`` when a dead letter was made of ``<key>.json``.

        An unusable record is dead-lettered under a fresh key (so a later, good signal for the
        same turn is not deduplicated against the wreck); ``original_name`` links it back.
        """
        found = self.where(key)
        for dead_key in self.state.keys("dead"):
            letter = self.state.read("dead", dead_key)
            if letter and letter.get("original_name") == f"{key}.json":
                found.append("dead")
        return found

    def counts(self) -> dict[str, int]:
        return {f: self.state.count(f) for f in PIPELINE}

    def partial_records(self) -> list[str]:
        """Record files that do not parse as complete records (must always be empty)."""
        bad = []
        for folder in RECORD_FOLDERS:
            base = self.state_dir / folder
            if not base.is_dir():
                continue
            for path in base.iterdir():
                if path.suffix != ".json":
                    continue
                try:
                    decode(path.read_bytes(), expect_key=path.stem)
                except (InvalidRecord, OSError) as exc:
                    bad.append(f"{folder}/{path.name}: {exc}")
        return bad

    def read_all(self, folder: str) -> list[dict[str, Any]]:
        out = []
        for key in self.state.keys(folder):
            try:
                record = self.state.read(folder, key)
            except InvalidRecord:
                continue
            if record is not None:
                out.append(record)
        return out

    def log(self) -> list[dict[str, Any]]:
        lines = []
        for name in ("notify.log.1", "notify.log"):
            path = self.state_dir / name
            if path.exists():
                for line in path.read_text("utf-8", "replace").splitlines():
                    try:
                        lines.append(json.loads(line))
                    except ValueError:
                        continue
        return lines


def messages_by_sequence(messages: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many messages the server stored per ``sequence_id``."""
    counts: dict[str, int] = {}
    for msg in messages:
        sid = str(msg.get("sequence_id"))
        counts[sid] = counts.get(sid, 0) + 1
    return counts
