"""A hook / notify command that records what it was given, for the e2e tests.

Usage: python3 record_hook.py OUT_DIR LABEL [args...]

Writes OUT_DIR/<ns>-<pid>-<LABEL>.json with the extra argv (Codex's notify appends one JSON
argument), stdin (hooks get one JSON object), cwd, the names of the environment variables and a
few of their values. Prints nothing: a Stop hook's stdout can steer the agent, and silence is the
only answer both CLIs ignore. Standard library only, so it starts fast under any interpreter.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time

# Values worth asserting on; every other variable is recorded by name only (keys leak nothing).
_ENV_VALUES = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID", "HOME")


def _read_stdin() -> str:
    # Codex's notify gives an empty stdin, and a hook runner might leave the pipe open: wait
    # briefly for data or EOF instead of blocking forever.
    try:
        ready, _, _ = select.select([sys.stdin], [], [], 2.0)
    except (OSError, ValueError):
        return ""
    return sys.stdin.read() if ready else ""


def main() -> int:
    out_dir, label, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    raw = _read_stdin()
    try:
        payload = json.loads(raw) if raw.strip() else None
    except ValueError:
        payload = None
    record = {
        "label": label,
        "t": time.time(),
        "pid": os.getpid(),
        "argv": extra,
        "argv_json": [_maybe_json(a) for a in extra],
        "stdin_raw": raw,
        "stdin": payload,
        "cwd": os.getcwd(),
        "env_keys": sorted(os.environ),
        "env": {k: os.environ[k] for k in _ENV_VALUES if k in os.environ},
    }
    os.makedirs(out_dir, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}-{label}.json"
    tmp = os.path.join(out_dir, "." + name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, os.path.join(out_dir, name))  # readers never see a half-written record
    return 0


def _maybe_json(arg: str) -> object:
    try:
        return json.loads(arg)
    except ValueError:
        return None


if __name__ == "__main__":
    sys.exit(main())
