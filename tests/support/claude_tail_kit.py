"""Claude transcript recovery test kit: a ClaudeTail engine over a real state dir, the pending records,
an engine that has made its first pass, a transcript aged into quiet, and a scenario's prompt ids."""

from __future__ import annotations

import os
import time
from pathlib import Path

from donebell.shared.statedir import StateDir
from donebell.workers.agents.claude.tail import ClaudeTail

from support.claude_fixtures import events_332


def engine(state: StateDir, claude_dir: Path, grace: float = 0.5) -> ClaudeTail:
    return ClaudeTail(state, claude_dir, idle_grace=grace, origin="test", include_message=True)


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def pending(state: StateDir) -> list[dict[str, object]]:
    return [r for k in state.keys("pending") if (r := state.read("pending", k)) is not None]


def watching(state: StateDir, claude_dir: Path) -> ClaudeTail:
    """An engine that has done its first pass over an empty config dir (files after it are new)."""
    tail = engine(state, claude_dir)
    tail.scan(full=True)
    return tail


def prompts(scenario: str) -> list[str]:
    return [p["prompt_id"] for p in events_332(scenario) if p["hook_event_name"] == "UserPromptSubmit"]
