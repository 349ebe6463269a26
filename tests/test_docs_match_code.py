"""The docs say what the code does: troubleshooting.md documents exactly the doctor checks that
exist, the README's quick start uses only real commands, and nothing points outside the repository."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from donebell.supervisor.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
#: What a pointer outside the repository looks like: the project's seed documents, the shared facts
#: folder, the developers' brief (the facts themselves are in docs/agent-facts.md).
OUTSIDE = re.compile(r"\bseed 00\d|\bseeds/|facts/|\.\./shared|/work/shared|\bthe\sbrief\b")
SOURCES = ("*.py", "*.md", "*.toml", "*.json", "*.service", "*.xml", "*.plist")


def _documented_checks() -> set[str]:
    text = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    names: set[str] = set()
    for cell in re.findall(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \|", text, re.M):
        names.update(re.findall(r"`([a-z_]+)`", cell))
    return names


def _checks_in_code() -> set[str]:
    found: set[str] = set()
    # doctor/, install/, commands/ too, and each agent's wiring checks (workers/agents/<name>/doctor.py)
    for path in [*(ROOT / "supervisor").rglob("*.py"), *(ROOT / "workers" / "agents").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(r'Check\(\s*"([a-z_]+)"', text))
    from donebell.supervisor.doctor.agents import CHECK_NAMES  # one per registered agent

    found.update(CHECK_NAMES.values())
    return found


def test_troubleshooting_lists_exactly_the_doctor_checks(isolated_env: dict[str, Path]) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    ran = {c["name"] for c in json.loads(res.stdout)["checks"]}
    documented = _documented_checks()
    assert ran <= documented, ran - documented
    assert documented == _checks_in_code(), documented ^ _checks_in_code()


def test_the_readme_quick_start_uses_real_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1]
    used = set(re.findall(r"`?donebell ([a-z]+)", quick))
    assert used and used <= set(COMMANDS), used - set(COMMANDS)


def test_nothing_points_outside_the_repository() -> None:
    tracked = subprocess.run(["git", "ls-files", *SOURCES], cwd=ROOT, capture_output=True, text=True, check=True)
    hits = []
    for name in tracked.stdout.split():
        if name == "tests/test_docs_match_code.py":
            continue
        for n, line in enumerate((ROOT / name).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{name}:{n}: {line.strip()[:120]}")
    assert hits == []
