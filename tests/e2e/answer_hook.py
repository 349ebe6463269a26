"""A PermissionRequest hook with a fixed answer, for measuring which printed shapes each CLI obeys.

Usage: python3 answer_hook.py OUT_DIR LABEL ANSWER_FILE [DELAY_SECONDS]

Records its stdin like ``record_hook.py`` (OUT_DIR/<ns>-<pid>-<LABEL>.json), then prints the
ANSWER_FILE's bytes unchanged (an empty file = silence, "no opinion") and exits 0. The answer is
read from a file, not argv, so the exact bytes (no shell quoting) are what the CLI parses.
With DELAY_SECONDS it records first, then sleeps before printing: a hook that answers only after
the CLI's hook timeout (the answer must then count for nothing). Standard library only, so it starts fast under any interpreter.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time


def main() -> int:
    out_dir, label, answer_file = sys.argv[1], sys.argv[2], sys.argv[3]
    delay = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    try:
        ready, _, _ = select.select([sys.stdin], [], [], 2.0)
        raw = sys.stdin.read() if ready else ""
    except (OSError, ValueError):
        raw = ""
    try:
        payload = json.loads(raw) if raw.strip() else None
    except ValueError:
        payload = None
    with open(answer_file, "rb") as f:
        answer = f.read()
    record = {"label": label, "t": time.time(), "pid": os.getpid(), "argv": [], "argv_json": []}
    record |= {"stdin_raw": raw, "stdin": payload, "answer": answer.decode("utf-8", "replace")}
    os.makedirs(out_dir, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}-{label}.json"
    tmp = os.path.join(out_dir, "." + name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, os.path.join(out_dir, name))
    time.sleep(delay)
    sys.stdout.buffer.write(answer)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
