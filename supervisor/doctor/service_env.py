"""``doctor``'s ``wake_env`` check: does the service have what the agents need for a woken turn?

A Continue tap starts ``codex exec resume`` / ``claude -p --resume`` from the wake role, with the
*service's* environment (docs/wake.md), not the shell the user works in. A variable the agent
needs there (an API key or base URL, a config folder, a proxy, a CA bundle) that is set in the
user's shell but not in the service makes the woken turn fail or talk to another account. This
compares the two by **name only**: no value is read from the service or printed.

The service's environment, best source first:

1. the running supervisor's own: it lists the names of its agent variables (``agent_env`` in
   ``health/supervisor.json``, checked to be the live process by pid and start time), exactly
   what a woken turn inherits, whatever started it;
2. without a running one, systemd's: the user manager's environment (``systemctl --user
   show-environment``) plus the unit's ``Environment=`` lines;
3. launchd's: the agent's ``EnvironmentVariables`` plus ``launchctl getenv`` of each name.
"""

from __future__ import annotations

import os
import plistlib
import re

from donebell.shared.process.liveness import is_alive
from donebell.shared.process.runner import Runner
from donebell.shared.statedir import StateDir
from donebell.supervisor.install import service as install_service
from donebell.workers.kit.install.checks import OK, SKIP, UNKNOWN, WARN, Check

#: Variables of these families configure the agents (API keys, base URLs, models, config folders).
PREFIXES = ("ANTHROPIC_", "OPENAI_", "CODEX_", "CLAUDE_")
#: Single variables a woken turn needs the same as the shell: proxies and CA bundles.
NAMES = frozenset(
    {
        *(n for p in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY") for n in (p, p.lower())),
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
    }
)
#: Set by an agent for the commands it runs (doctor run inside a session): not the user's.
SESSION_SCOPED = re.compile(
    r"^(CLAUDECODE|CLAUDE_CODE_(ENTRYPOINT|SSE_PORT)|CLAUDE_PROJECT_DIR|CODEX_SANDBOX.*|CODEX_THREAD_ID|CODEX_CI)$"
)
_ENV_LINE = re.compile(r"^\s*Environment\s*=\s*(.*)$")


def wanted(names: list[str]) -> list[str]:
    """The names among ``names`` a woken agent turn may need, sorted."""
    return sorted(n for n in names if (n.startswith(PREFIXES) or n in NAMES) and not SESSION_SCOPED.match(n))


def running_service_names(state: StateDir) -> set[str] | None:
    """The agent variable names the running supervisor has (it publishes them, names only, as
    ``agent_env`` in ``health/supervisor.json``), or None: not running, or a donebell from before."""
    health = state.read_health("supervisor") or {}
    pid, started, names = health.get("pid"), health.get("create_time"), health.get("agent_env")
    if not isinstance(pid, int) or not isinstance(names, list):
        return None
    if not is_alive(pid, started if isinstance(started, (int, float)) else None):
        return None
    return {n for n in names if isinstance(n, str)}


def systemd_names(runner: Runner) -> set[str] | None:
    """The user manager's variable names plus the unit's ``Environment=`` names, or None."""
    unit = install_service.unit_path()
    if not unit.is_file():
        return None
    names: set[str] = set()
    shown = runner.run(["systemctl", "--user", "show-environment"], timeout=5.0)
    if shown.returncode == 0:
        names |= {line.split("=", 1)[0] for line in shown.stdout.splitlines() if "=" in line}
    for line in unit.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _ENV_LINE.match(line)
        if match:
            names |= {word.strip('"').split("=", 1)[0] for word in match.group(1).split() if "=" in word}
    return names


def launchd_names(runner: Runner, asked: list[str]) -> set[str] | None:
    """The agent plist's ``EnvironmentVariables`` names plus those of ``asked`` launchd has, or None."""
    plist = install_service.plist_path()
    if not plist.is_file():
        return None
    try:
        env = plistlib.loads(plist.read_bytes()).get("EnvironmentVariables") or {}
    except (OSError, ValueError):
        env = {}
    names = {str(k) for k in env} if isinstance(env, dict) else set()
    for name in asked:
        if name not in names and runner.run(["launchctl", "getenv", name], timeout=5.0).stdout.strip():
            names.add(name)
    return names


def check_service_env(state: StateDir, runner: Runner, shell: dict[str, str] | None = None) -> Check:
    """``wake_env``: the names set in the user's shell that the service's environment lacks."""
    asked = wanted(list(os.environ if shell is None else shell))
    if not asked:
        return Check(
            "wake_env", SKIP, "no agent variable (ANTHROPIC_*, OPENAI_*, CODEX_*, CLAUDE_*, proxies) in this shell"
        )
    where, names = "the running service", running_service_names(state)
    if names is None:
        where, names = "the systemd unit", systemd_names(runner)
    if names is None:
        where, names = "the launchd agent", launchd_names(runner, asked)
    if names is None:
        return Check("wake_env", UNKNOWN, "no running or installed service to compare this shell's variables with")
    missing = [n for n in asked if n not in names]
    if not missing:
        return Check("wake_env", OK, f"{where} has every agent variable this shell sets ({len(asked)})")
    return Check(
        "wake_env",
        WARN,
        f"set in this shell but not in {where}: {', '.join(missing)}; a Continue tap starts the agent without them",
        'give them to the service (docs/wake.md, "The service\'s environment"): systemd: '
        f"`systemctl --user import-environment {' '.join(missing)}` then `systemctl --user restart donebell`; "
        f"launchd: `launchctl setenv <NAME> <value>` for each, then restart the agent",
        {"missing": missing, "compared_with": where},
    )
