"""Secrets never leave the config file: a full service run with failures, then a search everywhere.

``donebell run`` (real roles) delivers several turns through an ntfy stand-in that requires auth,
first with a wrong credential (401s), then the right one, with 5xx answers and a dropped
connection on the way. Meanwhile the argv of every process of the installation is sampled; after
it, every file under the state dir, the service's own output, ``status --json``, ``doctor
--json``, ``explain --json``, ``config show`` and ``donebell test`` are searched for the token
and the password in every encoding (``secrets_check.py``): zero hits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig
from support.secrets_check import SecretScan
from support.service import cmdlines_of, service

USER = "phil"
TOKEN = "tk_reliabilitytokenabcdef0123456"  # tk_ + 29 [a-z0-9], as ntfy issues them
PASSWORD = "pw-Reliability-S3cret-!@#"
WRONG_TOKEN = "tk_reliabilitywrongxyz9876543210"
WRONG_PASSWORD = "pw-Wrong-S3cret-%&*"


@pytest.mark.parametrize("mode", ["token", "basic"])
def test_no_secret_in_state_logs_health_outputs_or_argv_after_a_run_with_failures(
    make_rig: Callable[..., Rig], tmp_path: Path, mode: str
) -> None:
    """Token (Bearer) and user/password (Basic) runs with wrong credentials, 5xx and a dropped connection:
    the secrets appear in no state file, log, health file, command output or process argv."""
    with NtfyStandin(
        users={USER: PASSWORD}, tokens={TOKEN: USER}, default_access="deny-all", access={USER: {"rel-*": "read-write"}}
    ) as srv:
        wrong = {"token": WRONG_TOKEN} if mode == "token" else {"username": USER, "password": WRONG_PASSWORD}
        right = {"token": TOKEN} if mode == "token" else {"username": USER, "password": PASSWORD}
        rig = make_rig(server=srv.url, **wrong)
        scan = SecretScan(
            {"token": TOKEN, "password": PASSWORD, "wrong-token": WRONG_TOKEN, "wrong-password": WRONG_PASSWORD},
            username=USER,
        )
        samples: list[str] = []
        with service(rig, tmp_path / "service.log") as svc:
            svc.wait_ready()
            turns = [rig.new_turn() for _ in range(3)]
            for turn in turns:
                assert rig.hook_stop(turn).rc == 0
                rig.complete(turn, backdate=0)
            deadline = time.monotonic() + 10
            while not any("401" in str(r.get("last_error")) for r in rig.read_all("outbox")):
                samples.extend(cmdlines_of(rig))
                assert time.monotonic() < deadline, "no attempt was refused with 401"
                time.sleep(0.05)
            srv.faults.fail(500, count=2)
            srv.faults.accept_then_drop()
            rig.update_config(**right)
            deadline = time.monotonic() + 30
            while not all(rig.where(t.key) == ["sent"] for t in turns):
                samples.extend(cmdlines_of(rig))
                assert time.monotonic() < deadline, rig.counts()
                time.sleep(0.05)
            outputs = {
                "status --json": rig.run("status", "--json"),
                "doctor --json": rig.run("doctor", "--json"),
                "explain --json": rig.run("explain", "--json", turns[0].thread_id),
                "config show": rig.run("config", "show"),
                "test": rig.run("test", "--json"),
            }
            samples.extend(cmdlines_of(rig))
        assert svc.proc.returncode == 0

        scan.scan_tree(rig.state_dir)
        scan.scan_text("service output", svc.output())
        for name, result in outputs.items():
            scan.scan_text(name, result.output)
        scan.scan_cmdlines(samples)
        assert outputs["status --json"].output.lstrip().startswith("{")
        assert outputs["doctor --json"].output.lstrip().startswith("{")
        assert scan.hits == []
        assert scan.scanned["files"] > 10 and scan.scanned["processes"] > 10
        record(f"secrets_{mode}", hits=0, **scan.scanned)


def test_the_secret_checker_finds_each_encoding_it_claims(tmp_path: Path) -> None:
    """The checker itself can fail: raw, URL-encoded, JSON-escaped and Basic-header forms are all found."""
    import base64
    import json
    import urllib.parse

    scan = SecretScan({"password": PASSWORD}, username=USER)
    (tmp_path / "raw.log").write_text(f"x {PASSWORD} y")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "url.json").write_text(urllib.parse.quote(PASSWORD, safe=""))
    (tmp_path / "escaped.json").write_text(json.dumps({"p": PASSWORD + '"'}))
    scan.scan_tree(tmp_path)
    scan.scan_text("header", "Authorization: Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())
    scan.scan_cmdlines([f"prog --password={PASSWORD}", "donebell: delivery"])
    assert sorted(h.split(":")[0] for h in scan.hits) == [
        "argv 'prog --password=pw-Reliability-S3cret-!@#'",
        "escaped.json",
        "header",
        "raw.log",
        "sub/url.json",
    ]
