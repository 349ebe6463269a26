"""``donebell run``'s configuration check, run once in a short-lived child process.

The supervisor must refuse a broken configuration (one clear line, exit 78) and must write the
embedded default on a first run, but validating means importing pydantic-settings, which costs
~20 MiB of resident memory that an idle supervisor would then carry for ever. So the check runs
here, in ``python -m donebell.supervisor.doctor.preflight``, which prints one JSON object on stdout:

``{"ok": true, "config_path", "created", "subscribe_url" (only when created), "watch_roots",
"warnings": [...]}`` or ``{"ok": false, "error": "<one line>"}`` (exit code 78).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from donebell.shared.process.groups import NEUTRAL_CWD, own_python

EXIT_CONFIG = 78


def check() -> dict[str, Any]:
    """Write the default config if there is none, then load and validate it."""
    from donebell.shared.config import model

    try:
        path, created = model.init_config()
    except OSError as exc:
        return {"ok": False, "error": f"cannot write a default config: {exc}"}
    try:
        loaded = model.load()
    except model.ConfigError as exc:
        return {"ok": False, "error": str(exc)}
    settings = loaded.settings
    return {
        "ok": True,
        "config_path": str(path),
        "created": created,
        "subscribe_url": model.subscribe_url(settings) if created else None,
        "watch_roots": len(settings.watch_roots),
        "wake_enabled": settings.wake_enabled,
        "wake_problem": _wake_problem(settings),
        "warnings": list(loaded.warnings),
    }


def _wake_problem(settings: Any) -> str | None:
    from donebell.workers.wake.policy import config_problem

    return config_problem(settings) if settings.wake_enabled else None


def run_in_child(timeout: float = 60.0) -> dict[str, Any]:
    """Run :func:`check` in a child interpreter and return its answer."""
    try:
        proc = subprocess.run(
            own_python("donebell.supervisor.doctor.preflight"),
            cwd=NEUTRAL_CWD,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"ok": False, "error": f"configuration check did not run: {type(exc).__name__}: {exc}"}
    try:
        answer = json.loads(proc.stdout.decode("utf-8"))
        if isinstance(answer, dict) and "ok" in answer:
            return answer
    except (UnicodeDecodeError, ValueError):
        pass
    tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
    return {"ok": False, "error": f"configuration check failed (exit {proc.returncode}): {tail[0][:300]}"}


def main() -> int:
    answer = check()
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0 if answer["ok"] else EXIT_CONFIG


if __name__ == "__main__":
    sys.exit(main())
