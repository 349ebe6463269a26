"""Doctor checks of the running system: service, server, clock, queue and recent errors.

The service manager is asked through the :class:`~donebell.shared.process.runner.Runner` seam
(``systemctl --user is-active``, ``launchctl print``, ``schtasks /Query``); a missing tool is
"unknown", never a failure. The server is asked ``GET <server>/v1/health`` with a short timeout and
no credentials: nothing is published. Queue and errors come from ``donebell status``'s reader and
the bounded log, read-only.
"""

from __future__ import annotations

import email.utils
import json
import os
import time
from typing import Any

from donebell.shared.config import model
from donebell.shared.config.secret_text import public_url as _public_url
from donebell.shared.paths import service_log
from donebell.shared.platform import service as platform_service
from donebell.shared.process.runner import Runner
from donebell.shared.statedir import DEAD, LOG_NAME, OUTBOX, InvalidRecord, StateDir, now
from donebell.supervisor.commands import no_service
from donebell.supervisor.install import service as install_service
from donebell.supervisor.install import service_manager
from donebell.workers.kit.install.checks import FAIL, OK, SKIP, UNKNOWN, WARN, Check

SERVER_TIMEOUT = 5.0
CLOCK_SKEW_WARN = 300.0
RECENT_SECONDS = 24 * 3600
_OLDEST_SANE_CLOCK = 1735689600.0  # 2025-01-01: a clock before this date is certainly wrong


def status_document(state: StateDir) -> dict[str, Any] | None:
    """``donebell status``'s document, or None if that part of donebell is not available."""
    try:
        from donebell.supervisor.commands.status import collect
    except ImportError:
        return None
    try:
        return collect(state)
    except Exception:  # noqa: BLE001 - doctor reports what it can; status problems show elsewhere
        return None


def _manager_state(runner: Runner) -> tuple[str, str]:
    """``(installed|missing|unknown, what the service manager says)`` for this platform."""
    manager = platform_service.platform_manager()
    if manager == "task-scheduler":
        result = runner.run(["schtasks", "/Query", "/TN", install_service.TASK_NAME], timeout=20)
        if result.returncode == 127:
            return "unknown", "schtasks not available"
        return ("installed", "scheduled task registered") if result.ok else ("missing", "no scheduled task")
    if manager == "launchd":
        if not install_service.plist_path().exists():
            return "missing", "no launchd agent"
        target = f"gui/{os.getuid()}/{install_service.LAUNCHD_LABEL}"
        result = runner.run(["launchctl", "print", target], timeout=10)
        if result.returncode == 127:
            return "unknown", "launchctl not available"
        return ("installed", "launchd agent loaded") if result.ok else ("installed", "launchd agent not loaded")
    if not install_service.unit_path().exists():
        return "missing", "no systemd user unit"
    result = runner.run(["systemctl", "--user", "is-active", install_service.UNIT_NAME], timeout=10)
    if result.returncode == 127:
        return "unknown", "systemctl not available"
    said = result.stdout.strip() or result.brief()
    return "installed", f"systemd unit {said}"


def check_service(runner: Runner, status: dict[str, Any] | None) -> Check:
    installed, said = _manager_state(runner)
    supervisor = (status or {}).get("supervisor") or {}
    details = {"service": said, "supervisor": supervisor.get("state")}
    if supervisor.get("pid"):
        return Check("service", OK, f"supervisor running (pid {supervisor['pid']}); {said}", details=details)
    manager = platform_service.platform_manager()
    linux_systemctl = manager == "systemd" and runner.which("systemctl") is not None
    no_manager = service_manager.systemd_user_problem(runner) if linux_systemctl else None
    chose_none = _installed_without_a_service()
    if no_manager:  # `donebell install` cannot help here: say the ways that do
        return Check(
            "service",
            WARN,
            f"the supervisor is not running and {no_manager}; {no_service.SENTENCE}",
            no_service.CHOSE_NONE_FIX if chose_none else service_manager.ways_on_text(),
            details,
        )
    if installed == "missing":
        return Check(
            "service", WARN, no_service.SENTENCE, no_service.CHOSE_NONE_FIX if chose_none else no_service.FIX, details
        )
    step = "check `journalctl --user -u donebell` and run `systemctl --user restart donebell.service`"
    if manager == "launchd":
        step = f"check {service_log('library')} and run `donebell install` again"
    elif manager == "task-scheduler":
        step = "run `schtasks /Run /TN donebell` and check notify.log in the state folder"
    status_word = UNKNOWN if installed == "unknown" else WARN
    return Check(
        "service", status_word, f"the supervisor is not running ({said}): {no_service.SENTENCE}", step, details
    )


def _installed_without_a_service() -> bool:
    """Whether the last install was ``--service none`` (the install record says so): then the way
    on is the user's own supervisor, not that same command again."""
    from donebell.shared import paths
    from donebell.supervisor.install.own_config import read_record

    return read_record(paths.config_path()).get("service") == "none"


def check_server(settings: model.Settings) -> tuple[Check, float | None]:
    """Reachability of ``<server>/v1/health``; also returns the server's clock (Date header)."""
    from donebell.shared.httpx_without_cli import httpx
    from donebell.shared.ntfy.client import ConfigProblem, auth_for, check_sendable
    from donebell.shared.ntfy.proxy import ProxyRefused, route_for

    # Without any user:password@ part: the health check sends no credentials at all.
    shown = _public_url(f"{settings.server}/v1/health")
    try:
        if settings.topic:  # (a missing topic is the config check's finding)
            check_sendable(settings, auth_for(settings))  # what blocks the delivery role: plain http, a proxy hop
        route = route_for(settings.server, credentials=False)  # the delivery role's proxy policy
    except (ConfigProblem, ProxyRefused) as exc:
        return Check(
            "server",
            FAIL,
            f"delivery is blocked: {exc}",
            "fix the server URL, the credentials or the proxy variables (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY)",
        ), None
    try:
        response = httpx.get(shown, timeout=SERVER_TIMEOUT, follow_redirects=False, trust_env=False, proxy=route.proxy)
    except httpx.HTTPError as exc:
        return Check(
            "server",
            FAIL,
            f"cannot reach {shown}: {type(exc).__name__}",
            "check the server URL, the network, a proxy or the firewall",
        ), None
    server_time = _date_header(response.headers.get("date"))
    if response.is_redirect:
        target = _public_url(response.headers.get("location", "?"))
        return Check(
            "server",
            FAIL,
            f"{shown} redirects to {target}; donebell never follows redirects",
            'set "server" to the final URL',
        ), server_time
    if response.status_code == 404:
        return Check(
            "server",
            WARN,
            f"{_public_url(settings.server)} answers but has no /v1/health (not ntfy?)",
            "check the server URL",
        ), server_time
    if response.status_code >= 400:
        return Check(
            "server", FAIL, f"{shown} answered HTTP {response.status_code}", "check the server URL and its status"
        ), server_time
    try:
        healthy = response.json().get("healthy")
    except (ValueError, AttributeError):
        healthy = None
    if healthy is False:
        return Check("server", WARN, f"{shown} says it is not healthy", "try again later"), server_time
    return Check("server", OK, f"{_public_url(settings.server)} is reachable"), server_time


def _date_header(value: str | None) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() if value else None
    except (TypeError, ValueError):
        return None


def check_clock(server_time: float | None) -> Check:
    local = now()
    if local < _OLDEST_SANE_CLOCK:
        return Check(
            "clock",
            FAIL,
            f"the system clock says {time.strftime('%Y-%m-%d', time.gmtime(local))}",
            "set the system clock (enable NTP)",
        )
    if os.environ.get("DONEBELL_CLOCK_OFFSET"):
        return Check(
            "clock",
            WARN,
            "DONEBELL_CLOCK_OFFSET (a test setting) shifts donebell's clock",
            "unset DONEBELL_CLOCK_OFFSET",
        )
    if server_time is None:
        return Check("clock", UNKNOWN, "no server time to compare with")
    skew = local - server_time
    if abs(skew) > CLOCK_SKEW_WARN:
        return Check(
            "clock",
            WARN,
            f"the clock differs from the server's by {skew:+.0f} s",
            "enable time synchronization (NTP)",
            {"skew_seconds": round(skew, 1)},
        )
    return Check("clock", OK, f"within {abs(skew):.0f} s of the server", details={"skew_seconds": round(skew, 1)})


def _records(state: StateDir, folder: str, limit: int) -> list[dict[str, Any]]:
    out = []
    for key in state.keys(folder)[-limit:]:
        try:
            record = state.read(folder, key)
        except (InvalidRecord, OSError):
            continue
        if record is not None:
            out.append(record)
    return out


def check_queue(state: StateDir, status: dict[str, Any] | None, present: list[Check] | None = None) -> list[Check]:
    """Failing deliveries, dead letters, fatal roles and recent errors; ``present`` are doctor's
    own checks of the server just now, which the ``delivery`` line reports instead of an older
    attempt's error (:mod:`.delivery_now`)."""
    if not state.root.is_dir():
        return [Check("queue", SKIP, "no state directory yet")]
    checks = []
    failing = [r for r in _records(state, OUTBOX, 200) if r.get("attempts") and r.get("last_error")]
    if failing:
        from donebell.supervisor.doctor.delivery_now import delivery_check

        checks.append(delivery_check(failing, present or []))
    dead = _records(state, DEAD, 5)
    if dead:
        reasons = sorted({str(r.get("reason")) for r in dead})
        checks.append(
            Check(
                "dead_letters",
                WARN,
                f"{state.count(DEAD)} dead letter(s) (recent: {', '.join(reasons)})",
                f"inspect {state.root / DEAD}; `donebell explain <id>` tells why",
                {"recent": [{k: r.get(k) for k in ("key", "reason", "detail", "created_at")} for r in dead]},
            )
        )
    roles = (status or {}).get("roles") or {}
    for name, role in roles.items():
        if role.get("state") == "fatal":
            word = FAIL if name == "delivery" else WARN
            checks.append(
                Check(
                    "roles",
                    word,
                    f"{name} is fatal: {role.get('last_error') or 'restarts failed'}",
                    "see `donebell status` and the log; `donebell worker " + name + " --once --debug`",
                )
            )
    errors = recent_log_errors(state)
    if errors:
        checks.append(
            Check(
                "errors",
                WARN,
                f"{len(errors)} error(s) in the log in the last 24 h; last: {errors[-1]}",
                f"see {state.root / LOG_NAME}",
                {"recent": errors[-5:]},
            )
        )
    if not checks:
        checks.append(Check("queue", OK, "no failing deliveries, dead letters or recent errors"))
    return checks


def recent_log_errors(state: StateDir, tail_bytes: int = 256 << 10) -> list[str]:
    """Messages of ``level: error`` log lines from the last 24 h (tail of the bounded log)."""
    try:
        data = state.read_bytes(state.root / LOG_NAME, limit=16 << 20) or b""
    except (InvalidRecord, OSError):
        return []
    cutoff = now() - RECENT_SECONDS
    found = []
    for raw in data[-tail_bytes:].splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and line.get("level") == "error" and _number(line.get("ts")) >= cutoff:
            found.append(str(line.get("msg"))[:200])
    return found


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
