"""Run the real donebell product around the real agent CLIs: config, install, supervisor, status.

One `Product` per scenario: its own state dir and config (server = an in-process ntfy stand-in,
its own topic, short but strict timings), `donebell install --service none` wiring the agent
home the harness made, `donebell run` as a real supervisor process (stopped with SIGTERM), and
assertions on exactly what reached the stand-in.

    with Product(tmp_path) as product:
        home = make_codex_home(tmp_path, server, extra_env=product.agent_env())
        product.install(codex_home=home)
        product.start()
        run = run_codex(home, "say hello")
        product.expect([Note("work", "FAKE-FINAL: hello · e2e · #a14a99c3")])
        product.assert_healthy()

Every failure message carries `diagnostics()`: the state dir listing, the pending/outbox records,
the tail of notify.log and the supervisor's output, so a CI failure can be read without a rerun.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from support import npm_clis
from support.ntfy_real import RealNtfy
from support.ntfy_standin import NtfyStandin

from e2e.agent_proc import base_env
from e2e.harness import ClaudeHome, CodexHome
from e2e.installed import INSTALLED, assert_wired_to_installed, donebell_command
from e2e.notes import FAST_CONFIG, JSON, Note
from e2e.state_files import brief, pid_alive, read_json

DONEBELL = donebell_command()


@dataclass
class Product:
    """A state dir + config + stand-in, and the donebell processes started over them."""

    root: Path
    config: JSON = field(default_factory=dict)
    topic: str = "donebell-e2e"
    #: A real ntfy server (with donebell's token) instead of the stand-in: config and `messages()` use it.
    ntfy: RealNtfy | None = None
    ntfy_token: str | None = None
    standin: NtfyStandin = field(init=False)
    state_dir: Path = field(init=False)
    config_path: Path = field(init=False)
    homes: dict[str, Path] = field(init=False, default_factory=dict)
    supervisors: list[subprocess.Popen[bytes]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.root = self.root / "donebell"
        self.root.mkdir(parents=True, exist_ok=True)
        self.state_dir = self.root / "state"
        self.config_path = self.root / "config" / "config.json"
        self.standin = NtfyStandin()

    # ---- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> Self:
        self.standin.start()
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        cfg = {"server": self.standin.url, "topic": self.topic, **FAST_CONFIG, **self.config}
        if self.ntfy is not None:
            cfg.update(server=self.ntfy.url, token=self.ntfy_token)
        self.config_path.write_text(json.dumps(cfg, indent=2))
        os.chmod(self.config_path, 0o600)
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        try:
            self.stop(check=False)
        finally:
            self.kill_everything()
            self.standin.stop()

    def agent_env(self) -> dict[str, str]:
        """What an agent's environment needs so that donebell's hooks find this state dir.

        A PYTHONPATH of the test run is passed on, so every donebell process (hooks, supervisor,
        roles) imports the same code as the test, e.g. a deliberately broken copy of the gate;
        never to an installed wheel, which must run on its own code."""
        env = {"DONEBELL_CONFIG": str(self.config_path), "DONEBELL_STATE_DIR": str(self.state_dir)}
        if os.environ.get("PYTHONPATH") and INSTALLED is None:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env

    def env(self, **extra: str) -> dict[str, str]:
        """The clean environment of every donebell command (install, run, status)."""
        home = self.homes.get("home", self.root / "home")
        env = base_env(home, self.root / "tmp") | self.agent_env()
        (self.root / "tmp").mkdir(exist_ok=True)
        for agent, variable in (("codex", "CODEX_HOME"), ("claude", "CLAUDE_CONFIG_DIR"), ("copilot", "COPILOT_HOME")):
            if agent in self.homes:
                env[variable] = str(self.homes[agent])
        return env | extra

    # ---- install --------------------------------------------------------------------------
    def install(self, *, codex: CodexHome | None = None, claude: ClaudeHome | None = None) -> str:
        """`donebell install --service none --codex/--claude` into the harness's agent homes."""
        args = ["install", "--service", "none"]
        if codex is not None:
            self.homes |= {"home": codex.home, "codex": codex.codex_home}
            args.append("--codex")
        if claude is not None:
            self.homes |= {"home": claude.home, "claude": claude.config_dir}
            args.append("--claude")
        env = self.env()
        if claude is not None:
            # install picks the exec form only when `claude --version` says 2.1.197 or later.
            env["PATH"] = f"{npm_clis.claude_binary().parent}:{env['PATH']}"
        res = subprocess.run([*DONEBELL, *args], env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, f"install failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
        if INSTALLED is not None:  # the agents' hooks call the wheel's script, not the checkout's
            assert_wired_to_installed(
                [codex.codex_home / "hooks.json"] if codex is not None else [],
                [claude.config_dir / "settings.json"] if claude is not None else [],
            )
        return res.stdout

    # ---- supervisor -----------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> subprocess.Popen[bytes]:
        """Start `donebell run` and wait until every role has settled (READY)."""
        n = len(self.supervisors)
        proc = subprocess.Popen(
            [*DONEBELL, "run"],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=open(self.root / f"run{n}.out", "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.supervisors.append(proc)
        self.wait_until(lambda: self._ready(proc), timeout, "the supervisor to report READY")
        return proc

    def _ready(self, proc: subprocess.Popen[bytes]) -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"donebell run exited {proc.returncode}\n{self.diagnostics()}")
        sup = self.health("supervisor")
        return bool(sup.get("pid") == proc.pid and sup.get("ready_at"))

    def stop(self, *, check: bool = True, timeout: float = 20.0) -> None:
        """SIGTERM every live supervisor; with `check`, it must exit 0 in time."""
        for proc in self.supervisors:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.kill_everything()
                    if check:
                        raise AssertionError(
                            f"donebell run ignored SIGTERM for {timeout}s\n{self.diagnostics()}"
                        ) from None
                if check:
                    assert proc.returncode == 0, f"donebell run exited {proc.returncode}\n{self.diagnostics()}"

    def crash(self) -> list[int]:
        """SIGKILL the supervisor and every role process it runs, as a machine or cgroup kill would.

        The supervisor goes first, so it cannot restart a role between the kills."""
        roles = [p for p in self.role_pids().values() if p]
        for proc in self.supervisors:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        for pid in roles:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # each role leads its own process group
        self.wait_until(lambda: not any(pid_alive(p) for p in roles), 10, "the killed roles to disappear")
        return roles

    @staticmethod
    def alive(pid: int) -> bool:
        return pid_alive(pid)

    def role_pids(self) -> dict[str, int | None]:
        roles = self.health("supervisor").get("roles") or {}
        return {name: (entry or {}).get("pid") for name, entry in roles.items()}

    def kill_everything(self) -> None:
        """Teardown: nothing this product started may outlive the test."""
        pids = [p for p in self.role_pids().values() if p]
        for role in ("delivery", "local-scanner", "remote-scanner", "maintenance"):
            pid = self.health(role).get("pid")
            if pid:
                pids.append(pid)
        for proc in self.supervisors:
            if proc.poll() is None:
                pids.append(proc.pid)
        for pid in set(pids):
            if pid_alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
        for proc in self.supervisors:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)

    # ---- state ----------------------------------------------------------------------------
    def health(self, name: str) -> JSON:
        return read_json(self.state_dir / "health" / f"{name}.json") or {}

    def records(self, folder: str) -> list[JSON]:
        out = []
        for path in sorted((self.state_dir / folder).glob("*.json")):
            rec = read_json(path)
            if rec is not None:
                out.append(rec)
        return out

    def log(self) -> list[JSON]:
        path = self.state_dir / "notify.log"
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        out = []
        for line in lines:
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def status(self) -> tuple[int, JSON]:
        res = subprocess.run(
            [*DONEBELL, "status", "--json"], env=self.env(), capture_output=True, text=True, timeout=30
        )
        try:
            return res.returncode, json.loads(res.stdout)
        except ValueError:
            raise AssertionError(
                f"status --json printed no JSON ({res.returncode}):\n{res.stdout}\n{res.stderr}"
            ) from None

    def assert_healthy(self, timeout: float = 15.0) -> JSON:
        """`donebell status --json` says healthy (exit 0), queue drained, nothing dead."""
        last: tuple[int, JSON] = (-1, {})

        def healthy() -> bool:
            nonlocal last
            last = self.status()
            code, doc = last
            queue = doc.get("queue", {})
            return code == 0 and doc.get("status") == "healthy" and not queue.get("pending") and not queue.get("outbox")

        with contextlib.suppress(AssertionError):
            self.wait_until(healthy, timeout, "status healthy")
        code, doc = last
        assert code == 0 and doc.get("status") == "healthy", (
            f"status {code}: {json.dumps(doc, indent=1)[:3000]}\n{self.diagnostics()}"
        )
        queue = doc["queue"]
        assert (queue["pending"], queue["outbox"], queue["dead"]) == (0, 0, 0), (
            f"queue not drained: {queue}\n{self.diagnostics()}"
        )
        return doc

    # ---- notifications --------------------------------------------------------------------
    def messages(self) -> list[JSON]:
        if self.ntfy is not None:
            return self.ntfy.poll(self.topic, token=self.ntfy_token)
        return self.standin.messages(self.topic)

    def expect(
        self, expected: Sequence[Note], *, deadline: float = 30.0, settle: float = 3.0, after: float | None = None
    ) -> list[JSON]:
        """Exactly `expected` (any order) reaches the stand-in within `deadline` seconds, and
        nothing more arrives for `settle` seconds after the last one. `after` (epoch s): every
        notification must have been received after this moment."""
        got = self._settled(len(expected), deadline, settle)
        assert sorted(Note.of(m) for m in got) == sorted(expected), (
            f"expected {len(expected)} notification(s) within {deadline}s:\n"
            + "".join(f"  want {n}\n" for n in sorted(expected))
            + "".join(f"  got  {Note.of(m)}\n" for m in got)
            + self.diagnostics()
        )
        if after is not None:
            early = [r for r in self.requests() if r.arrived_wall < after]
            assert not early, f"{len(early)} notification(s) arrived before {after}\n{self.diagnostics()}"
        return got

    def expect_matching(self, count: int, *, deadline: float = 30.0, settle: float = 3.0) -> list[JSON]:
        """Exactly ``count`` notifications arrive within ``deadline`` and nothing more for ``settle``
        seconds; returned for checks that a fixed :class:`Note` cannot express (a CLI's own text)."""
        got = self._settled(count, deadline, settle)
        assert len(got) == count, f"expected {count} notification(s), got {got}\n{self.diagnostics()}"
        return got

    def _settled(self, count: int, deadline: float, settle: float) -> list[JSON]:
        """The notifications once ``count`` arrived (or ``deadline`` passed) and ``settle`` s were quiet."""
        end = time.monotonic() + deadline
        while len(self.messages()) < count and time.monotonic() < end:
            time.sleep(0.05)
        quiet_until = time.monotonic() + settle
        seen = len(self.messages())
        while time.monotonic() < quiet_until:
            time.sleep(0.05)
            if len(self.messages()) != seen:
                seen, quiet_until = len(self.messages()), time.monotonic() + settle
        return self.messages()

    def expect_none(self, quiet: float) -> None:
        """Nothing reaches the stand-in for `quiet` seconds."""
        time.sleep(quiet)
        assert not self.messages(), f"unexpected notification(s): {self.messages()}\n{self.diagnostics()}"

    def requests(self) -> list[Any]:
        return [r for r in self.standin.requests if r.method in ("POST", "PUT")]

    # ---- diagnostics ----------------------------------------------------------------------
    def diagnostics(self, log_lines: int = 60) -> str:
        """The state dir listing, queue records, the scanners' cursors and health (where a missed push
        usually shows), notify.log tail and supervisor output."""
        out = [f"\n==== donebell state dir {self.state_dir}"]
        for path in sorted(p for p in self.state_dir.rglob("*") if p.is_file()):  # none if it is absent
            st = path.stat()
            out.append(f"  {path.relative_to(self.state_dir)}  {st.st_size} B  mtime {st.st_mtime:.3f}")
        for folder in ("pending", "outbox", "sent", "suppressed", "dead"):
            for rec in self.records(folder):
                out.append(f"---- {folder}/{rec.get('key', '?')}: " + brief(rec))
        for path in [*sorted(self.state_dir.glob("watch/**/*.json")), *self.state_dir.glob("health/*scanner*.json")]:
            with contextlib.suppress(OSError):
                out.append(f"---- {path.relative_to(self.state_dir)}: {path.read_text(errors='replace')[:2000]}")
        out.append(f"==== notify.log (last {log_lines} lines)")
        with contextlib.suppress(OSError):
            out += (self.state_dir / "notify.log").read_text(errors="replace").splitlines()[-log_lines:]
        for n, _ in enumerate(self.supervisors):
            out.append(f"==== donebell run #{n} output")
            with contextlib.suppress(OSError):
                out.append((self.root / f"run{n}.out").read_text(errors="replace")[-3000:])
        out.append("==== stand-in messages")
        out += [json.dumps(m) for m in self.messages()]
        return "\n".join(out)

    # ---- helpers --------------------------------------------------------------------------
    def wait_until(self, predicate: Any, timeout: float, what: str) -> None:
        """Poll `predicate` every 50 ms; fail with the diagnostics after `timeout` seconds."""
        end = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > end:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{self.diagnostics()}")
            time.sleep(0.05)
