#!/usr/bin/env python3
"""Summarise JUnit XML reports into conformance/results/<suite>.json.

usage: junit_report.py --suite NAME --version V --out FILE REPORT.xml [REPORT.xml ...]

Prints one line per failing test to stderr, and `<suite>: N passed, M failed,
K skipped` as the last line of stdout. Exits 1 when a test failed or no report
could be read. Any runner that writes JUnit XML (JUnit console launcher,
pytest --junitxml, gotestsum --junitfile) can share it.
"""
import argparse
import datetime
import json
import re
import sys
import xml.etree.ElementTree as ET


def one_line(text, limit=300):
    """A message on one line, without stack frames (AssertJ messages span lines)."""
    text = re.split(r"\n\s*at [\w$.]+\(", text or "")[0]
    text = " ".join(text.split())
    return text[:limit] + ("..." if len(text) > limit else "")


def first_line(text):
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True)
    ap.add_argument("--version", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("reports", nargs="*")
    args = ap.parse_args()

    passed, failures, skips, broken = 0, [], [], []
    for path in args.reports:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            broken.append({"test": path, "message": "unreadable report: %s" % e})
            continue
        for case in root.iter("testcase"):
            cls = case.get("classname", "").rsplit(".", 1)[-1]
            name = "%s.%s" % (cls, case.get("name", "")) if cls else case.get("name", "")
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            skipped = case.find("skipped")
            if bad is not None:
                msg = bad.get("message") or bad.text
                failures.append({"test": name, "message": one_line(msg)})
            elif skipped is not None:
                reason = skipped.get("message") or first_line(skipped.text)
                # JUnit/AssertJ assumption noise: keep only the stated reason
                reason = re.sub(r"^\S*AssumptionViolatedException: assumption was not met due to:\s*", "", reason)
                reason = reason.strip("[] ") or "assumption not met"
                skips.append({"test": name, "reason": first_line(reason)})
            else:
                passed += 1

    if not args.reports:
        broken.append({"test": "<runner>", "message": "no JUnit XML report was written"})
    failures += broken

    result = {
        "suite": args.suite,
        "version": args.version,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "passed": passed,
        "failed": len(failures),
        "skipped": len(skips),
        "failures": failures,
        "skips": skips,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")

    for fail in failures:
        print("FAIL %s: %s" % (fail["test"], fail["message"]), file=sys.stderr)
    print("%s: %d passed, %d failed, %d skipped" % (args.suite, passed, len(failures), len(skips)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
