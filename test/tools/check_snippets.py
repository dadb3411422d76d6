#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Checks that the README's code blocks match the example sources they quote.

usage: check_snippets.py README.md SOURCE_OR_DIR [SOURCE_OR_DIR...]

In a source file (directories are searched for *.cpp, *.hpp, *.cu, *.cuh), a
snippet is the lines between

    // [snippet:NAME]
    ...
    // [/snippet]

with their common indentation removed. In README.md, a snippet is a line

    <!-- snippet:NAME -->

followed (blank lines allowed in between) by a ```cpp fenced block. The check
fails if the README has no snippet, names an unknown snippet, or shows a
block that differs from its source; it also fails on malformed markers and on
a NAME defined twice. Sources may hold snippets the README does not show.
Trailing whitespace and leading/trailing blank lines are not significant.
"""

import difflib
import re
import sys
import textwrap
from pathlib import Path

SOURCE_OPEN = re.compile(r"^\s*//\s*\[snippet:([A-Za-z0-9_.-]+)\]\s*$")
SOURCE_CLOSE = re.compile(r"^\s*//\s*\[/snippet\]\s*$")
README_MARKER = re.compile(r"^\s*<!--\s*snippet:([A-Za-z0-9_.-]+)\s*-->\s*$")
FENCE_OPEN = re.compile(r"^```(cpp|c\+\+)\s*$")
FENCE_CLOSE = re.compile(r"^```\s*$")
SOURCE_SUFFIXES = {".cpp", ".hpp", ".cu", ".cuh"}


class SnippetError(Exception):
    pass


def normalise(lines: list[str]) -> list[str]:
    text = textwrap.dedent("\n".join(line.rstrip() for line in lines))
    out = text.split("\n")
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def source_files(paths: list[Path]) -> list[Path]:
    files = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in SOURCE_SUFFIXES)
        elif path.is_file():
            files.append(path)
        else:
            raise SnippetError(f"{path}: no such file or directory")
    return files


def snippets_in_sources(files: list[Path]) -> dict[str, tuple[str, list[str]]]:
    """Returns NAME -> (where, normalised lines)."""
    found: dict[str, tuple[str, list[str]]] = {}
    for path in files:
        lines = path.read_text(encoding="utf-8").split("\n")
        name, start, body = None, 0, []
        for number, line in enumerate(lines, 1):
            opened = SOURCE_OPEN.match(line)
            if opened:
                if name is not None:
                    raise SnippetError(f"{path}:{number}: snippet '{opened[1]}' opens "
                                       f"inside snippet '{name}' (line {start})")
                name, start, body = opened[1], number, []
            elif SOURCE_CLOSE.match(line):
                if name is None:
                    raise SnippetError(f"{path}:{number}: [/snippet] without a [snippet:NAME]")
                where = f"{path}:{start}"
                if name in found:
                    raise SnippetError(f"{where}: snippet '{name}' is also defined at "
                                       f"{found[name][0]}")
                found[name] = (where, normalise(body))
                name = None
            elif name is not None:
                body.append(line)
        if name is not None:
            raise SnippetError(f"{path}:{start}: snippet '{name}' is never closed")
    return found


def snippets_in_readme(readme: Path) -> list[tuple[str, int, list[str]]]:
    """Returns (NAME, line of the marker, normalised block lines)."""
    lines = readme.read_text(encoding="utf-8").split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        marker = README_MARKER.match(lines[i])
        if not marker:
            i += 1
            continue
        name, marker_line = marker[1], i + 1
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines) or not FENCE_OPEN.match(lines[i]):
            raise SnippetError(f"{readme}:{marker_line}: snippet '{name}' must be followed "
                               "by a ```cpp block")
        i += 1
        body = []
        while i < len(lines) and not FENCE_CLOSE.match(lines[i]):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise SnippetError(f"{readme}:{marker_line}: the block of snippet '{name}' "
                               "is never closed")
        blocks.append((name, marker_line, normalise(body)))
        i += 1
    return blocks


def check(readme: Path, paths: list[Path]) -> list[str]:
    if not readme.is_file():
        return [f"{readme}: no such file"]
    sources = snippets_in_sources(source_files(paths))
    blocks = snippets_in_readme(readme)
    if not blocks:
        return [f"{readme}: no '<!-- snippet:NAME -->' blocks; the README must quote "
                "at least one example"]
    problems = []
    for name, line, body in blocks:
        if name not in sources:
            known = ", ".join(sorted(sources)) or "none"
            problems.append(f"{readme}:{line}: unknown snippet '{name}' (known: {known})")
            continue
        where, expected = sources[name]
        if body != expected:
            diff = difflib.unified_diff(expected, body, fromfile=where,
                                        tofile=f"{readme}:{line}", lineterm="")
            problems.append(f"{readme}:{line}: snippet '{name}' differs from {where}:\n"
                            + "\n".join(diff))
    if not problems:
        print(f"{readme}: {len(blocks)} snippet(s) match their sources")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        problems = check(Path(argv[0]), [Path(p) for p in argv[1:]])
    except SnippetError as error:
        problems = [str(error)]
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
