"""donebell doctor on real files, a real HTTP server on 127.0.0.1 and the recording runner:
Codex hook trust, wiring, service, server, clock, queue, exit codes, and no secret in the output."""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from donebell.shared import records
from donebell.shared.process.liveness import current_process_identity
from donebell.shared.process.runner import Completed
from donebell.shared.statedir import StateDir, now
from donebell.supervisor.doctor.command import main
from donebell.supervisor.install.command import main_install
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks
from support.install_env import RecordingRunner, copy_fixture, isolate

TOKEN = "tk_doctorsecret0123456789"
PASSWORD = "pa55-w0rd-never-shown"


class FakeNtfy(BaseHTTPRequestHandler):
    """GET /v1/health and the publish probe like ntfy; records every request; a clock skew and redirect."""

    requests: list[tuple[str, str, str | None]] = []
    skew = 0.0
    redirect = False

    def do_GET(self) -> None:
        type(self).requests.append(("GET", self.path, self.headers.get("Authorization")))
        if self.redirect:
            self.send_response_only(301)
            self.send_header("Location", "https://elsewhere.example/v1/health")
            self.end_headers()
            return
        body = b'{"healthy":true}'
        self.send_response_only(200 if self.path == "/v1/health" else 404)
        self.send_header("Content-Type", "text/json")
        self.send_header("Date", formatdate(now() + self.skew, usegmt=True))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        """doctor's publish probes (X-Priority: 9): ntfy >= 2.16 lets anyone publish, so 40007 (nothing stored)."""
        type(self).requests.append(("POST", self.path, self.headers.get("Authorization")))
        body = b'{"code":40007,"http":400,"error":"invalid priority parameter"}'
        self.send_response_only(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    FakeNtfy.requests, FakeNtfy.skew, FakeNtfy.redirect = [], 0.0, False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeNtfy)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: str) -> dict[str, Path]:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    paths["config"].parent.mkdir(parents=True)
    paths["config"].write_text(json.dumps({"server": server, "topic": "donebell-doctor-test"}))
    paths["config"].chmod(0o600)
    copy_fixture("codex-hooks.json", paths["codex"] / "hooks.json")
    copy_fixture("codex-config.toml", paths["codex"] / "config.toml")
    assert main_install(["--service", "none"], runner=RecordingRunner(), out=io.StringIO()) == 0
    return paths


def doctor(runner: RecordingRunner | None = None) -> tuple[int, dict[str, Any], str]:
    """Run doctor twice (JSON and table) and return the exit code, the JSON and the table."""
    out = io.StringIO()
    code = main(["--json"], runner=runner or RecordingRunner(), out=out)
    table = io.StringIO()
    assert main([], runner=runner or RecordingRunner(), out=table) == code
    return code, json.loads(out.getvalue()), table.getvalue()


def check(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [c for c in doc["checks"] if c["name"] == name]
    assert len(found) == 1, (name, doc["checks"])
    return found[0]


def test_untrusted_codex_hook_is_reported_with_the_next_step(env: dict[str, Path]) -> None:
    """A freshly installed Stop hook is untrusted: a warning naming /hooks, not a failure."""
    code, doc, table = doctor()
    trust = check(doc, "codex_trust")
    assert trust["status"] == "warn" and "not trusted" in trust["summary"]
    assert "/hooks" in trust["next_step"]
    assert code == 0 and doc["ok"] is True
    assert "next: open Codex, run /hooks" in table


def test_trusted_codex_hook_is_reported_as_trusted(env: dict[str, Path]) -> None:
    """With config.toml carrying the computed hash under the hook's key, doctor says trusted."""
    hook = donebell_stop_hooks(env["codex"])[0]
    with open(env["codex"] / "config.toml", "a", encoding="utf-8") as f:
        f.write(f'\n[hooks.state."{hook.key}"]\ntrusted_hash = "{hook.current_hash}"\n')
    _, doc, _ = doctor()
    assert check(doc, "codex_trust")["status"] == "ok"
    assert check(doc, "codex_trust")["summary"] == "the donebell Stop hook is trusted"


def test_the_needs_you_hook_trust_is_its_own_check(env: dict[str, Path]) -> None:
    """Codex skips an untrusted PermissionRequest hook silently: needs-you has its own warning,
    and trusting it the way /hooks does turns it ok."""
    _, doc, _ = doctor()
    needs = check(doc, "codex_needs_trust")
    assert needs["status"] == "warn" and "untrusted" in needs["summary"] and "/hooks" in needs["next_step"]
    [hook] = donebell_stop_hooks(env["codex"], "PermissionRequest", ("hook", "codex-permission"))
    with open(env["codex"] / "config.toml", "a", encoding="utf-8") as f:
        f.write(f'\n[hooks.state."{hook.key}"]\ntrusted_hash = "{hook.current_hash}"\n')
    _, doc, _ = doctor()
    assert check(doc, "codex_needs_trust")["status"] == "ok"


def test_a_hook_changed_after_trust_is_reported_as_modified(env: dict[str, Path]) -> None:
    """A trusted hash that no longer matches (donebell moved) is 'changed since it was trusted'."""
    hook = donebell_stop_hooks(env["codex"])[0]
    with open(env["codex"] / "config.toml", "a", encoding="utf-8") as f:
        f.write(f'\n[hooks.state."{hook.key}"]\ntrusted_hash = "sha256:{"0" * 64}"\n')
    _, doc, _ = doctor()
    assert check(doc, "codex_trust")["status"] == "warn"
    assert "changed since it was trusted" in check(doc, "codex_trust")["summary"]


def test_wiring_of_both_agents_is_checked(env: dict[str, Path]) -> None:
    """Codex Stop + notify and Claude's four hooks are found; a removed notify is a warning."""
    _, doc, _ = doctor()
    assert check(doc, "codex_hooks")["status"] == "ok"
    assert check(doc, "claude_hooks")["status"] == "ok"
    path = env["codex"] / "config.toml"
    path.write_text("\n".join(line for line in path.read_text().splitlines() if not line.startswith("notify")))
    _, doc, _ = doctor()
    assert check(doc, "codex_hooks")["status"] == "warn" and "notify" in check(doc, "codex_hooks")["summary"]


def test_nothing_wired_blocks_notifications(env: dict[str, Path]) -> None:
    """After uninstalling the hooks, doctor fails: nothing would ever trigger a notification."""
    from donebell.supervisor.install.command import main_uninstall

    main_uninstall(["--service", "none"], runner=RecordingRunner(), out=io.StringIO(), stdin=io.StringIO())
    code, doc, _ = doctor()
    assert code == 1 and check(doc, "agents")["status"] == "fail"


def test_a_hook_pointing_at_a_missing_donebell_fails(env: dict[str, Path]) -> None:
    """A Stop hook whose program no longer exists (deleted venv) is a failure with the fix."""
    path = env["codex"] / "hooks.json"
    hooks = json.loads(path.read_text())
    hooks["hooks"]["Stop"][-1]["hooks"][0]["command"] = "/gone/venv/bin/donebell hook codex-stop"
    path.write_text(json.dumps(hooks))
    code, doc, _ = doctor()
    assert code == 1
    assert (
        check(doc, "codex_hooks")["status"] == "fail"
        and "/gone/venv/bin/donebell" in check(doc, "codex_hooks")["summary"]
    )


def test_a_hooks_file_codex_rejects_is_reported(env: dict[str, Path]) -> None:
    """Codex refuses a hooks.json with an unknown top-level key or a fractional timeout."""
    path = env["codex"] / "hooks.json"
    hooks = json.loads(path.read_text())
    hooks["x-note"] = "mine"
    path.write_text(json.dumps(hooks))
    _, doc, _ = doctor()
    assert any(c["status"] == "warn" and "Codex cannot load hooks.json" in c["summary"] for c in doc["checks"])


def test_server_reachable_with_no_publish_and_no_credentials(env: dict[str, Path]) -> None:
    """Doctor GETs /v1/health without credentials; only its publish probes (an invalid priority, which
    ntfy refuses before storing anything) and the account lookup carry them; it never prints them."""
    cfg = json.loads(env["config"].read_text())
    server = cfg["server"].replace("http://", f"http://ana:{PASSWORD}@")
    env["config"].write_text(
        json.dumps({**cfg, "server": server, "token": TOKEN, "username": "ana", "password": PASSWORD})
    )
    code, doc, table = doctor()
    assert check(doc, "server")["status"] == "ok"
    health = [auth for method, path, auth in FakeNtfy.requests if path == "/v1/health"]
    assert health and all(auth is None for auth in health)  # the health check never sends credentials
    probes = {(method, path) for method, path, auth in FakeNtfy.requests if path != "/v1/health"}
    assert probes == {
        ("POST", "/donebell-doctor-test"),
        ("POST", "/donebell-doctor-test/donebell-capability-probe"),
        ("GET", "/v1/account"),
    }
    assert check(doc, "access")["status"] == "ok" and check(doc, "updates")["status"] == "ok"
    for text in (json.dumps(doc), table):
        assert TOKEN not in text and PASSWORD not in text


def test_unreachable_server_blocks_and_exits_nonzero(env: dict[str, Path]) -> None:
    """A server nobody listens on is a failure: exit 1 with the next step."""
    env["config"].write_text(json.dumps({"server": "http://127.0.0.1:9", "topic": "t"}))
    code, doc, table = doctor()
    assert code == 1 and doc["ok"] is False
    assert check(doc, "server")["status"] == "fail" and "cannot reach" in check(doc, "server")["summary"]
    assert "FAIL" in table and "problem(s) block notifications" in table


def test_a_redirecting_server_fails(env: dict[str, Path]) -> None:
    """donebell never follows redirects, so a redirecting server URL is a failure."""
    FakeNtfy.redirect = True
    code, doc, _ = doctor()
    assert code == 1 and "redirects" in check(doc, "server")["summary"]


def test_clock_skew_against_the_server_is_a_warning(env: dict[str, Path]) -> None:
    """A clock 10 minutes off the server's Date header is reported."""
    FakeNtfy.skew = 600.0
    _, doc, _ = doctor()
    assert check(doc, "clock")["status"] == "warn"
    FakeNtfy.skew = 0.0
    _, doc, _ = doctor()
    assert check(doc, "clock")["status"] == "ok"


def test_missing_or_loose_config(env: dict[str, Path]) -> None:
    """No topic fails; a group-readable config without secrets warns with the chmod to run."""
    env["config"].chmod(0o644)
    _, doc, _ = doctor()
    assert (
        check(doc, "config")["status"] == "warn" and f"chmod 600 {env['config']}" in check(doc, "config")["next_step"]
    )
    env["config"].write_text(json.dumps({"server": "https://ntfy.sh"}))
    code, doc, _ = doctor()
    assert code == 1 and check(doc, "config")["status"] == "fail"


def test_service_state_through_the_runner(env: dict[str, Path]) -> None:
    """No systemctl -> unknown; an inactive unit -> warn with the restart command; a live supervisor -> ok."""
    unit = env["xdg_config"] / "systemd" / "user" / "donebell.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")
    missing = RecordingRunner({("systemctl",): Completed((), 127, "", "systemctl: command not found")})
    _, doc, _ = doctor(missing)
    assert check(doc, "service")["status"] == "unknown"
    assert ("systemctl", "--user", "is-active", "donebell.service") in missing.calls
    reachable: dict[tuple[str, ...], Completed] = {
        ("systemctl", "--user", "show-environment"): Completed((), 0, "HOME=/h\n", "")
    }
    inactive = RecordingRunner(
        {**reachable, ("systemctl",): Completed((), 3, "inactive\n", "")}, programs={"systemctl": "/bin/systemctl"}
    )
    _, doc, _ = doctor(inactive)
    assert (
        check(doc, "service")["status"] == "warn" and "systemctl --user restart" in check(doc, "service")["next_step"]
    )
    state = StateDir(env["state"]).ensure()
    state.write_health(
        "supervisor",
        {**current_process_identity(), "state": "running", "started_at": now(), "heartbeat_at": now(), "roles": {}},
    )
    _, doc, _ = doctor(RecordingRunner({("systemctl",): Completed((), 0, "active\n", "")}))
    assert check(doc, "service")["status"] == "ok" and str(os.getpid()) in check(doc, "service")["summary"]


def test_dead_letters_failing_deliveries_and_log_errors(env: dict[str, Path]) -> None:
    """Dead letters and log errors warn; an outbox record failing for 20 minutes blocks (exit 1)."""
    state = StateDir(env["state"]).ensure()
    _, doc, _ = doctor()
    assert check(doc, "queue")["status"] == "ok"
    key = "a" * 64
    state.create("dead", {**records.base("receipt", key, "codex"), "status": "dead", "reason": "permanent-http-error"})
    state.log("error", "delivery refused: HTTP 400")
    outbox = {
        **records.base("outbox", "b" * 64, "codex"),
        "promoted_at": now() - 1200,
        "attempts": 7,
        "last_error": "HTTP 401 unauthorized",
    }
    state.create("outbox", outbox)
    code, doc, _ = doctor()
    assert "permanent-http-error" in check(doc, "dead_letters")["summary"]
    assert "HTTP 400" in check(doc, "errors")["summary"]
    assert check(doc, "delivery")["status"] == "fail" and "HTTP 401" in check(doc, "delivery")["summary"]
    assert code == 1
