"""docs/security.md names a test for every place a secret could appear: each one it names exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_test_named_by_the_security_page_exists() -> None:
    text = (REPO / "docs" / "security.md").read_text("utf-8")
    named = re.findall(r"`(tests/[\w/]+\.py)((?:::\w+)?)`", text)
    assert len(named) >= 10
    for path, node in named:
        source = (REPO / path).read_text("utf-8")
        assert not node or f"def {node[2:]}(" in source, f"{path}{node} does not exist"
