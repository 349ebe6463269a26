"""What a ``health/<role>.json`` holds, judged as input like any other state file.

A health file is written by one process and read by others (the supervisor, ``status``,
maintenance, ``uninstall``), so a damaged one must never crash a reader: valid JSON of another
shape (an array, a string, a 200,000-deep nesting that exhausts the parser's recursion, a
supervisor ``roles`` entry that is not an object) is refused here with a one-line reason, and the
readers show that reason instead of the record. Standard library only; loaded on first use (no
hook reads a health file).
"""

from __future__ import annotations

import json
from typing import Any


def parse(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """``(record, problem)``: the record when it is a JSON object (bad ``roles`` entries dropped),
    and what was wrong with the file, if anything."""
    try:
        value = json.loads(data.decode("utf-8"))
    except RecursionError:  # json's C scanner recurses per level: 200,000 "[" exhaust it
        return None, "bad health file (nested too deeply); rewritten when donebell runs"
    except ValueError:  # invalid UTF-8 or JSON, an empty or truncated file
        return None, "bad health file (not valid JSON); rewritten when donebell runs"
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else "a string" if isinstance(value, str) else "not an object"
        return None, f"bad health file ({kind}, not a JSON object); rewritten when donebell runs"
    roles = value.get("roles")
    if roles is None or (isinstance(roles, dict) and all(isinstance(v, dict) for v in roles.values())):
        return value, None
    if not isinstance(roles, dict):
        del value["roles"]
        return value, "bad health file ('roles' is not an object)"
    bad = sorted(str(name) for name, entry in roles.items() if not isinstance(entry, dict))
    value["roles"] = {name: entry for name, entry in roles.items() if isinstance(entry, dict)}
    return value, f"bad health file (the entry of {', '.join(bad)} is not an object)"
