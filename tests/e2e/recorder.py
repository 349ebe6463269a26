"""Point agent hooks / notify at `record_hook.py` and read back what the agents sent."""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RECORD_HOOK = Path(__file__).with_name("record_hook.py")


def hook_config(hooks: Mapping[str, Sequence[str]], timeout: int = 30) -> dict[str, Any]:
    """`{"hooks": {Event: [{"hooks": [{"type": "command", ...}]}]}}`, the shape both CLIs read
    (Codex: $CODEX_HOME/hooks.json; Claude: the "hooks" key of settings.json)."""
    return {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": c, "timeout": timeout} for c in commands]}]
            for event, commands in hooks.items()
        }
    }


class Recorder:
    """A folder of hook/notify records; each command it hands out tags its records with a label."""

    def __init__(self, directory: Path, python: str = sys.executable) -> None:
        self.dir = directory
        self.python = python

    def argv(self, label: str) -> list[str]:
        """An argv for Codex's `notify` (which appends the JSON payload as one more argument)."""
        return [self.python, str(RECORD_HOOK), str(self.dir), label]

    def command(self, label: str) -> str:
        """A shell command string for a hook entry. It ignores SIGTERM/SIGHUP from the start, so
        it records every hook the CLI started: Claude 2.1.332 SIGTERMs a print-mode StopFailure
        hook ~25 ms after starting it, before an interpreter has even loaded the recorder."""
        return "trap '' TERM HUP; exec " + shlex.join(self.argv(label))

    def hooks(self, *events: str) -> dict[str, list[str]]:
        """Hook every event to the recorder, labelled by the event name."""
        return {event: [self.command(event)] for event in events}

    def records(self, label: str | None = None) -> list[dict[str, Any]]:
        """All records so far (optionally one label), in the order they were written."""
        if not self.dir.is_dir():
            return []
        recs = [json.loads(p.read_text()) for p in sorted(self.dir.glob("[0-9]*.json"))]
        recs.sort(key=lambda r: r["t"])
        return [r for r in recs if label is None or r["label"] == label]

    def payloads(self, label: str) -> list[Any]:
        """The stdin JSON of each record of one label (hooks), or the argv JSON (notify)."""
        return [r["stdin"] if r["stdin"] is not None else (r["argv_json"] or [None])[-1] for r in self.records(label)]

    def labels(self) -> list[str]:
        return [r["label"] for r in self.records()]

    def wait_for(self, label: str, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Poll for records: some hooks (Claude's StopFailure, Codex's notify) finish after the
        CLI has already exited, so a test must not look only once."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.records(label)
            if len(got) >= count:
                return got
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(got)} of {count} {label!r} records after {timeout}s; have {self.labels()}")
            time.sleep(0.05)

    def settle(self, quiet_s: float = 0.3, timeout: float = 5.0) -> None:
        """Wait until no new record has appeared for `quiet_s` (late, fire-and-forget hooks)."""
        deadline = time.monotonic() + timeout
        seen = -1
        while time.monotonic() < deadline:
            n = len(list(self.dir.glob("[0-9]*.json"))) if self.dir.is_dir() else 0
            if n == seen:
                return
            seen = n
            time.sleep(quiet_s)
