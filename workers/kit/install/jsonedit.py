"""Edit a JSON document in place, keeping every byte we do not change.

``json.load`` + ``json.dump`` would reformat the user's ``hooks.json`` / ``settings.json``: other
tools' entries would move, numbers like ``30.0`` would change, a tab-indented file would become
space-indented. Instead this module parses the text into spans (where each value, member and item
starts and ends) and splices: an insertion adds text only after the last sibling, a removal deletes
exactly the text such an insertion added, so install followed by uninstall gives back the original
bytes. New text follows the file's own style (newline, indent unit, separators).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

Path = tuple[str | int, ...]

_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_MAX_DEPTH = 512


class JsonEditError(ValueError):
    """The text is not one valid JSON value; the message names the line and column."""


@dataclass
class Node:
    """One JSON value in the text: ``text[start:end]``; members/items for containers."""

    start: int
    end: int
    kind: str  # "object" | "array" | "scalar"
    value: Any = None
    keys: list[str] = field(default_factory=list)
    key_starts: list[int] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)

    def child_start(self, index: int) -> int:
        """Where child ``index`` begins: its key for an object member, its value for an item."""
        return self.key_starts[index] if self.kind == "object" else self.children[index].start

    def member(self, key: str) -> tuple[int, Node] | None:
        """The LAST member named ``key`` (what JSON.parse and json.loads keep), with its index."""
        for index in range(len(self.keys) - 1, -1, -1):
            if self.keys[index] == key:
                return index, self.children[index]
        return None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, pos: int, message: str) -> JsonEditError:
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return JsonEditError(f"line {line} column {column}: {message}")

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _WS:
            pos += 1
        return pos

    def value(self, pos: int, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise self.fail(pos, "nested too deeply")
        pos = self.skip(pos)
        char = self.text[pos : pos + 1]
        if char == "{":
            return self.container(pos, depth, "object", "}")
        if char == "[":
            return self.container(pos, depth, "array", "]")
        if char == '"':
            try:
                string, end = scanstring(self.text, pos + 1, True)
            except ValueError as exc:
                raise self.fail(pos, f"bad string ({exc.args[0].split(':')[0]})") from None
            return Node(pos, end, "scalar", string)
        for literal, val in _LITERALS.items():
            if self.text.startswith(literal, pos):
                return Node(pos, pos + len(literal), "scalar", val)
        match = _NUMBER.match(self.text, pos)
        if match and match.end() > pos:
            return Node(pos, match.end(), "scalar", json.loads(match.group()))
        raise self.fail(pos, "expected a JSON value")

    def container(self, start: int, depth: int, kind: str, close: str) -> Node:
        node = Node(start, start, kind, {} if kind == "object" else [])
        pos = self.skip(start + 1)
        if self.text[pos : pos + 1] == close:
            node.end = pos + 1
            return node
        while True:
            if kind == "object":
                if self.text[pos : pos + 1] != '"':
                    raise self.fail(pos, "expected a member name in double quotes")
                key_node = self.value(pos, depth + 1)
                pos = self.skip(key_node.end)
                if self.text[pos : pos + 1] != ":":
                    raise self.fail(pos, "expected ':'")
                child = self.value(pos + 1, depth + 1)
                node.keys.append(key_node.value)
                node.key_starts.append(key_node.start)
                node.value[key_node.value] = child.value
            else:
                child = self.value(pos, depth + 1)
                node.value.append(child.value)
            node.children.append(child)
            pos = self.skip(child.end)
            char = self.text[pos : pos + 1]
            if char == close:
                node.end = pos + 1
                return node
            if char != ",":
                raise self.fail(pos, f"expected ',' or '{close}'")
            pos = self.skip(pos + 1)


def parse(text: str) -> Node:
    """Span tree of ``text``; raises :class:`JsonEditError` unless it is exactly one JSON value."""
    parser = _Parser(text)
    root = parser.value(0, 0)
    if parser.skip(root.end) != len(text):
        raise parser.fail(parser.skip(root.end), "extra data after the JSON value")
    return root


@dataclass(frozen=True)
class Style:
    """How the file writes JSON, so inserted text looks like the rest."""

    newline: str
    unit: str | None  # indent unit; None = a one-line (compact) document
    key_sep: str
    item_sep: str

    @classmethod
    def detect(cls, text: str, root: Node) -> Style:
        newline = "\r\n" if "\r\n" in text else "\n"
        body = text[root.start : root.end]
        unit: str | None = None
        if "\n" in body:
            indents = [m.group(1) for m in re.finditer(r"\n([ \t]+)\S", body)]
            unit = min(indents, key=len) if indents else ""
        match = re.search(r'"\s*(:\s*)\S', body)
        key_sep = match.group(1) if match else ": "
        # One-line documents: copy the separator after commas; without commas, match the colons.
        if ", " in body:
            item_sep = ", "
        elif "," in body:
            item_sep = ","
        else:
            item_sep = ", " if key_sep.endswith(" ") else ","
        return cls(newline, unit, key_sep, item_sep)


class JsonDocument:
    """A JSON text plus span-preserving edits; ``text`` is always the current bytes to write."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._reparse()

    def _reparse(self) -> None:
        self.root = parse(self.text)
        self.style = Style.detect(self.text, self.root)

    # reading ---------------------------------------------------------------------------

    def find(self, path: Path) -> Node | None:
        node: Node | None = self.root
        for step in path:
            if node is None:
                return None
            if isinstance(step, str):
                found = node.member(step) if node.kind == "object" else None
                node = found[1] if found else None
            else:
                node = node.children[step] if node.kind == "array" and 0 <= step < len(node.children) else None
        return node

    def value(self, path: Path) -> Any:
        node = self.find(path)
        return None if node is None else node.value

    # rendering -------------------------------------------------------------------------

    def _line_indent(self, pos: int) -> str:
        line_start = self.text.rfind("\n", 0, pos) + 1
        match = re.match(r"[ \t]*", self.text[line_start:pos])
        return match.group() if match else ""

    def render(self, value: Any, indent: str) -> str:
        """``value`` as JSON in the file's style, nested lines indented below ``indent``."""
        style = self.style
        if style.unit is None:
            return json.dumps(value, ensure_ascii=False, separators=(style.item_sep, style.key_sep))
        text = json.dumps(value, ensure_ascii=False, indent=style.unit, separators=(",", style.key_sep))
        return text.replace("\n", style.newline + indent)

    def _entry(self, container: Node, key: str | None, value: Any, indent: str) -> str:
        rendered = self.render(value, indent)
        if container.kind == "object":
            return json.dumps(key, ensure_ascii=False) + self.style.key_sep + rendered
        return rendered

    # editing ---------------------------------------------------------------------------

    def _splice(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]
        self._reparse()

    def _append(self, container: Node, key: str | None, value: Any) -> None:
        style = self.style
        if container.children:
            first = container.child_start(0)
            between = self.text[container.start + 1 : first]
            last_end = container.children[-1].end
            if "\n" in between:  # one child per line: copy the first child's indentation
                indent = between[between.rfind("\n") + 1 :]
                new = "," + style.newline + indent + self._entry(container, key, value, indent)
            else:
                sep = style.item_sep
                if len(container.children) > 1:
                    sep = self.text[container.children[0].end : container.child_start(1)]
                new = sep + self.render_inline(container, key, value)
            self._splice(last_end, last_end, new)
            return
        if style.unit is None:
            inner = self._entry(container, key, value, "")
        else:
            outer = self._line_indent(container.start)
            indent = outer + style.unit
            inner = style.newline + indent + self._entry(container, key, value, indent) + style.newline + outer
        self._splice(container.start + 1, container.end - 1, inner)

    def render_inline(self, container: Node, key: str | None, value: Any) -> str:
        """An entry for a container written on one line: compact, with the file's separators."""
        text = json.dumps(value, ensure_ascii=False, separators=(self.style.item_sep, self.style.key_sep))
        if container.kind == "object":
            return json.dumps(key, ensure_ascii=False) + self.style.key_sep + text
        return text

    def append_item(self, array_path: Path, value: Any) -> None:
        """Add ``value`` after the last item of the array at ``array_path``."""
        node = self.find(array_path)
        if node is None or node.kind != "array":
            raise JsonEditError(f"{_show(array_path)} is not an array")
        self._append(node, None, value)

    def add_member(self, object_path: Path, key: str, value: Any) -> None:
        """Add ``"key": value`` after the last member of the object at ``object_path``."""
        node = self.find(object_path)
        if node is None or node.kind != "object":
            raise JsonEditError(f"{_show(object_path)} is not an object")
        self._append(node, key, value)

    def replace(self, path: Path, value: Any) -> None:
        """Replace the value at ``path`` (its key, position and surroundings stay)."""
        node = self.find(path)
        if node is None:
            raise JsonEditError(f"{_show(path)} does not exist")
        self._splice(node.start, node.end, self.render(value, self._line_indent(node.start)))

    def remove(self, path: Path) -> None:
        """Remove the member or item at ``path`` with exactly the text :meth:`_append` would add."""
        parent = self.find(path[:-1])
        step = path[-1]
        if parent is None:
            raise JsonEditError(f"{_show(path)} does not exist")
        if isinstance(step, str):
            found = parent.member(step) if parent.kind == "object" else None
            if found is None:
                raise JsonEditError(f"{_show(path)} does not exist")
            index = found[0]
        else:
            index = step
        count = len(parent.children)
        if count == 1:
            self._splice(parent.start + 1, parent.end - 1, "")
        elif index > 0:
            self._splice(parent.children[index - 1].end, parent.children[index].end, "")
        else:
            self._splice(parent.child_start(0), parent.child_start(1), "")


def _show(path: Path) -> str:
    return "/" + "/".join(str(p) for p in path)
