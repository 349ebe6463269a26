"""Turn an agent's Markdown answer into one compact line of plain text, and cut text safely.

The phone shows a notification, not a document: fences, headings, list bullets, table rules,
link targets, emphasis and inline-code marks are presentation, so they go; the words stay (link
labels, image alt text, table-cell text, code). Then all whitespace folds into single spaces.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s+|$)")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_QUOTE = re.compile(r"^\s{0,3}(>\s?)+")
_BULLET = re.compile(r"^\s*([-*+]|\d{1,9}[.)])\s+(\[[ xX]\]\s+)?")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+\S+.*$")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS_STAR = re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])")
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HTML_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
#: Bidirectional formatting characters (ALM, LRM, RLM, the embeddings and overrides LRE..RLO, the
#: isolates LRI..PDI): invisible, and they reorder what follows, so a folder named
#: "report\u202etxt.exe" would read "reportexe.txt" on the phone.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def reduce_markdown(text: str) -> str:
    """One line of plain text from Markdown (code-block contents and link labels kept)."""
    out: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            out.append(line)  # code stays verbatim, only its fence lines go
            continue
        if _RULE.match(line) or _TABLE_SEPARATOR.match(line) and "-" in line or _REF_DEF.match(line):
            continue
        if _SETEXT.match(line) and out:
            continue  # the underline of a "Title\n=====" heading
        line = _QUOTE.sub("", line)
        line = _HEADING.sub("", line)
        line = _BULLET.sub("", line)
        if line.lstrip().startswith("|") or line.count("|") >= 2:
            line = " ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
        out.append(_inline(line))
    return fold_whitespace(" ".join(out))


def _inline(line: str) -> str:
    spans: list[str] = []

    def _keep(match: re.Match[str]) -> str:
        # Code spans are protected from the emphasis rules (snake_case, a*b), then restored.
        spans.append(match.group(2).strip())
        return f"\x00{len(spans) - 1}\x00"

    line = _CODE_SPAN.sub(_keep, line)
    line = _HTML_BREAK.sub(" ", line)
    line = _IMAGE.sub(r"\1", line)
    line = _LINK.sub(r"\1", line)
    line = _REF_LINK.sub(r"\1", line)
    line = _AUTOLINK.sub(r"\1", line)
    for _ in range(3):  # nested emphasis: ***both***, **bold _and italic_**
        line = _STRONG.sub(r"\2", line)
        line = _EMPHASIS_STAR.sub(r"\1", line)
        line = _EMPHASIS_UNDERSCORE.sub(r"\1", line)
        line = _STRIKE.sub(r"\1", line)
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], line)


def fold_whitespace(text: str) -> str:
    """Control characters dropped, every run of whitespace one space, ends trimmed."""
    return " ".join(strip_controls(text, keep_newlines=False).split())


def strip_controls(text: str, *, keep_newlines: bool) -> str:
    """Remove C0/C1 controls, bidi controls and lone surrogates (tabs/newlines kept only if asked)."""
    kept = []
    for ch in text:
        code = ord(ch)
        if ch in "\n\t" and keep_newlines:
            kept.append(ch)
        elif ch in "\n\t\r\v\f":
            kept.append(" ")
        elif code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code < 0xE000 or ch in BIDI_CONTROLS:
            continue
        else:
            kept.append(ch)
    return "".join(kept)


def cut_chars(text: str, limit: int) -> str:
    """At most ``limit`` code points, ending in "…" when something was cut."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def cut_utf8(text: str, max_bytes: int) -> str:
    """At most ``max_bytes`` UTF-8 bytes, cut on a code-point boundary, "…" marking a cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return text
    ellipsis = "…".encode()
    budget = max(0, max_bytes - len(ellipsis))
    # The bytes are valid UTF-8 up to the cut, so "ignore" only drops a split trailing code point.
    kept = data[:budget].decode("utf-8", "ignore").rstrip()
    return kept + "…" if max_bytes >= len(ellipsis) else kept
