"""Issue 38: what the local scanner remembers between idle passes gives the answers it would
compute afresh (the watch paths' nearest existing folders)."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from types import SimpleNamespace

from donebell.workers.agents.codex.discovery import nearest_existing
from donebell.workers.agents.codex.scan_engine import ScanEngine


def test_remembered_nearest_existing_folder_matches_a_fresh_walk(tmp_path: Path) -> None:
    engine = ScanEngine.__new__(ScanEngine)  # only what _nearest reads
    engine._nearest_seen = {}
    engine.opts = SimpleNamespace(codex_home=tmp_path)  # type: ignore[assignment]
    folders = [tmp_path / "sessions/2026/12/07", tmp_path / "sessions/2026/12/06", tmp_path / "sessions/2027/01/01"]
    rng = random.Random(38)
    for step in range(600):
        folder = rng.choice(folders)
        assert engine._nearest(folder) == nearest_existing(folder, tmp_path), step
        parts = rng.choice(folders).relative_to(tmp_path).parts
        cut = tmp_path.joinpath(*parts[: rng.randint(1, len(parts))])
        roll = rng.random()
        try:
            if roll < 0.4:
                os.makedirs(cut, exist_ok=True)  # a day folder (or its month, year) appears
            elif roll < 0.8:
                shutil.rmtree(cut, ignore_errors=True)  # ... or goes
                if roll > 0.7 and not cut.exists():
                    cut.parent.mkdir(parents=True, exist_ok=True)
                    cut.write_text("a file where a folder would be")
            elif cut.is_file():
                cut.unlink()
        except OSError:
            pass  # a file in the way: the tree stays as it is this step
