#!/usr/bin/env python3
"""Tidy gotestsum's JUnit XML in place for conformance/junit_report.py.

usage: junit_tidy.py REPORT.xml

gotestsum writes one <testcase> per test and per subtest, a failure's
message is always "Failed" and a skip's message is the raw test output.
This keeps the report honest and readable:

- a parent test whose subtests ran is dropped when it passed, or when it
  failed only because a subtest failed (its own output is nothing but
  === RUN / --- FAIL lines), so one broken check counts once; a parent that
  failed on its own account stays;
- a failure's message becomes the testify Error/Messages lines (or the first
  line of output that is not a === / --- marker);
- a skip's message becomes the reason given to t.Skip.
"""
import re
import sys
import xml.etree.ElementTree as ET

MARKER = re.compile(r"^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP))\b")
LOCATION = re.compile(r"^\s*[\w.-]+\.go:\d+:\s?")


def own_lines(text):
    """Output lines of one test other than go test's markers."""
    return [line for line in (text or "").splitlines() if line.strip() and not MARKER.match(line)]


def failure_message(text):
    lines = own_lines(text)
    picked = []
    for i, line in enumerate(lines):
        m = re.match(r"^\s*(Error|Messages):\s*(.*)$", line)
        if m:
            value = m.group(2).strip()
            # testify continues a multi-line Error on indented lines
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*(Error Trace|Error|Test|Messages):", lines[j]) \
                    and len(value) < 400:
                value += " " + lines[j].strip()
                j += 1
            picked.append(value)
    if picked:
        return " | ".join(picked)
    for line in lines:
        line = LOCATION.sub("", line).strip()
        if line and not line.startswith("Error Trace:"):
            return line
    return "failed"


def skip_message(text):
    for line in own_lines(text):
        line = LOCATION.sub("", line).strip()
        if line:
            return line
    return "skipped"


def main():
    path = sys.argv[1]
    tree = ET.parse(path)
    for suite in tree.getroot().iter("testsuite"):
        cases = list(suite.findall("testcase"))
        names = {c.get("name", "") for c in cases}
        failed_names = {c.get("name", "") for c in cases
                        if c.find("failure") is not None or c.find("error") is not None}
        for case in cases:
            name = case.get("name", "")
            children = [n for n in names if n.startswith(name + "/")]
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            if children:
                own = own_lines(bad.text if bad is not None else "")
                child_failed = any(n in failed_names for n in children)
                if bad is None or (child_failed and not own):
                    suite.remove(case)
                    continue
            if bad is not None:
                bad.set("message", failure_message(bad.text))
            skipped = case.find("skipped")
            if skipped is not None:
                skipped.set("message", skip_message(skipped.get("message") or skipped.text))
        left = suite.findall("testcase")
        suite.set("tests", str(len(left)))
        suite.set("failures", str(sum(1 for c in left if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in left if c.find("error") is not None)))
        suite.set("skipped", str(sum(1 for c in left if c.find("skipped") is not None)))
    tree.write(path, encoding="utf-8", xml_declaration=True)


if __name__ == "__main__":
    main()
