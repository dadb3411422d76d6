#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Checks 11_scenarios' --json and --html reports in a headless browser.

usage: check_report.py --example EXE --scenarios DIR --out DIR [--chromium PATH]

Runs `EXE --dir DIR --quiet --json OUT/report.json --html OUT/report.html`,
requires the JSON to parse (python3 -m json.tool), then loads the page in
headless Chromium with its script running (--dump-dom) and compares the
rendered DOM with the JSON: per scenario and model, one `rect.op` per
operation, one `path.wait.issued` per edge the JSON calls issued and one
`path.wait.elided` per edge it calls elided; one summary row per scenario;
the embedded data equal to the JSON document; no reference to anything
outside the file. Then it takes a screenshot (OUT/report.png, 1400x2000).

Exit status: 0 pass, 1 fail, 77 (skipped) only when no Chromium binary is
installed (.ci/deps installs `chromium`) and the JSON checks passed.
"""

import argparse
import collections
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu"]


class Dom(html.parser.HTMLParser):
    """Counts the report's marked elements in a serialized DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.bars = collections.Counter()     # (scenario, model) -> rect.op count
        self.arrows = collections.Counter()   # (scenario, model, kind) -> path.wait count
        self.summary_rows = []
        self.stack = []
        self.data_text = None
        self._in_data = False
        self.external = []
        self.details = None       # the text of aside#details

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        self.stack.append(tag)
        if tag == "rect" and "op" in classes:
            self.bars[(a.get("data-scenario"), a.get("data-model"))] += 1
        if tag == "path" and "wait" in classes:
            kind = "issued" if "issued" in classes else "elided" if "elided" in classes else "?"
            self.arrows[(a.get("data-scenario"), a.get("data-model"), kind)] += 1
        if tag == "tr" and "table#summary" in self._context() and "tbody" in self.stack:
            self.summary_rows.append(a.get("data-scenario"))
        if tag == "table" and a.get("id") == "summary":
            self.stack[-1] = "table#summary"
        if tag == "aside" and a.get("id") == "details":
            self.details = ""
            self.stack[-1] = "aside#details"
        if tag == "script" and a.get("id") == "report-data":
            self._in_data = True
            self.data_text = ""
        for name in ("src", "href"):
            v = a.get(name)
            if v and not v.startswith("#") and not v.startswith("data:"):
                self.external.append(f"<{tag} {name}={v}>")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_data = False
        # Pop to the matching element (the serializer closes every element).
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k] == tag or self.stack[k].startswith(tag + "#"):
                del self.stack[k:]
                break

    def handle_data(self, data):
        if self._in_data:
            self.data_text += data
        if "aside#details" in self.stack:
            self.details += data + " "

    def _context(self):
        return " ".join(self.stack)


def find_browser(explicit):
    if explicit:
        return explicit if os.path.exists(explicit) else None
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def run_browser(browser, args, profile):
    cmd = [browser] + FLAGS + [f"--user-data-dir={profile}"] + args
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=240)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", required=True)
    parser.add_argument("--scenarios", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--chromium", default=None)
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    json_path = os.path.join(args.out, "report.json")
    html_path = os.path.abspath(os.path.join(args.out, "report.html"))
    png_path = os.path.join(args.out, "report.png")
    for p in (json_path, html_path, png_path):
        if os.path.exists(p):
            os.remove(p)

    problems = []
    done = subprocess.run([args.example, "--dir", args.scenarios, "--quiet", "--json", json_path,
                           "--html", html_path], capture_output=True, text=True, errors="replace",
                          timeout=240)
    if done.returncode != 0:
        print(done.stdout + done.stderr)
        print(f"FAIL: 11_scenarios exited with {done.returncode}")
        return 1

    tool = subprocess.run([sys.executable, "-m", "json.tool", json_path], capture_output=True, text=True)
    if tool.returncode != 0:
        print("FAIL: python3 -m json.tool rejects the JSON report: " + tool.stderr)
        return 1
    with open(json_path, encoding="utf-8") as f:
        report = json.load(f)

    # The JSON on its own: every scenario has the three models and every
    # operation its fields; the edge counts add up.
    want_bars, want_arrows = {}, {}
    op_fields = {"name", "lanes", "after", "submit", "start", "end", "epoch", "device_waits",
                 "waits_elided", "elided", "edges"}
    for s in report["scenarios"]:
        models = [m["model"] for m in s["models"]]
        if models != ["binary_events", "timelines", "frontiers"]:
            problems.append(f"{s['name']}: models {models}")
        for m in s["models"]:
            key = (s["name"], m["model"])
            if len(m["ops"]) != s["operations"]:
                problems.append(f"{key}: {len(m['ops'])} ops, the scenario has {s['operations']}")
            want_bars[key] = len(m["ops"])
            counts = collections.Counter()
            for op in m["ops"]:
                missing = op_fields - op.keys()
                if m["model"] == "frontiers":
                    missing |= {"carries", "knows", "tainted"} - op.keys()
                if missing:
                    problems.append(f"{key} op {op.get('name')}: lacks {sorted(missing)}")
                    continue
                if [e["after"] for e in op["edges"]] != op["after"]:
                    problems.append(f"{key} op {op['name']}: edges do not follow 'after'")
                if sum(op["elided"].values()) != op["waits_elided"]:
                    problems.append(f"{key} op {op['name']}: elided reasons do not add up")
                for e in op["edges"]:
                    counts[e["wait"]] += 1
            if dict(counts) != {k: v for k, v in m["edges"].items() if v}:
                problems.append(f"{key}: edges {dict(counts)} but the totals say {m['edges']}")
            for kind in ("issued", "elided"):
                want_arrows[key + (kind,)] = counts[kind]

    with open(html_path, encoding="utf-8") as f:
        page = f.read()
    if re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) or "@import" in page:
        problems.append("the page refers to something outside itself")

    # The JSON is checked without a browser; only the page needs one.
    browser = find_browser(args.chromium)
    if browser is None:
        for p in problems:
            print("FAIL: " + p)
        if problems:
            return 1
        print("SKIP: the JSON report passed; no chromium binary to check the page (install 'chromium')")
        return 77

    with tempfile.TemporaryDirectory() as profile:
        dumped = run_browser(browser, ["--dump-dom", "file://" + html_path], profile)
    if dumped.returncode != 0 or "<body" not in dumped.stdout:
        print(dumped.stderr[-4000:])
        print(f"FAIL: chromium --dump-dom exited with {dumped.returncode}")
        return 1
    dom = Dom()
    dom.feed(dumped.stdout)

    for key, n in want_bars.items():
        if dom.bars[key] != n:
            problems.append(f"{key}: {dom.bars[key]} rect.op bars, the JSON has {n} operations")
    for key, n in want_arrows.items():
        if dom.arrows[key] != n:
            problems.append(f"{key}: {dom.arrows[key]} arrows, the JSON has {n} edges")
    extra = set(dom.bars) - set(want_bars)
    extra |= {k[:2] for k in dom.arrows} - set(want_bars)
    if extra:
        problems.append(f"bars or arrows of unknown scenarios/models: {sorted(map(str, extra))}")
    names = [s["name"] for s in report["scenarios"]]
    if dom.summary_rows != names:
        problems.append(f"summary rows {dom.summary_rows}, expected one per scenario {names}")
    if dom.external:
        problems.append(f"external references in the DOM: {dom.external[:5]}")
    if dom.data_text is None:
        problems.append("no embedded report data")
    elif json.loads(dom.data_text) != report:
        problems.append("the page's embedded data differ from the JSON report")

    # Pointing at a frontiers bar shows the frontier it carries: the page
    # again, with a script that moves the mouse onto the operation whose
    # frontier has the most entries.
    pick = None
    for s in report["scenarios"]:
        for m in s["models"]:
            if m["model"] != "frontiers":
                continue
            for i, op in enumerate(m["ops"]):
                if pick is None or len(op["carries"]) > len(pick[2]["carries"]):
                    pick = (s["name"], i, op)
    if pick is not None:
        name, index, op = pick
        hover = ('<script>document.querySelector(\'rect.op[data-scenario="%s"][data-model="frontiers"]'
                 '[data-op="%d"]\').dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));</script>'
                 % (name, index))
        hover_path = os.path.join(os.path.dirname(html_path), "report_hover.html")
        with open(hover_path, "w", encoding="utf-8") as f:
            f.write(page.replace("</body>", hover + "</body>"))
        with tempfile.TemporaryDirectory() as profile:
            hovered = run_browser(browser, ["--dump-dom", "file://" + hover_path], profile)
        panel = Dom()
        panel.feed(hovered.stdout)
        text = " ".join((panel.details or "").split())
        wanted = [op["name"], "carries"] + [e["lane"] for e in op["carries"]]
        missing = [w for w in wanted if w not in text]
        if missing:
            problems.append(f"pointing at {name}/{op['name']} (frontiers): the details lack {missing}: {text[:300]!r}")

    with tempfile.TemporaryDirectory() as profile:
        shot = run_browser(browser, [f"--screenshot={os.path.abspath(png_path)}", "--window-size=1400,2000",
                                     "file://" + html_path], profile)
    if shot.returncode != 0 or not os.path.exists(png_path) or os.path.getsize(png_path) == 0:
        print(shot.stderr[-4000:])
        problems.append(f"no screenshot (chromium exited with {shot.returncode})")

    bars = sum(want_bars.values())
    arrows = sum(want_arrows.values())
    print(f"{len(names)} scenarios, {bars} bars and {arrows} arrows checked; screenshot {png_path}")
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
