"""What the docs checks read in Markdown: headings and the anchors GitHub gives them, relative
links, fenced blocks and tables. Only the Markdown the repository writes is covered: ATX headings
(`## Title`), inline links (`[text](target)`), fences of three backticks."""

from __future__ import annotations

import re

FENCE = re.compile(r"^(```|~~~)\s*([\w-]*)")
HEADING = re.compile(r"#{1,6}\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def prose_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, line) of the text outside fenced code blocks."""
    lines, in_fence = [], False
    for number, line in enumerate(markdown.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            lines.append((number, line))
    return lines


def fenced_blocks(markdown: str, info: str) -> list[tuple[int, list[str]]]:
    """(line number of the first line, lines) of each ```info block."""
    blocks, current, start, in_fence = [], None, 0, False
    for number, line in enumerate(markdown.splitlines(), 1):
        fence = FENCE.match(line)
        if fence and not in_fence:
            in_fence = True
            if fence.group(2) == info:
                current, start = [], number + 1
        elif fence:
            in_fence = False
            if current is not None:
                blocks.append((start, current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def heading_slug(title: str) -> str:
    text = re.sub(r"`|\*\*|\*", "", title).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub generates for the headings of a Markdown text (a repeated heading gets
    -1, -2, ...)."""
    anchors, seen = set(), {}
    for _, line in prose_lines(markdown):
        match = HEADING.match(line)
        if not match:
            continue
        slug = heading_slug(match.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def headings(markdown: str) -> list[str]:
    return [m.group(1) for _, line in prose_lines(markdown) if (m := HEADING.match(line))]


def links(markdown: str) -> list[tuple[int, str]]:
    """(line number, target) of every inline link and image outside code; a link's text may run
    over lines, as wrapped paragraphs make it."""
    kept = dict(prose_lines(markdown))
    lines = markdown.splitlines()
    prose = "\n".join(CODE_SPAN.sub("``", line) if n in kept else ""
                      for n, line in enumerate(lines, 1))
    return [(prose.count("\n", 0, m.start()) + 1, m.group(1)) for m in LINK.finditer(prose)]


def is_external(target: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None
