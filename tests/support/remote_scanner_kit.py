"""Remote-scanner test kit: the worker command line, a config with watch roots, and a reachable
root that holds one finished rollout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from support.scanner_kit import fixture_lines, rollout_path

WORKER = [sys.executable, "-m", "donebell.supervisor.cli", "worker", "remote-scanner"]


def _config(isolated_env: dict[str, Path], **values: Any) -> None:
    isolated_env["config"].parent.mkdir(parents=True, exist_ok=True)
    isolated_env["config"].write_text(json.dumps(values))


def _good_root(tmp_path: Path) -> Path:
    root = tmp_path / "wsl-root"
    rollout_path(root, "simple-exec").write_bytes(b"".join(fixture_lines("simple-exec")))
    return root
