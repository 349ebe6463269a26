"""A repository the agent works in cannot run code as donebell (issue 26 item 1).

A hook runs in the agent's working folder. Every process donebell starts from there (the kick's
``worker delivery --until-idle``, ``run``'s configuration check, the supervisor's roles, the remote
scanner's children, the remote gate's probe workers) must import only its own installation: a ``brotli.py`` in the agent's repository, imported
by httpx, would otherwise run with the user's rights, outside the agent's sandbox.

The names come from a real run, not from a list: first every process of the path (hook -> kick ->
delivery, ``donebell run`` with all five roles, ``doctor``) runs with a ``sitecustomize`` that
records each top-level module name it *tries* to import (an optional import that fails, like
``brotli``, is exactly the one a hostile folder would satisfy). Then the same path runs with the
working folder full of modules of those names, each writing a marker when imported: none may.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from support.ntfy_standin import NtfyStandin
from support.remote_gate_kit import remote_rollout, submit_remote_candidate
from support.rig import Rig, _turn_lines
from support.service import kill_leftovers
from support.supervisor_proc import FAST

DONEBELL = Path(sys.executable).with_name("donebell")
ROLES = ("delivery", "local-scanner", "remote-scanner", "maintenance", "wake")

#: Records the top-level name of every import attempted in this process (once per name).
RECORDER = """\
import os, sys

class _AttemptedImports:
    seen = set()

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in self.seen:
            self.seen.add(top)
            with open(os.environ["HOSTILE_TEST_NAMES"], "a") as f:
                f.write(top + "\\n")
        return None

sys.meta_path.insert(0, _AttemptedImports())
"""

#: A module that leaves a marker named after itself, then refuses to be what it claims to be.
HOSTILE = """\
import os
open(os.path.join({markers!r}, __name__), "w").close()
raise ImportError("hostile {name} from the agent's folder")
"""


def _config(rig: Rig, remote_home: Path) -> None:
    rig.update_config(
        wake_enabled=True,
        wake_topic=f"{rig.topic}-replies",
        wake_allow_unauthenticated=True,
        watch_roots=[str(remote_home)],
    )


def _env(rig: Rig, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in rig.env(**FAST).items() if k != "DONEBELL_KICK_COMMAND"}
    env.pop("PYTHONPATH", None)
    return {**env, **extra}


def _assert_nothing_imported(markers: Path | None) -> None:
    """Fails at once, naming the modules, when a process imported one from the agent's folder."""
    found = sorted(os.listdir(markers)) if markers is not None else []
    assert found == [], f"imported from the agent's folder: {found}"


def _hook_kick_delivery(rig: Rig, standin: NtfyStandin, cwd: Path, env: dict[str, str], markers: Path | None) -> None:
    """The agent's Stop hook in ``cwd`` kicks an on-demand delivery worker that sends the turn."""
    turn = rig.new_turn(complete=True)
    before = len(standin.messages(rig.topic))
    payload = rig.stop_payload(turn)
    hook = subprocess.run(
        [str(DONEBELL), "hook", "codex-stop"], input=json.dumps(payload).encode(), cwd=cwd, env=env, timeout=30
    )
    assert hook.returncode == 0
    deadline = time.monotonic() + 40
    while rig.state.locate(turn.key) != "sent":
        _assert_nothing_imported(markers)
        assert time.monotonic() < deadline, f"the kicked worker did not deliver: {rig.where(turn.key)}"
        time.sleep(0.1)
    assert len(standin.messages(rig.topic)) == before + 1


@contextlib.contextmanager
def _supervisor(rig: Rig, cwd: Path, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [str(DONEBELL), "run"], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        kill_leftovers(rig)


def _remote_task(rig: Rig, remote_home: Path) -> str:
    """A finished task in the remote Codex home, known only to the gate's remote probe worker."""
    thread = str(uuid.uuid4())
    lines, turn = _turn_lines(thread, time.time())
    rollout = remote_rollout(remote_home, thread)
    rollout.parent.mkdir(parents=True, exist_ok=True)
    rollout.write_bytes(b"".join(lines))
    return submit_remote_candidate(rig.state, remote_home, thread, turn, rollout)


def _roles_sit_in_the_root_folder(health: dict[str, dict[str, object]]) -> None:
    """Forked or exec'd, every role runs in `/`, not in the folder `donebell run` was started in."""
    if not sys.platform.startswith("linux"):
        return
    for role, h in health.items():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a role between passes may exit
            assert os.readlink(f"/proc/{h['pid']}/cwd") == "/", role


def _every_role_ran_a_pass(
    rig: Rig, proc: subprocess.Popen[bytes], log: Path, remote_key: str, markers: Path | None
) -> None:
    """Each role finished a pass, the remote scanner's child finished a scan, and the remote task
    was promoted on its probe worker's answer."""
    deadline = time.monotonic() + 60
    while True:
        _assert_nothing_imported(markers)
        assert proc.poll() is None, log.read_text("utf-8", "replace")[-2000:]
        health = {role: rig.state.read_health(role) or {} for role in ROLES}
        waiting = sorted(role for role, h in health.items() if not h.get("passes"))
        probed = any(r.get("answered") for r in health["delivery"].get("gate_remote") or [])
        remote_done = probed and rig.state.locate(remote_key) in ("sent", "suppressed")
        if not waiting and health["remote-scanner"].get("cycles_completed") and remote_done:
            _roles_sit_in_the_root_folder(health)
            return
        where = rig.where(remote_key)
        assert time.monotonic() < deadline, (
            f"roles without a pass: {waiting}; remote task in {where}; {log.read_text()[-2000:]}"
        )
        time.sleep(0.2)


def _the_whole_path(
    rig: Rig,
    standin: NtfyStandin,
    cwd: Path,
    env: dict[str, str],
    log: Path,
    remote_home: Path,
    markers: Path | None = None,
) -> None:
    _hook_kick_delivery(rig, standin, cwd, env, markers)
    remote_key = _remote_task(rig, remote_home)
    with _supervisor(rig, cwd, env, log) as proc:
        _every_role_ran_a_pass(rig, proc, log, remote_key, markers)
    doctor = subprocess.run([str(DONEBELL), "doctor", "--json"], cwd=cwd, env=env, capture_output=True, timeout=120)
    [config] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "config"]
    assert config["status"] == "ok", config  # doctor ran to its end in the agent's folder


def test_no_module_in_the_agents_folder_is_imported_by_any_donebell_process(
    make_rig: Callable[..., Rig], standin: NtfyStandin, tmp_path: Path
) -> None:
    """Hook -> kick -> delivery, `donebell run` (five roles, a remote scan child, a remote probe worker)
    and `doctor`, run in a folder holding a module of every name they import: no marker, and the
    turns are delivered."""
    remote_home = tmp_path / "remote-codex"
    (remote_home / "sessions").mkdir(parents=True)

    # 1. Which names do they try to import? A real run under the recorder.
    probe_dir, names_file = tmp_path / "probe", tmp_path / "names.txt"
    probe_dir.mkdir()
    (probe_dir / "sitecustomize.py").write_text(RECORDER)
    recorded = make_rig("recorded")
    _config(recorded, remote_home)
    plain = tmp_path / "plain"
    plain.mkdir()
    env = _env(recorded, PYTHONPATH=str(probe_dir), HOSTILE_TEST_NAMES=str(names_file))
    _the_whole_path(recorded, standin, plain, env, tmp_path / "recorded.log", remote_home)
    names = set(names_file.read_text().split()) - {"sitecustomize", "__main__"}
    assert {"donebell", "httpx", "json"} <= names  # the recorder saw the real imports
    optional = names - set(sys.modules)  # tried but absent here, e.g. brotli: the classic bait

    # 2. The same path in a folder full of modules of those names.
    hostile, markers = tmp_path / "agent-repo", tmp_path / "markers"
    hostile.mkdir()
    markers.mkdir()
    for name in sorted(names):
        if name.isidentifier():
            (hostile / f"{name}.py").write_text(HOSTILE.format(markers=str(markers), name=name))
    rig = make_rig("hostile")
    _config(rig, remote_home)
    _the_whole_path(rig, standin, hostile, _env(rig), tmp_path / "hostile.log", remote_home, markers)
    assert sorted(os.listdir(markers)) == [], f"imported from the agent's folder (optional ones: {sorted(optional)})"
