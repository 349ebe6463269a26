"""Move the e2e suite's ``newest`` agent set to today's npm releases.

``python tests/support/update_newest_pins.py [--check]`` asks ``npm view <package> version`` for
each agent package and rewrites the ``newest`` entry of ``agent_pins.json`` (``pinned`` is never
touched). ``--check`` only reports, exit 1 when a pin is behind. After a move, run
``DONEBELL_E2E_AGENTS=newest python -m pytest tests/e2e`` and, once it passes, add the versions to
the tested-range table in ``supervisor/commands/agent_versions.py`` (a unit test keeps both in step).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PINS_FILE = Path(__file__).resolve().with_name("agent_pins.json")


def latest(package: str) -> str:
    out = subprocess.run(
        ["npm", "view", package, "version"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    ).stdout.strip()
    if not out or any(c.isspace() for c in out):
        raise SystemExit(f"npm view {package} version answered {out!r}")
    return out


def main(argv: list[str]) -> int:
    pins = json.loads(PINS_FILE.read_text())
    newest = pins["newest"]
    moved = {package: (version, latest(package)) for package, version in newest.items()}
    behind = {package: pair for package, pair in moved.items() if pair[0] != pair[1]}
    for package, (old, new) in moved.items():
        print(f"{package}: {old} -> {new}" if old != new else f"{package}: {old} (current)")
    if "--check" in argv:
        return 1 if behind else 0
    if behind:
        pins["newest"] = {package: new for package, (_, new) in moved.items()}
        lines = ",\n".join(f'  "{name}": {json.dumps(versions)}' for name, versions in pins.items())
        PINS_FILE.write_text("{\n" + lines + "\n}\n")
        print(f"rewrote {PINS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
