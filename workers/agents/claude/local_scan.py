"""Claude's share of a local-scanner pass: :class:`~donebell.workers.agents.claude.tail.ClaudeTail`
over ``$CLAUDE_CONFIG_DIR/projects``, cursors in ``watch/claude/`` (docs/hooks.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.statedir import StateDir
from donebell.workers.agents.claude import claude_config_dir
from donebell.workers.agents.claude.tail import ClaudeTail
from donebell.workers.kit.pass_result import PassResult


def local_scan(state: StateDir, settings: SettingsLike, scope: str) -> ClaudeLocalScan | None:
    """The transcript tailer, with ``watch_claude_transcripts`` and ``enable_claude_code`` on."""
    if not (settings.watch_claude_transcripts and settings.enable_claude_code):
        return None
    tail = ClaudeTail(
        state,
        Path(os.path.realpath(claude_config_dir())),
        idle_grace=settings.idle_grace_seconds,
        origin=settings.origin or None,
        include_message=settings.include_message,
        replay_seconds=settings.watch_initial_replay_seconds,
    )
    return ClaudeLocalScan(tail)


class ClaudeLocalScan:
    """:class:`~donebell.workers.agents.protocols.LocalScan` for Claude transcripts."""

    def __init__(self, tail: ClaudeTail) -> None:
        self.tail = tail

    def scan(self, full: bool) -> PassResult:
        report = self.tail.scan(full=full)
        return PassResult(next_in=report.next_in, idle=True, counters=dict(report.counters))

    def watch_paths(self) -> list[Path]:
        return self.tail.watch_paths()

    def health(self) -> dict[str, Any]:
        return self.tail.health()
