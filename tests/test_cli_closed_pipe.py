"""Every command exits quietly when its reader closes the pipe (`donebell config show | head -3`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir

EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `cat big | head -1`

COMMANDS = [
    ["config", "show"],
    ["config", "path"],
    ["config", "check"],
    ["status"],
    ["status", "--json"],
    ["doctor"],
    ["log"],
    ["log", "--json"],
    ["install", "--dry-run", "--service", "none"],
    ["--help"],
    ["config", "--help"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a) for a in COMMANDS])
def test_closed_pipe_is_not_a_traceback(isolated_env: dict[str, Path], argv: list[str]) -> None:
    isolated_env["config"].parent.mkdir(parents=True)
    isolated_env["config"].write_text(json.dumps({"server": "http://127.0.0.1:9", "topic": "donebell-pipe"}))
    os.chmod(isolated_env["config"], 0o600)
    StateDir(isolated_env["state"]).ensure().log("warning", "something for `donebell log` to print")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes its first line
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    # argparse's --help swallows the write error itself and exits 0.
    assert proc.returncode == (0 if argv[-1] == "--help" and len(argv) > 1 else EXIT_CLOSED_PIPE), proc.stderr
