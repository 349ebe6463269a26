"""The span-preserving JSON editor behind install: it writes only what it adds, in the file's
style, and a removal deletes exactly that text again."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from donebell.workers.kit.install.jsonedit import JsonDocument, JsonEditError, parse

GROUP = {"hooks": [{"type": "command", "command": "/x/donebell hook codex-stop", "timeout": 30}]}

STYLES = {
    "two spaces": json.dumps({"hooks": {"Stop": [{"hooks": []}]}, "n": 1}, indent=2) + "\n",
    "tabs": json.dumps({"hooks": {"Stop": [{"hooks": []}]}}, indent="\t"),
    "crlf": json.dumps({"a": [1, 2], "hooks": {}}, indent=4).replace("\n", "\r\n") + "\r\n",
    "compact": '{"hooks":{"Stop":[{"hooks":[]}]},"x":[1,2]}',
    "one line with spaces": '{"hooks": {"Stop": []}, "y": [1, 2]}',
    "empty object": "{}\n",
}


@pytest.mark.parametrize("text", STYLES.values(), ids=STYLES.keys())
def test_add_then_remove_gives_back_the_exact_text(text: str) -> None:
    """Appending a group (creating hooks/Stop when needed) and removing it restores every byte."""
    doc = JsonDocument(text)
    created: list[tuple[str, ...]] = []
    if doc.find(("hooks",)) is None:
        doc.add_member((), "hooks", {})
        created.append(("hooks",))
    if doc.find(("hooks", "Stop")) is None:
        doc.add_member(("hooks",), "Stop", [])
        created.append(("hooks", "Stop"))
    doc.append_item(("hooks", "Stop"), GROUP)
    assert json.loads(doc.text)["hooks"]["Stop"][-1] == GROUP
    doc.remove(("hooks", "Stop", len(doc.value(("hooks", "Stop"))) - 1))
    for path in reversed(created):
        doc.remove(path)
    assert doc.text == text


def test_inserted_text_follows_the_file_style() -> None:
    """Tab-indented files get tabs, CRLF files get CRLF, compact files stay on one line."""
    tabs = JsonDocument(STYLES["tabs"])
    tabs.append_item(("hooks", "Stop"), GROUP)
    assert '\n\t\t\t{\n\t\t\t\t"hooks": [' in tabs.text
    crlf = JsonDocument(STYLES["crlf"])
    crlf.add_member(("hooks",), "Stop", [GROUP])
    assert "\n" not in crlf.text.replace("\r\n", "")
    compact = JsonDocument(STYLES["compact"])
    compact.append_item(("hooks", "Stop"), GROUP)
    assert "\n" not in compact.text and '"timeout":30' in compact.text


def test_replace_keeps_position_and_neighbours() -> None:
    """Replacing a value changes only that value's text."""
    text = '{\n  "a": [1, 2],\n  "b": {"c": 3},\n  "d": true\n}'
    doc = JsonDocument(text)
    doc.replace(("b",), {"c": 4})
    assert doc.text == '{\n  "a": [1, 2],\n  "b": {\n    "c": 4\n  },\n  "d": true\n}'


def test_duplicate_keys_resolve_to_the_last_like_json_parsers() -> None:
    """With a duplicated member the last one is the one read and edited (what JSON.parse keeps)."""
    doc = JsonDocument('{"k": [1], "k": [2]}')
    assert doc.value(("k",)) == [2]
    doc.append_item(("k",), 3)
    assert doc.text == '{"k": [1], "k": [2, 3]}'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1,}', "line 1 column 9"),
        ('{\n  "a": [1 2]\n}', "line 2 column 11"),
        ("[1] x", "line 1 column 5"),
        ('{"a": "\\q"}', "line 1 column 7"),
        ("", "line 1 column 1"),
    ],
)
def test_invalid_json_names_line_and_column(text: str, where: str) -> None:
    """Broken input is refused with the position of the problem."""
    with pytest.raises(JsonEditError, match=where):
        parse(text)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["obj", "arr", "str", "num", "lit"] if depth < 3 else ["str", "num", "lit"])
    if kind == "obj":
        return {f"k{i}é": _random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}
    if kind == "arr":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind == "str":
        return rng.choice(["", "plain", 'q"uote', "back\\slash", "ünï", "tab\t", "\u2028"])
    if kind == "num":
        return rng.choice([0, -1, 2.5, 1e21, 30.0, 10**20])
    return rng.choice([True, False, None])


def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    found = []
    if isinstance(value, dict):
        found.append((path, "object"))
        for key, child in value.items():
            found += _containers(child, (*path, key))
    elif isinstance(value, list):
        found.append((path, "array"))
        for index, child in enumerate(value):
            found += _containers(child, (*path, index))
    return found


def test_random_documents_round_trip_in_every_style() -> None:
    """300 random documents in 4 styles: parsed values match json, add+remove restores the text."""
    rng = random.Random(8)
    for _ in range(300):
        value = {"root": _random_value(rng)}
        indent = rng.choice([None, 2, 4, "\t"])
        text = json.dumps(value, indent=indent, ensure_ascii=rng.random() < 0.5)
        doc = JsonDocument(text)
        assert doc.root.value == json.loads(text)
        path, kind = rng.choice(_containers(value))
        if kind == "array":
            doc.append_item(path, GROUP)
            assert json.loads(doc.text) == doc.root.value
            doc.remove((*path, len(doc.value(path)) - 1))
        else:
            doc.add_member(path, "donebell", GROUP)
            assert json.loads(doc.text) == doc.root.value
            doc.remove((*path, "donebell"))
        assert doc.text == text
