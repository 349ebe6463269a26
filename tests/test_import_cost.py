"""The hook path's import budget (design.md): standard library only, and none of the heavy parts.

Each case runs the real command under ``python -X importtime`` with a real payload and reads the
list of modules the process imported. The hook must do its work (a record is written), so an
early crash cannot pass for a lean import list.

The hook process runs with ``-S`` (no ``site``) and only donebell's own folders on its path: an
editable install's ``.pth`` finder imports ``pathlib`` and ``importlib.util`` into *every*
interpreter of its venv, which would hide the hook importing them; and without site-packages any
third-party import fails the hook's work outright.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import donebell.shared
import donebell.workers
import pytest
from support.hooks_harness import HookEnv, claude_event, notify_payload

#: Standard library modules the hook path does without: ~6 ms together against a ~10 ms
#: interpreter start (docs/hooks.md, "Speed").
STDLIB_FORBIDDEN = {
    "typing",  # annotations only, under TYPE_CHECKING
    "pathlib",  # with urllib.parse and ipaddress; the hook path works on os.path strings
    "contextlib",
    "importlib.util",  # (`python -m` loads it through runpy; the installed hooks run the script)
    "importlib",  # the CLI dispatches with __import__
}
#: Third-party or heavy modules the hook path must never load (top-level package names).
FORBIDDEN = {
    "pydantic",
    "pydantic_settings",
    "httpx",
    "psutil",
    "orjson",
    "filelock",
    "asyncio",
    "argparse",
    "email",
    "urllib.request",
    # start-up cost guards (each costs milliseconds against a ~10 ms interpreter start):
    "dataclasses",  # inspect + ast + dis
    "hashlib",  # loads OpenSSL; keys.py uses the built-in SHA-256
    "subprocess",  # the kick uses os.posix_spawn
    "logging",
    "traceback",
    "sqlite3",  # only when neither rollout file nor name lookup classified the thread
    "donebell.shared.config",  # pydantic settings: hooks read config with config_schema.read_keys
    *STDLIB_FORBIDDEN,
}
#: The donebell modules a hook may import (design.md "Hook path import budget").
ALLOWED_DONEBELL = {
    "donebell",
    "donebell.shared",
    "donebell.shared.cli",
    "donebell.shared.hook_signals",  # the builtin _signal only
    "donebell.shared.paths",
    "donebell.shared.configfile",
    "donebell.shared.config_fields",  # the generated field table and the one normalizer of every reader
    "donebell.shared.config_schema",
    "donebell.shared.settings_coerce",
    "donebell.shared.keys",
    "donebell.shared.statedir",
    "donebell.shared.statedir._base",  # the package's hook-path layers (not _roles, _upkeep)
    "donebell.shared.statedir._files",
    "donebell.shared.statedir._records",
    "donebell.shared.records",
    "donebell.shared.ingest",
    "donebell.shared.codex_meta",
    "donebell.shared.liveness",
    "donebell.shared.proc_group",  # spawn_detached: os.posix_spawn, nothing imported before it is needed
    "donebell.shared.message_redaction",  # only with include_message (or a StopFailure's error_details)
    "donebell.workers",
}


def imported_modules(stderr: bytes) -> set[str]:
    """Module names from ``-X importtime`` output."""
    names = set()
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


#: Runs the CLI as the ``donebell`` console script does (``main()``; ``python -m`` would add
#: runpy's own imports), and dumps ``sys.modules`` at exit as a second witness next to
#: ``-X importtime``.
PROBE = (
    "import atexit, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
    "from donebell.shared.cli import main\n"
    "sys.exit(main())\n"
)


def package_root(tmp: Path) -> Path:
    """A folder holding only ``donebell/``: links to the folders this test imports donebell from."""
    root = tmp / "only-donebell"
    (root / "donebell").mkdir(parents=True)
    for package in (donebell.shared, donebell.workers):
        name = package.__name__.rsplit(".", 1)[1]
        os.symlink(list(package.__path__)[0], root / "donebell" / name)
    return root


def bare_python(hooks: HookEnv, **env: str) -> tuple[list[str], dict[str, str]]:
    """``python -S`` (no site, no .pth finder) that imports donebell from :func:`package_root`."""
    environment = hooks.env(**env)
    environment["PYTHONPATH"] = str(package_root(hooks.root))
    return [sys.executable, "-S"], environment


def run_with_importtime(hooks: HookEnv, args: list[str], stdin: bytes = b"", **env: str) -> set[str]:
    """Every module the hook process loaded: ``-X importtime`` names plus ``sys.modules`` at exit."""
    out = hooks.root / "modules.txt"
    python, environment = bare_python(hooks, **env)
    cmd = [*python, "-X", "importtime", "-c", PROBE, str(out), "hook", *args]
    result = subprocess.run(cmd, input=stdin, capture_output=True, env=environment, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    reported = imported_modules(result.stderr)
    loaded = set(out.read_text().split())
    assert "donebell.workers.hooks.context" in reported  # importtime saw the hook's own imports
    assert "donebell.workers.hooks" in loaded
    return reported | loaded


def assert_lean(modules: set[str]) -> None:
    bad = {m for m in modules if m in FORBIDDEN or m.split(".")[0] in FORBIDDEN}
    assert not bad, f"the hook path imported {sorted(bad)}"
    extra = {
        m
        for m in modules
        if m.startswith("donebell") and m not in ALLOWED_DONEBELL and not m.startswith("donebell.workers.hooks")
    }
    assert not extra, f"donebell modules outside the hook budget: {sorted(extra)}"


@pytest.fixture()
def hooks(tmp_path: Path) -> HookEnv:
    env = HookEnv(tmp_path)
    env.install_rollout("simple-exec", upto="task_complete")
    return env


def test_codex_stop_imports_only_the_budget(hooks: HookEnv) -> None:
    """`hook codex-stop` (root Stop, candidate written, kick spawned) stays inside the import budget."""
    kick = json.dumps([sys.executable, "-c", "pass"])
    payload = json.dumps(hooks.stop_payload("simple")).encode()
    assert_lean(run_with_importtime(hooks, ["codex-stop"], payload, DONEBELL_KICK_COMMAND=kick))
    assert hooks.counts()["pending"] == 1
    assert "started an on-demand delivery worker" in hooks.log_messages()


def test_codex_notify_imports_only_the_budget(hooks: HookEnv) -> None:
    """`hook codex-notify` (root notify merged into a candidate) stays inside the import budget."""
    assert_lean(run_with_importtime(hooks, ["codex-notify", json.dumps(notify_payload("simple--notify-1"))]))
    assert hooks.only("pending")["source"] == "codex-notify"


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop"])
def test_claude_imports_only_the_budget(hooks: HookEnv, event: str) -> None:
    """`hook claude` (UserPromptSubmit epoch, Stop candidate) stays inside the import budget."""
    hooks.claude(claude_event("print-tool", "UserPromptSubmit"))
    payload = json.dumps(claude_event("print-tool", event)).encode()
    assert_lean(run_with_importtime(hooks, ["claude"], payload))
    assert len(list((hooks.state_dir / "claude").glob("*.json"))) == 1
    assert hooks.counts()["pending"] == (1 if event == "Stop" else 0)


def test_claude_stop_failure_imports_only_the_budget(hooks: HookEnv) -> None:
    """`hook claude` StopFailure (the recorded 529 run: a failed candidate) stays inside the import budget."""
    hooks.claude(claude_event("print-apierror529", "UserPromptSubmit"))
    payload = json.dumps(claude_event("print-apierror529", "StopFailure")).encode()
    assert_lean(run_with_importtime(hooks, ["claude"], payload))
    assert hooks.only("pending")["outcome"] == "failed"


@pytest.mark.parametrize("include", [True, False])
@pytest.mark.parametrize("event", ["Stop", "StopFailure"])
def test_claude_with_message_text_imports_only_the_budget(hooks: HookEnv, event: str, include: bool) -> None:
    """With include_message on, the hook redacts the excerpt it stores and still stays inside the budget;
    with it off (the default) the redactor is not even imported."""
    hooks.write_config(include_message=include)
    scenario = "print-tool" if event == "Stop" else "print-apierror529"
    hooks.claude(claude_event(scenario, "UserPromptSubmit"))
    payload = {**claude_event(scenario, event), "last_assistant_message": "done; api_key=9f8e7d6c5b4a39281706"}
    modules = run_with_importtime(hooks, ["claude"], json.dumps(payload).encode())
    assert_lean(modules)
    assert ("donebell.shared.message_redaction" in modules) is include
    assert hooks.only("pending").get("last_message") == ("done; api_key=[REDACTED]" if include else None)


def test_refused_payload_imports_only_the_budget(hooks: HookEnv) -> None:
    """Even the error path (invalid UTF-8, logged) imports nothing heavy such as traceback or logging."""
    assert_lean(run_with_importtime(hooks, ["codex-stop"], b"\xff\xfe"))
    assert "payload refused" in hooks.log_messages()


def test_importtime_parser_sees_nested_modules() -> None:
    """The -X importtime parser returns nested module names (so the checks above can fail)."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import json"], capture_output=True, timeout=60)
    modules = imported_modules(result.stderr)
    assert {"json", "json.decoder"} <= modules
    for heavy in ("pydantic.main", "typing", "importlib.util"):
        with pytest.raises(AssertionError):
            assert_lean(modules | {heavy})


def test_bare_interpreter_preloads_no_forbidden_module(hooks: HookEnv) -> None:
    """The hook's interpreter (-S, donebell's folders only) starts without pathlib, typing... so a hook importing one is caught."""
    python, environment = bare_python(hooks)
    code = "import sys, donebell.shared.cli; print('\\n'.join(sys.modules))"
    result = subprocess.run([*python, "-c", code], capture_output=True, env=environment, timeout=60, check=True)
    preloaded = set(result.stdout.decode().split())
    assert "donebell.shared.cli" in preloaded
    assert not preloaded & STDLIB_FORBIDDEN, sorted(preloaded & STDLIB_FORBIDDEN)
    # and a plain pathlib import in that interpreter is seen by the same checks:
    result = subprocess.run([*python, "-X", "importtime", "-c", "import pathlib"], capture_output=True, env=environment)
    with pytest.raises(AssertionError):
        assert_lean(imported_modules(result.stderr))
