"""The hook path's import budget (design.md): standard library only, and none of the heavy parts;
and the lean core stated once (``shared/lean_core.py``): only its modules bend the code for start-up.

Each case runs the real command under ``python -X importtime`` with a real payload and reads the
list of modules the process imported. The hook must do its work (a record is written), so an
early crash cannot pass for a lean import list.

The hook process runs with ``-S`` (no ``site``) and only donebell's own folders on its path: an
editable install's ``.pth`` finder imports ``pathlib`` and ``importlib.util`` into *every*
interpreter of its venv, which would hide the hook importing them; and without site-packages any
third-party import fails the hook's work outright.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import donebell.shared
import donebell.supervisor
import donebell.workers
import pytest
from donebell.shared.lean_core import HOOK_PATH_MODULES, is_lean, on_hook_path
from support.hooks_harness import HookEnv, claude_event, notify_payload
from support.import_probe import PROBE, imported_modules

#: Standard library modules the hook path does without: ~6 ms together against a ~10 ms
#: interpreter start (docs/hooks.md, "Speed").
STDLIB_FORBIDDEN = {
    "typing",  # annotations only, under TYPE_CHECKING
    "pathlib",  # with urllib.parse and ipaddress; the hook path works on os.path strings
    "contextlib",
    "importlib.util",  # (`python -m` loads it through runpy; the installed hooks run the script)
    "importlib",  # the CLI dispatches with __import__
    "json",  # compiles regular expressions at import (re, enum: ~6 ms); shared/lean_json.py instead
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
    "donebell.shared.config.model",  # pydantic settings: hooks read config with schema.read_keys
    *STDLIB_FORBIDDEN,
}


def package_root(tmp: Path) -> Path:
    """A folder holding only ``donebell/``: links to the folders this test imports donebell from."""
    root = tmp / "only-donebell"
    (root / "donebell").mkdir(parents=True)
    for package in (donebell.shared, donebell.workers, donebell.supervisor):
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
    assert "donebell.workers.kit.hook_context" in reported  # importtime saw the hook's own imports
    assert "donebell.workers.hooks" in loaded
    return reported | loaded


#: donebell's own modules a root Stop hook imports (codex-stop, claude Stop): 34 at 81a8c74,
#: before the house step and the platform seam; issue 35 says the budget may not grow.
DONEBELL_MODULE_BUDGET = 34


def assert_within_count(modules: set[str]) -> None:
    own = sorted(m for m in modules if m == "donebell" or m.startswith("donebell."))
    assert len(own) <= DONEBELL_MODULE_BUDGET, f"{len(own)} donebell modules (budget {DONEBELL_MODULE_BUDGET}): {own}"


#: The message redactor's regular expressions: only a hook that keeps text (a needs-you request's
#: tool input, a final message with include_message) may load them.
REDACTOR_ONLY = {"re"}


def assert_lean(modules: set[str], *, redacts: bool = False) -> None:
    forbidden = FORBIDDEN if redacts else FORBIDDEN | REDACTOR_ONLY
    bad = {m for m in modules if m in forbidden or m.split(".")[0] in forbidden}
    assert not bad, f"the hook path imported {sorted(bad)}"
    extra = {m for m in modules if m.startswith("donebell") and not on_hook_path(m)}
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
    modules = run_with_importtime(hooks, ["codex-stop"], payload, DONEBELL_KICK_COMMAND=kick)
    assert_lean(modules)
    assert_within_count(modules)
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
    modules = run_with_importtime(hooks, ["claude"], payload)
    assert_lean(modules)
    assert_within_count(modules)
    assert len(list((hooks.state_dir / "claude").glob("*.json"))) == 1
    assert hooks.counts()["pending"] == (1 if event == "Stop" else 0)


@pytest.mark.parametrize(
    ("agent", "scenario", "command"),
    [("claude", "print-2.1.332-record", "claude"), ("codex", "exec-approve-for-me-record", "codex-permission")],
)
def test_needs_you_hooks_import_only_the_budget(hooks: HookEnv, agent: str, scenario: str, command: str) -> None:
    """`hook claude` PermissionRequest and `hook codex-permission` (the recorded payloads of the real
    CLIs: one needs-you outbox record) stay inside the import budget."""
    lines = (Path(__file__).parent / "fixtures" / "approvals" / agent / scenario / "hooks.jsonl").read_text()
    payload = next(e["payload"] for e in map(json.loads, lines.splitlines()) if e["event"] == "PermissionRequest")
    assert_lean(run_with_importtime(hooks, [command], json.dumps(payload).encode()), redacts=True)
    assert hooks.only("outbox")["notice"] == "needs-you"


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
    assert_lean(modules, redacts=include)
    assert ("donebell.shared.text.redaction" in modules) is include
    assert hooks.only("pending").get("last_message") == ("done; api_key=[REDACTED]" if include else None)


def test_refused_payload_imports_only_the_budget(hooks: HookEnv) -> None:
    """Even the error path (invalid UTF-8, logged) imports nothing heavy such as traceback or logging."""
    assert_lean(run_with_importtime(hooks, ["codex-stop"], b"\xff\xfe"))
    assert "payload refused" in hooks.log_messages()


def test_importtime_parser_sees_nested_modules() -> None:
    """The -X importtime parser returns nested module names, and each kind of forbidden module
    fails the check on its own (so the checks above can fail)."""
    cmd = [sys.executable, "-S", "-X", "importtime", "-c", "import json"]  # -S: no .pth finder's imports
    modules = imported_modules(subprocess.run(cmd, capture_output=True, timeout=60).stderr)
    assert {"json", "json.decoder", "re._parser"} <= modules
    lean = {m for m in modules if m.split(".")[0] not in ("json", "re")}
    assert_lean(lean)
    for heavy in ("json.decoder", "re._parser", "pydantic.main", "typing", "importlib.util"):
        with pytest.raises(AssertionError):
            assert_lean(lean | {heavy})
    assert_lean(lean | {"re", "re._parser"}, redacts=True)


def test_bare_interpreter_preloads_no_forbidden_module(hooks: HookEnv) -> None:
    """The hook's interpreter (-S, donebell's folders only) starts without pathlib, typing... so a hook importing one is caught."""
    python, environment = bare_python(hooks)
    code = "import sys, donebell.supervisor.cli; print('\\n'.join(sys.modules))"
    result = subprocess.run([*python, "-c", code], capture_output=True, env=environment, timeout=60, check=True)
    preloaded = set(result.stdout.decode().split())
    assert "donebell.supervisor.cli" in preloaded
    assert not preloaded & STDLIB_FORBIDDEN, sorted(preloaded & STDLIB_FORBIDDEN)
    # and a plain pathlib import in that interpreter is seen by the same checks:
    result = subprocess.run([*python, "-X", "importtime", "-c", "import pathlib"], capture_output=True, env=environment)
    with pytest.raises(AssertionError):
        assert_lean(imported_modules(result.stderr))


# --- the lean core, stated once (shared/lean_core.py) ------------------------------------------

REPO = Path(__file__).resolve().parents[1]
CODE_FOLDERS = ("shared", "workers", "supervisor")


def lean_tricks(source: str) -> list[str]:
    """The start-up tricks a module uses: ``TYPE_CHECKING = False``, a module ``__getattr__``
    (also under a top-level ``if``), or CPython's private ``_sha256`` / ``_sha2``."""
    found = []
    tree = ast.parse(source)
    top = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.If):
            top += node.body + node.orelse
    for node in top:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" for t in node.targets
        ):
            found.append("TYPE_CHECKING = False")
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            found.append("module __getattr__")
    for every in ast.walk(tree):
        if isinstance(every, ast.ImportFrom) and every.module in ("_sha256", "_sha2"):
            found.append(every.module)
        if isinstance(every, ast.Import) and any(alias.name in ("_sha256", "_sha2") for alias in every.names):
            found.append("import _sha256")
    return found


def code_modules() -> dict[str, Path]:
    """Every module of the installed package, by its import name."""
    modules = {}
    for folder in CODE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(("donebell", *parts[:-1])) if parts[-1] == "__init__" else ".".join(("donebell", *parts))
            modules[name] = path
    return modules


def test_hook_path_list_names_real_modules() -> None:
    """Every module in lean_core.HOOK_PATH_MODULES exists (a renamed module must be renamed there too)."""
    modules = set(code_modules()) | {"donebell"}
    assert [m for m in HOOK_PATH_MODULES if m not in modules] == []
    assert is_lean("donebell.shared.bounded_read") and is_lean("donebell.workers.agents.claude.hook")
    assert not is_lean("donebell.workers.agents.turn_status") and not on_hook_path("donebell.workers.hooks_extra")


def test_only_the_lean_core_uses_the_start_up_tricks() -> None:
    """Outside shared/lean_core.py's list no module uses TYPE_CHECKING = False, a module __getattr__ or
    _sha256: every other module imports typing and pathlib normally."""
    offenders = {
        name: tricks
        for name, path in code_modules().items()
        if not is_lean(name) and (tricks := lean_tricks(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, f"lean-core tricks outside shared/lean_core.py's list: {offenders}"


def test_trick_detector_sees_each_trick() -> None:
    """The detector above finds each trick at module level and under a top-level if (so the check can fail)."""
    assert lean_tricks("TYPE_CHECKING = False\n") == ["TYPE_CHECKING = False"]
    assert lean_tricks("if not TYPE_CHECKING:\n    def __getattr__(name): ...\n") == ["module __getattr__"]
    assert lean_tricks("try:\n    from _sha256 import sha256\nexcept ImportError:\n    pass\n") == ["_sha256"]
    assert lean_tricks("from typing import TYPE_CHECKING\nclass A:\n    def __getattr__(self, n): ...\n") == []
