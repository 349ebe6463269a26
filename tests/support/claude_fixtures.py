"""The real Claude Code 2.1.332 runs under ``tests/fixtures/claude-2.1.332/<scenario>/``.

Each holds ``hooks.jsonl`` (every hook event the CLI fired, ``{"event", "payload"}``, in order;
in print mode the StopFailure hook was killed before it could record anything) and the main
``transcript.jsonl`` (``subagent.jsonl`` too for ``bgagent``). Paths inside are neutral
(``/home/dev/runs/...``); :func:`place` copies a transcript where a test's Claude config dir keeps
it and points the payloads at the copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

FIXTURES_332 = Path(__file__).resolve().parents[1] / "fixtures" / "claude-2.1.332"


def events_332(scenario: str) -> list[dict[str, Any]]:
    lines = (FIXTURES_332 / scenario / "hooks.jsonl").read_text().splitlines()
    return [json.loads(line)["payload"] for line in lines if line.strip()]


def transcript_lines(scenario: str) -> list[bytes]:
    return (FIXTURES_332 / scenario / "transcript.jsonl").read_bytes().splitlines(keepends=True)


def session_of(scenario: str) -> str:
    return str(events_332(scenario)[0]["session_id"])


def place(
    claude_dir: Path, scenario: str, lines: list[bytes] | None = None, *, project: str = "-home-dev-project"
) -> Path:
    """Write the scenario's transcript (or ``lines``) to ``projects/<project>/<session>.jsonl``."""
    folder = claude_dir / "projects" / project
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_of(scenario)}.jsonl"
    if lines is None:
        shutil.copy(FIXTURES_332 / scenario / "transcript.jsonl", path)
    else:
        path.write_bytes(b"".join(lines))
    return path


def payloads_for(scenario: str, transcript: Path) -> list[dict[str, Any]]:
    """The scenario's hook payloads with ``transcript_path`` pointing at ``transcript``."""
    out = []
    for payload in events_332(scenario):
        payload["transcript_path"] = str(transcript)
        out.append(payload)
    return out


def cut_after(lines: list[bytes], predicate: Any, index: int = 0) -> list[bytes]:
    """``lines`` up to and including the ``index``-th line whose decoded record matches."""
    hits = [i for i, line in enumerate(lines) if predicate(json.loads(line))]
    return lines[: hits[index] + 1]
