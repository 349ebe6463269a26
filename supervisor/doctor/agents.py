"""doctor's ``codex_version`` / ``claude_version`` checks (the table and the probe: ``agent_versions``)."""

from __future__ import annotations

from donebell.shared.process.runner import Runner
from donebell.supervisor.commands import agent_versions
from donebell.workers.kit.install.checks import OK, SKIP, UNKNOWN, WARN, Check

#: agent -> the name of its doctor check (tests/test_docs_match_code.py reads this table).
CHECK_NAMES: dict[str, str] = {name: f"{name}_version" for name in agent_versions.TESTED}


def agent_version_checks(runner: Runner) -> list[Check]:
    """``codex_version`` / ``claude_version``: the installed release against the tested range."""
    checks = []
    for found in agent_versions.probe_all(runner):
        name = CHECK_NAMES[found.agent]
        details = found.as_json()
        if found.state == "not-found":
            checks.append(Check(name, SKIP, agent_versions.summary(found), details=details))
        elif found.state == "unknown":
            checks.append(Check(name, UNKNOWN, str(found.warning), details=details))
        elif found.warning:
            checks.append(Check(name, WARN, found.warning, "use a tested release, or upgrade donebell", details))
        else:
            checks.append(Check(name, OK, agent_versions.summary(found), details=details))
    return checks
