"""The README's install commands, run for real: `pipx install .` and `uv tool install .` from a
clean copy of the tree each give a working `donebell`, and the service launchers `donebell
install` would write name the executable of that install (not a checkout's, not one on PATH).

pipx and uv are the releases from the package index (the test extra); their homes, bin folders
and the user's HOME are temporary folders, so nothing of the machine's own tools changes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.source_tree import tracked_copy

# Generous: each install builds a wheel and resolves the dependencies from the index.
pytestmark = [pytest.mark.installed_wheel, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class ToolInstall:
    tool: str
    home: Path  # where the tool keeps its venvs
    bin_dir: Path  # where it links the commands, the folder a user has on PATH
    env: dict[str, str]

    @property
    def donebell(self) -> Path:
        return self.bin_dir / "donebell"


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    if not exe.exists():
        pytest.skip(f"{name} is not installed in this environment (install the test extra)")
    return str(exe)


def _base_env(root: Path) -> dict[str, str]:
    home = root / "home"
    for folder in (".codex", ".claude", ".config"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DONEBELL_", "PYTHON", "VIRTUAL_ENV", "PIPX_", "UV_"))
    }
    return env | {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "CODEX_HOME": str(home / ".codex"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        # The server is never reached here; nothing sends (no `test`, no running roles).
        "DONEBELL_SERVER": "http://127.0.0.1:9",
    }


def _install(tool: str, root: Path) -> ToolInstall:
    source = tracked_copy(root / "src")
    env = _base_env(root)
    if tool == "pipx":
        home, bin_dir = root / "pipx-home", root / "bin"
        env |= {"PIPX_HOME": str(home), "PIPX_BIN_DIR": str(bin_dir), "PIPX_MAN_DIR": str(root / "man")}
        argv = [_tool("pipx"), "install", "--python", sys.executable, str(source)]
    else:
        home, bin_dir = root / "uv-tools", root / "bin"
        env |= {
            "UV_TOOL_DIR": str(home),
            "UV_TOOL_BIN_DIR": str(bin_dir),
            "UV_PYTHON": sys.executable,  # this interpreter: never a downloaded one
            "UV_PYTHON_DOWNLOADS": "never",
            "UV_CACHE_DIR": str(Path.home() / ".cache" / "uv"),  # the real user's cache, not the temp HOME
        }
        argv = [_tool("uv"), "tool", "install", str(source)]
    result = subprocess.run(argv, env=env, cwd=root, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, f"{' '.join(argv)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return ToolInstall(tool, home, bin_dir, env)


def _run(install: ToolInstall, *args: str) -> subprocess.CompletedProcess[str]:
    env = install.env | {"PATH": f"{install.bin_dir}{os.pathsep}{install.env.get('PATH', '')}"}
    result = subprocess.run(
        ["donebell", *args], env=env, cwd=install.env["HOME"], capture_output=True, text=True, timeout=120, check=False
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stdout[-2000:] + result.stderr[-2000:]
    return result


@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_the_tool_install_gives_a_working_donebell(tool: str, tmp_path: Path) -> None:
    """`pipx install .` / `uv tool install .`, then the README's next steps work from that install."""
    install = _install(tool, tmp_path)
    assert install.donebell.exists(), sorted(p.name for p in install.bin_dir.iterdir())
    version = _run(install, "--version")
    assert version.returncode == 0 and version.stdout.startswith("donebell ")
    match = re.search(r" from (\S+) \(Python ", version.stdout)
    assert match and Path(match.group(1)).is_relative_to(install.home), version.stdout  # the tool's own venv
    assert _run(install, "config", "init").returncode == 0
    assert _run(install, "config", "check").returncode == 0
    assert _run(install, "status", "--json").stdout.strip().startswith("{")
    dry = _run(install, "install", "--dry-run", "--service", "none")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    # The hooks and every service launcher name the executable inside the tool's venv, which
    # stays put when the tool relinks its bin folder.
    script = _executable_of(install)
    assert f'"command": "{script} hook codex-stop"' in dry.stdout, dry.stdout
    unit = _run(install, "install", "--dry-run", "--service", "systemd").stdout
    assert f"+ExecStart={script} run" in unit.splitlines(), unit
    plist = _run(install, "install", "--dry-run", "--service", "launchd").stdout
    assert f"+    <string>{script}</string>" in plist.splitlines(), plist
    task = _run(install, "install", "--dry-run", "--service", "task-scheduler").stdout
    assert f"+      <Command>{script.with_name('pythonw.exe')}</Command>" in task.splitlines(), task
    assert "+      <Arguments>-m donebell run</Arguments>" in task.splitlines(), task


def _executable_of(install: ToolInstall) -> Path:
    """The donebell script in the tool's venv (what the bin folder's link points at)."""
    (script,) = [p for p in install.home.rglob("bin/donebell") if p.is_file()]
    assert install.donebell.resolve() == script.resolve()
    return script


def test_the_readme_installs_exactly_the_way_tested_here() -> None:
    """The quick start's install block names the two commands the test above runs, nothing else."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start", 1)[1].split("```", 2)[1]
    commands = {line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()}
    assert commands == {"pipx install .", "uv tool install ."}, commands
