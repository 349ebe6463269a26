"""httpx is imported without its command-line entry point (shared/httpx_without_cli.py).

The test environment has click and pygments installed (pipx and pytest bring them), which is
exactly where a plain ``import httpx`` pulls them in; the service must not.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = "import sys, {module}; print(sorted(m for m in ('click', 'pygments') if m in sys.modules))"


@pytest.mark.skipif(
    importlib.util.find_spec("click") is None or importlib.util.find_spec("pygments") is None,
    reason="the test needs click and pygments installed, the case a plain `import httpx` pays for",
)
@pytest.mark.parametrize(
    ("module", "loaded"),
    [
        ("httpx", "['click', 'pygments']"),  # the control: what a plain import costs here
        ("donebell.shared.ntfy.client", "[]"),
        ("donebell.shared.ntfy.subscribe", "[]"),
        ("donebell.workers.delivery.role", "[]"),
    ],
)
def test_the_service_never_loads_httpx_cli_dependencies(module: str, loaded: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == loaded


def test_no_module_imports_httpx_directly() -> None:
    """Every import of httpx in the code folders goes through the one module that drops its CLI."""
    direct = []
    for folder in ("shared", "workers", "supervisor"):
        for path in (REPO / folder).rglob("*.py"):
            if path.name == "httpx_without_cli.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                if any(name == "httpx" or name.startswith("httpx.") for name in names):
                    direct.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not direct, "import httpx through donebell.shared.httpx_without_cli: " + ", ".join(direct)
