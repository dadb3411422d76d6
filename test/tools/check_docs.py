#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Checks that the project's documentation stands alone.

usage: check_docs.py SOURCE_ROOT OUT_DIR [--dot DOT]

1. Every file under SOURCE_ROOT (sources, headers, build files, READMEs,
   scenario and stream files; build folders, .git and subprojects are
   skipped) is free of references to documents that are not in the
   repository: paths into a folder beside the checkout (`..` then
   `shared`), `DESIGN.md`, `seeds/`, `STYLE.md`,
   `BENCHMARKING.md`, and of "seed" used as the name of such a document
   ("the seed's ...", "seed scenario", a `[seed]` test tag ...). A random
   number seed is ordinary English and allowed.
2. Every `docs/<page>.md` a file names exists.
3. Every relative link of a Markdown file (`[text](target)`, without a URL
   scheme) resolves to a file or folder, anchors ignored.
4. With --dot: every Graphviz source under docs/diagrams renders to SVG in
   OUT_DIR without a warning.

Prints each problem as `path:line: what`, and exits 1 when there is one.
"""

import argparse
import os
import re
import subprocess
import sys

SKIP_DIRS = {".git", "subprojects", "__pycache__", "node_modules"}
TEXT_SUFFIXES = {
    ".hpp", ".cpp", ".cu", ".h", ".py", ".md", ".txt", ".json", ".build", ".dot",
    ".sh", ".in", ".cmake", ".comp", ".wrap", ".pml", ".yml", ".yaml",
}
TEXT_NAMES = {"run", "test", "demo", "deps", "fuzz", "gpu", "meson_options.txt"}

# The folder beside a checkout that held the design notes, spelled in two
# parts so this file does not cite it itself.
OUTSIDE_FOLDER = re.escape("../") + "shared/"

FORBIDDEN = [
    (re.compile(OUTSIDE_FOLDER), "cites a folder beside the checkout, which users never have"),
    (re.compile(r"\bDESIGN(\.md)?\s*(§|section)"), "cites DESIGN.md; point at docs/ instead"),
    (re.compile(r"\bDESIGN\.md\b"), "cites DESIGN.md; point at docs/ instead"),
    (re.compile(r"\bseeds/"), "cites seeds/, which is not part of the repository"),
    (re.compile(r"\bSTYLE\.md\b"), "cites STYLE.md, which is not part of the repository"),
    (re.compile(r"\bBENCHMARKING\.md\b"), "cites BENCHMARKING.md; bench/README.md holds the method"),
    (re.compile(r"(?i)\bthe seed\s+(says|said|warns|defines|lists|keeps|repeats|is silent|examples?|documents?|"
                r"scenarios?|comparison|corrects|claims?)\b"),
     "calls a design document 'the seed'; name the scenario or rule itself"),
    (re.compile(r"(?i)\bseed's\b"), "calls a design document 'the seed'; name the scenario or rule itself"),
    (re.compile(r"(?i)\bseed (document|scenario|example|examples|comparison|dag|memory|barrier|verdict|claim)s?\b"),
     "calls a design document 'the seed'; name the scenario or rule itself"),
    (re.compile(r"\[seed\]"), "a test tag names a design document 'seed'"),
    (re.compile(r"(?i)\bseed_(barrier|memory|dag|a|b)\b"), "a name calls a design document 'seed'"),
]

DOC_REF = re.compile(r"\bdocs/([A-Za-z0-9_\-]+\.md)")
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def source_files(root: str):
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        top = rel.split(os.sep)[0]
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not (rel == "." and d.startswith("build")))
        if top.startswith("build") and rel != ".":
            continue
        for name in sorted(files):
            _, suffix = os.path.splitext(name)
            if suffix in TEXT_SUFFIXES or name in TEXT_NAMES:
                yield os.path.join(folder, name)


def check_text(root: str, path: str, problems: list) -> None:
    rel = os.path.relpath(path, root)
    if os.path.abspath(path) == os.path.abspath(__file__):
        return  # this file spells out the patterns it looks for
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (UnicodeDecodeError, OSError) as e:
        problems.append(f"{rel}: unreadable as UTF-8 text ({e})")
        return
    for number, line in enumerate(lines, 1):
        for pattern, what in FORBIDDEN:
            if pattern.search(line):
                problems.append(f"{rel}:{number}: {what}: {line.strip()[:120]}")
                break
        for page in DOC_REF.findall(line):
            if not os.path.isfile(os.path.join(root, "docs", page)):
                problems.append(f"{rel}:{number}: names docs/{page}, which does not exist")
        if rel.endswith(".md"):
            for target in MD_LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.\-]*:", target) or target.startswith("#"):
                    continue
                file_part = target.split("#", 1)[0]
                if not file_part:
                    continue
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    problems.append(f"{rel}:{number}: link to {target}, which does not exist")


def render_diagrams(root: str, out_dir: str, dot: str, problems: list) -> int:
    diagrams = os.path.join(root, "docs", "diagrams")
    sources = sorted(f for f in os.listdir(diagrams) if f.endswith(".dot")) if os.path.isdir(diagrams) else []
    if not sources:
        problems.append("docs/diagrams: no Graphviz sources found")
        return 0
    os.makedirs(out_dir, exist_ok=True)
    for name in sources:
        svg = os.path.join(out_dir, name[:-4] + ".svg")
        done = subprocess.run([dot, "-Tsvg", os.path.join(diagrams, name), "-o", svg],
                              capture_output=True, text=True, timeout=60)
        complaint = done.stderr.strip()
        if done.returncode != 0 or complaint:
            problems.append(f"docs/diagrams/{name}: dot exited with {done.returncode}: {complaint}")
            continue
        with open(svg, encoding="utf-8") as f:
            if "</svg>" not in f.read():
                problems.append(f"docs/diagrams/{name}: dot wrote no complete SVG")
    return len(sources)


def main() -> int:
    parser = argparse.ArgumentParser(description="Checks that the documentation stands alone.")
    parser.add_argument("source_root")
    parser.add_argument("out_dir")
    parser.add_argument("--dot", help="Graphviz dot; renders docs/diagrams/*.dot into OUT_DIR")
    args = parser.parse_args()

    problems: list = []
    count = 0
    for path in source_files(args.source_root):
        check_text(args.source_root, path, problems)
        count += 1
    rendered = render_diagrams(args.source_root, args.out_dir, args.dot, problems) if args.dot else 0
    for p in problems:
        print(p)
    print(f"check_docs: {count} files, {rendered} diagrams rendered, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
