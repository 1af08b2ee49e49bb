#!/usr/bin/env python3
"""kvlayout report in a real browser: writes report.html from the committed certificate, renders it in
headless Chromium (--dump-dom runs its script), and checks the DOM: one square per certificate row, the
squares of each grade as many as the certificate counts, the legend's counts equal, every square's href
reaching a details section of the same grade and pair; then a detail opened through its #fragment.
Writes report.png (the page) and detail.png (a square's details) into OUTDIR as artifacts.

Usage: browser_test.py KVLAYOUT_BINARY CERTIFICATE OUTDIR
Exit 77 (ctest: skipped) only when no Chromium is installed (scripts/setup.sh installs it).
"""
import collections
import html.parser
import json
import os
import shutil
import subprocess
import sys


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


class Dom(html.parser.HTMLParser):
    """The elements the checks read: squares, details sections and legend entries, by their attributes."""

    def __init__(self):
        super().__init__()
        self.squares, self.sections, self.legend = [], {}, {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "a" and "sq" in classes:
            self.squares.append(a)
        elif tag == "section" and "detail" in classes:
            self.sections[a.get("id")] = a
        elif tag == "span" and "data-count" in a:
            self.legend[a["data-grade"]] = int(a["data-count"])


def render(browser, args):
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + args["profile"]]
    return subprocess.run(base + args["flags"], capture_output=True, text=True, timeout=120)


def main():
    binary, certificate, out = sys.argv[1], sys.argv[2], sys.argv[3]
    browser = chromium()
    if browser is None:
        print("SKIP: no Chromium installed (Debian package chromium; scripts/setup.sh installs it)")
        return 77
    os.makedirs(out, exist_ok=True)
    report = os.path.join(out, "report.html")
    subprocess.run([binary, "report", "--certificate", certificate, "-o", report], check=True)
    profile = os.path.join(out, "profile")
    url = "file://" + os.path.abspath(report)
    dom_run = render(browser, {"profile": profile, "flags": ["--dump-dom", url]})
    if dom_run.returncode != 0 or "<html" not in dom_run.stdout:
        print("FAIL: chromium did not render the report:", dom_run.stderr[-2000:])
        return 1
    dom = Dom()
    dom.feed(dom_run.stdout)
    cert = json.load(open(certificate))
    rows, grades = cert["rows"], cert["counts"]["grades"]
    failures = []
    if len(dom.squares) != len(rows):
        failures.append("%d squares for %d rows" % (len(dom.squares), len(rows)))
    seen = collections.Counter(s.get("data-grade") for s in dom.squares)
    for grade, n in grades.items():
        if seen.get(grade, 0) != n:
            failures.append("%s: %d squares, the certificate counts %d" % (grade, seen.get(grade, 0), n))
        if dom.legend.get(grade) != n:
            failures.append("%s: the legend says %s, the certificate %d" % (grade, dom.legend.get(grade), n))
    pairs = {(r["source"], r["target"]): r["grade"] for r in rows}
    for s in dom.squares:
        target = (s.get("href") or "")[1:]
        section = dom.sections.get(target)
        if section is None:
            failures.append("square %s -> %s: no details section %r" % (s.get("data-source"), s.get("data-target"), target))
        elif section.get("data-grade") != s.get("data-grade") or pairs.get((s["data-source"], s["data-target"])) != s["data-grade"]:
            failures.append("square %s -> %s: grade %s, details %s" % (s["data-source"], s["data-target"], s["data-grade"],
                                                                     section.get("data-grade")))
        if len(failures) > 20:
            break
    # The artifacts: the page, and a square's details opened as a click would open them.
    for name, flags in (("report.png", ["--window-size=1400,1100", "--screenshot=" + os.path.join(out, "report.png"), url]),
                        ("detail.png", ["--window-size=1400,900", "--screenshot=" + os.path.join(out, "detail.png"),
                                        url + "#" + dom.squares[len(dom.squares) // 2]["href"][1:]])):
        shot = render(browser, {"profile": profile, "flags": flags})
        if shot.returncode != 0 or not os.path.getsize(os.path.join(out, name)):
            failures.append("no screenshot %s: %s" % (name, shot.stderr[-500:]))
    # The control that must fail: the same report with one square removed is caught by the same checks.
    text = open(report).read()
    start = text.index('<a class="sq')
    mutated = os.path.join(out, "control.html")
    with open(mutated, "w") as f:
        f.write(text[:start] + text[text.index("</a>", start) + 4:])
    control = Dom()
    control.feed(render(browser, {"profile": profile, "flags": ["--dump-dom", "file://" + os.path.abspath(mutated)]}).stdout)
    if len(control.squares) != len(rows) - 1:
        failures.append("control: a report missing one square rendered %d squares, not %d" % (len(control.squares), len(rows) - 1))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("OK: %d squares, grades %s, every square's details reachable; screenshots in %s" % (len(dom.squares), dict(seen), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
