"""The platform seam (issue 39): only shared/platform/ asks which OS runs, and
``DONEBELL_FORCE_PORTABLE=1`` switches every switchable capability (doctor says so).

The portable implementations are what macOS and Windows run (stat polling, psutil, non-blocking
probes, ``exec``-started roles); tests/test_platform_portable.py runs each of them here. What only
Windows can run (``msvcrt``, console flags) is said so in docs/platforms.md.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.shared import platform
from donebell.supervisor import role_fork

REPO = Path(__file__).resolve().parents[1]
#: Every folder of code this repository runs (the product, its launcher, benchmarks, tools).
CODE_FOLDERS = ("shared", "workers", "supervisor", "ops", "benchmarks", "tools")
SEAM = REPO / "shared" / "platform"
#: What the standard library's platform module says about the OS (machine, processor and the
#: Python version are no question of which platform's code runs).
OS_QUESTIONS = {"system", "platform", "uname", "release", "version", "mac_ver", "win32_ver", "win32_edition",
                "freedesktop_os_release", "libc_ver", "java_ver"}  # fmt: skip


@pytest.fixture()
def portable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(platform.FORCE_PORTABLE_ENV, "1")


# --- one place asks ---------------------------------------------------------------------------


def platform_questions(source: str) -> list[str]:
    """Where ``source`` asks which OS runs: ``sys.platform``, ``os.name``, the stdlib ``platform``
    module, or their from-imports (aliases followed)."""
    tree = ast.parse(source)
    sys_names, os_names, stdlib_platform = {"sys"}, {"os"}, set[str]()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name
                {"sys": sys_names, "os": os_names, "platform": stdlib_platform}.get(alias.name, set()).add(bound)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = {a.name for a in node.names}
            if (node.module == "sys" and "platform" in names) or (node.module == "os" and "name" in names):
                found.append(f"line {node.lineno}: from {node.module} import {', '.join(sorted(names))}")
            if node.module == "platform" and names & OS_QUESTIONS:
                found.append(f"line {node.lineno}: from platform import {', '.join(sorted(names & OS_QUESTIONS))}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = node.value.id
            if (owner in sys_names and node.attr == "platform") or (owner in os_names and node.attr == "name"):
                found.append(f"line {node.lineno}: {owner}.{node.attr}")
            elif owner in stdlib_platform and node.attr in OS_QUESTIONS:
                found.append(f"line {node.lineno}: {owner}.{node.attr} (the platform module)")
    return found


def test_nothing_outside_the_seam_asks_which_platform_runs() -> None:
    """No module outside shared/platform/ reads sys.platform, os.name or the platform module."""
    offenders = {}
    for folder in CODE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if SEAM in path.parents:
                continue
            questions = platform_questions(path.read_text(encoding="utf-8"))
            if questions:
                offenders[str(path.relative_to(REPO))] = questions
    assert offenders == {}, f"ask the platform seam (shared/platform/) instead: {offenders}"


@pytest.mark.parametrize(
    "source",
    [
        "import sys\nif sys.platform == 'win32': pass\n",
        "import sys as _s\nx = _s.platform\n",
        "from sys import platform\n",
        "import os\nwindows = os.name == 'nt'\n",
        "from os import name\n",
        "import platform\nplatform.system()\n",
        "import platform as pf\npf.release()\n",
        "from platform import system\n",
        "def f():\n    import sys\n    return sys.platform.startswith('linux')\n",
    ],
)
def test_the_detector_sees_every_form(source: str) -> None:
    assert platform_questions(source)


def test_the_detector_leaves_the_seam_and_other_attributes_alone() -> None:
    assert platform_questions("from donebell.shared import platform\nplatform.host()\nimport os\nos.path.join\n") == []
    assert platform_questions("import sys\nsys.executable\n") == []
    assert platform_questions("import platform\nplatform.python_version()\nplatform.machine()\n") == []


# --- forced portable mode ---------------------------------------------------------------------


def test_forced_portable_switches_every_switchable_capability(portable: None) -> None:
    """Every capability with a portable implementation uses it; the host's conventions stay."""
    forced = platform.mechanisms()
    assert set(forced) == set(platform.CAPABILITIES)
    for capability in platform.CAPABILITIES:
        native, portable_one = platform._CHOICES[capability]
        assert forced[capability] == (portable_one or platform.native_mechanism(capability, platform.host()))
    assert forced["file_watch"] == "poll" and forced["process_identity"] == "psutil"
    assert forced["role_start"] == "exec" and forced["file_locked"] == "lock-probe"
    assert not role_fork.fork_enabled()


@pytest.mark.skipif(platform.host() != "linux", reason="the native names asserted are Linux's")
def test_doctor_reports_the_mechanisms_native_and_forced(tmp_path: Path) -> None:
    """The real `donebell doctor --json` and its table say what runs, in both modes."""
    env = {**os.environ, "DONEBELL_STATE_DIR": str(tmp_path / "state"), "DONEBELL_CONFIG": str(tmp_path / "c.json")}
    env.pop(platform.FORCE_PORTABLE_ENV, None)
    argv = [sys.executable, "-m", "donebell.supervisor.cli", "doctor"]
    seen = {}
    for forced in (False, True):
        run_env = {**env, platform.FORCE_PORTABLE_ENV: "1"} if forced else env
        doc = json.loads(subprocess.run([*argv, "--json"], capture_output=True, env=run_env, timeout=120).stdout)
        table = subprocess.run(argv, capture_output=True, text=True, env=run_env, timeout=120).stdout
        assert doc["portable_forced"] is forced and doc["platform"] == "linux"
        assert set(doc["mechanisms"]) == set(platform.CAPABILITIES)
        assert f"file_watch={doc['mechanisms']['file_watch']}" in table
        seen[forced] = doc["mechanisms"]
    assert seen[False]["file_watch"] == "inotify" and seen[True]["file_watch"] == "poll"
    assert seen[False]["file_locked"] == "proc-locks" and seen[True]["file_locked"] == "lock-probe"
