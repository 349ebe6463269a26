"""A clean copy of the source tree, as a release would build it: the files git tracks, no build
output, caches, venvs or editable-install metadata (tests/test_installed_wheel.py, test_tool_installs.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def tracked_files() -> list[str]:
    """Every path git tracks that exists in the work tree (a deleted file is not yet out of the index)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60)
    return [name for name in listed.stdout.decode().split("\0") if name and (REPO / name).is_file()]


def tracked_copy(dest: Path) -> Path:
    """The tracked files, as they are in the work tree, copied under ``dest``."""
    for name in tracked_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return dest
