"""Several machines, one phone: two donebell services on one real ntfy server (docs/wake.md,
"Several machines").

Each machine has its own HOME, state directory, config and Codex home (tests/support/two_machines.py);
a machine other than this one runs under its own host name (a UTS namespace). Taps are the HTTP
requests the ntfy app makes for a button: its method, URL, headers and body.
"""

from __future__ import annotations

import json
import secrets
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.delivery_kit import outbox_record
from support.ntfy_real import RealNtfy
from support.two_machines import THIS_HOST, Machine, one_server, stop
from support.waiting import wait_for
from support.wake_world import THREAD, statuses

pytestmark = pytest.mark.usefixtures("no_outside_config")

Setup = tuple[RealNtfy, dict[str, str]]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    yield from one_server(tmp_path_factory.mktemp("ntfy-machines"))


def machine(tmp: Path, setup: Setup, host: str = THIS_HOST, **config: Any) -> Machine:
    """A machine on the shared server, with topics of this test's own (the ACLs the setup describes)."""
    server, tokens = setup
    tmp.mkdir(parents=True, exist_ok=True)
    found = Machine(tmp, server, tokens, host)
    found.settings_data.update(config)
    found.write_config()
    return found


@pytest.fixture()
def topics(setup: Setup) -> dict[str, str]:
    """Fresh topics for one test: what another test's machines said on theirs is not heard here."""
    server, _ = setup
    tail = secrets.token_hex(6)
    chosen = {"topic": f"donebell-notes-{tail}", "wake_topic": f"donebell-replies-{tail}"}
    server.access("phone-replies", chosen["wake_topic"], "write-only")
    server.access("*", chosen["topic"], "read-only")
    return chosen


def subscribed(*machines: Machine) -> None:
    wait_for(lambda: all(m.health().get("subscription") == "subscribed" for m in machines), 30, "subscribed")


def counter(one: Machine, name: str) -> int:
    return int((one.health().get("counters") or {}).get(name, 0))


def cards(server: RealNtfy, topic: str) -> list[dict[str, Any]]:
    """The notification topic as the phone reads it (anonymous read)."""
    return server.poll(topic)


def test_a_cloned_machine_takes_a_new_identity_so_one_tap_runs_once(
    tmp_path: Path, setup: Setup, topics: dict[str, str]
) -> None:
    """A copy of the laptop's state directory and Codex home on a machine named `clone-b` (same
    machine id, as clones have): the copy notices it moved, takes a new host id and key and says so
    in its log and in doctor; a tap on the laptop's card then starts one turn, on the laptop only."""
    laptop = machine(tmp_path / "laptop", setup, **topics)
    (button,) = laptop.buttons()  # the laptop's key, made under this host's name
    clone = laptop.clone(tmp_path / "clone", "clone-b")
    first = clone.doctor()  # before the clone's service ran: doctor says what will happen
    assert any("belongs to another machine" in c["summary"] for c in first["checks"]), first
    a, b = laptop.start(), clone.start()
    try:
        subscribed(laptop, clone)
        laptop.tap(button)
        wait_for(lambda: statuses(laptop) == [("confirmed", None)], 30, "the laptop's turn")
        wait_for(lambda: counter(clone, "other-host") >= 1, 30, "the clone to hear the tap")
    finally:
        stop(a), stop(b)
    assert statuses(clone) == [] and len(clone.rollout_turns()) == 1
    assert [call for call in clone.codex_calls() if call[0] == "exec"] == []  # (doctor asks `codex --version`)
    assert len(laptop.rollout_turns()) == 2
    [said] = [m for m in clone.log_lines("error") if "copied from another machine" in m]
    assert f"host name '{THIS_HOST}', now 'clone-b'" in said
    checks = clone.doctor()["checks"]
    assert any(c["status"] == "warn" and "copied from another machine" in c["summary"] for c in checks), checks
    assert not any("copied" in c["summary"] for c in laptop.doctor()["checks"])


def test_rotating_the_key_takes_effect_in_the_running_wake_role(
    tmp_path: Path, setup: Setup, topics: dict[str, str]
) -> None:
    """`config rotate-wake-key` against a running service: a button made before it is refused
    (bad-signature), one made after it starts the turn, without a restart."""
    laptop = machine(tmp_path / "laptop", setup, **topics)
    proc = laptop.start()
    try:
        subscribed(laptop)
        (old,) = laptop.buttons()
        rotated = laptop.cli("config", "rotate-wake-key")
        assert rotated.returncode == 0, rotated.stderr
        (new,) = laptop.buttons()
        laptop.tap(old)
        wait_for(lambda: counter(laptop, "refused-bad-signature") == 1, 30, "the old button refused")
        laptop.tap(new)
        wait_for(lambda: statuses(laptop) == [("confirmed", None)], 30, "the new button's turn")
    finally:
        stop(proc)
    assert len(laptop.rollout_turns()) == 2


def test_a_tap_made_while_the_service_was_down_is_refused_stale_and_the_phone_hears_it(
    tmp_path: Path, setup: Setup, topics: dict[str, str]
) -> None:
    """A tap older than wake_tap_max_age_seconds on the server's clock when the service reads it:
    refused `stale`, logged, and a notice on the notification topic says so and carries a fresh
    button, which starts the turn."""
    server, _ = setup
    laptop = machine(tmp_path / "laptop", setup, wake_tap_max_age_seconds=2, **topics)
    (button,) = laptop.buttons()
    laptop.tap(button)  # the service is down
    time.sleep(3.5)
    proc = laptop.start()
    try:
        wait_for(lambda: statuses(laptop) == [("refused", "stale")], 30, "the stale tap refused")
        [notice] = wait_for(lambda: cards(server, topics["topic"]), 15, "the notice")
        assert notice["title"] == f"{THIS_HOST}: Continue not run"
        assert "tap again" in notice["message"] and "(the limit is 2s)" in notice["message"]
        assert laptop.codex_calls() == []
        [fresh] = [a for a in notice["actions"] if a["label"] == "Continue"]
        laptop.tap(fresh)
        wait_for(lambda: ("confirmed", None) in statuses(laptop), 30, "the fresh tap's turn")
    finally:
        stop(proc)
    assert any("Continue not run" in m or "stale" in m for m in laptop.log_lines("warning"))
    shown = laptop.cli("log", "--last", "0").stdout
    assert "refused: stale" in shown, shown


FAILING_CODEX = """#!{python}
import sys
print("WARNING: proceeding, even though we could not create PATH aliases", file=sys.stderr)
print("Not inside a trusted directory and --skip-git-repo-check was not specified.", file=sys.stderr)
sys.exit(1)
"""


def test_a_failed_start_is_told_to_the_phone_and_the_button_still_works(
    tmp_path: Path, setup: Setup, topics: dict[str, str]
) -> None:
    """The agent command fails (Codex's own refusal): the wake fails with the agent's reason in one
    log line, a notice reaches the phone with that reason, and the same button, tapped again once
    the cause is fixed, starts the turn (it was not used up)."""
    server, _ = setup
    laptop = machine(tmp_path / "laptop", setup, **topics)
    codex = tmp_path / "laptop" / "bin" / "codex"
    good = codex.read_text()
    codex.write_text(FAILING_CODEX.format(python=sys.executable))
    (button,) = laptop.buttons()
    proc = laptop.start()
    try:
        subscribed(laptop)
        laptop.tap(button)
        wait_for(lambda: [s for s, _ in statuses(laptop)] == ["failed"], 60, "the failed wake")
        [(_, reason)] = statuses(laptop)
        assert reason == "exit 1: Not inside a trusted directory and --skip-git-repo-check was not specified."
        wait_for(lambda: any(reason in m for m in laptop.log_lines("warning")), 15, "the log line")
        assert reason in laptop.cli("log", "--last", "0").stdout  # where the user looks
        [notice] = wait_for(lambda: cards(server, topics["topic"]), 15, "the failure notice")
        assert notice["title"] == f"{THIS_HOST}: Continue failed" and reason in notice["message"]
        codex.write_text(good)
        codex.chmod(codex.stat().st_mode | stat.S_IXUSR)
        laptop.tap(button)  # the same button again
        wait_for(lambda: ("confirmed", None) in statuses(laptop), 30, "the second tap's turn")
    finally:
        stop(proc)
    assert len(laptop.rollout_turns()) == 2


def _notify(one: Machine, turn: str) -> None:
    """A finished turn in the machine's outbox, published by its own delivery role (under its host name)."""
    one.turn(turn, done=True)
    one.state.create("outbox", outbox_record(thread_id=THREAD, turn_id=turn))
    sent = one.cli("worker", "delivery", "--once")
    assert sent.returncode == 0 and one.state.count("outbox") == 0, sent.stderr


def test_two_machines_hear_each_other_put_the_host_first_and_status_shows_them(
    tmp_path: Path, setup: Setup, topics: dict[str, str]
) -> None:
    """Both wake roles say hello on the reply topic; then each card's title starts with its host
    (two projects of the same name stay apart when collapsed); `status` shows the wake role ready,
    subscribed, and the other machine."""
    server, _ = setup
    laptop = machine(tmp_path / "laptop", setup, **topics)
    devbox = machine(tmp_path / "devbox", setup, "devbox-b", **topics)
    a, b = laptop.start(), devbox.start()
    try:
        subscribed(laptop, devbox)
        wait_for(lambda: [m["host"] for m in laptop.health().get("other_machines", [])] == ["devbox-b"], 30, "hello")
        wait_for(lambda: [m["host"] for m in devbox.health().get("other_machines", [])] == [THIS_HOST], 30, "hello")
        _notify(laptop, "turn-2")
        _notify(devbox, "turn-2")
        titles = sorted(card["title"] for card in cards(server, topics["topic"]))
        assert titles == sorted([f"{THIS_HOST}: donebell", "devbox-b: donebell"]), titles
        wait_for(lambda: laptop.health().get("state") == "ready", 30, "ready")
        doc = json.loads(laptop.cli("status", "--json").stdout)
        wake = doc["roles"]["wake"]
        assert (wake["state"], wake["subscription"]) == ("ready", "subscribed"), wake
        assert [m["host"] for m in wake["other_machines"]] == ["devbox-b"]
        table = laptop.cli("status").stdout
        assert "subscription: subscribed" in table and "hears devbox-b" in table, table
    finally:
        stop(a), stop(b)


def test_doctor_warns_when_another_machine_has_this_ones_origin_or_host_name(
    tmp_path: Path, setup: Setup, topics: dict[str, str]
) -> None:
    """A copied config (`origin: devbox` on both) makes two machines indistinguishable on the phone:
    doctor on either names the other; a machine with this one's host name is named too."""
    laptop = machine(tmp_path / "laptop", setup, origin="devbox", **topics)
    other = machine(tmp_path / "other", setup, "other-c", origin="devbox", **topics)
    namesake = machine(tmp_path / "namesake", setup, **topics)  # another state directory, this host's name
    procs = [laptop.start(), other.start(), namesake.start()]
    try:
        subscribed(laptop, other, namesake)
        wait_for(lambda: len(laptop.health().get("other_machines", [])) == 2, 30, "both hellos")
    finally:
        for proc in procs:
            stop(proc)
    summaries = [c["summary"] for c in laptop.doctor()["checks"] if c["status"] == "warn"]
    assert any("other-c" in s and "origin 'devbox'" in s for s in summaries), summaries
    assert any(f"host name '{THIS_HOST}'" in s for s in summaries), summaries
