#!/usr/bin/env python3
"""Small helpers for .ci/galaxy-test.sh (standard library only).

Subcommands:

  free-port                          print a free TCP port on 127.0.0.1
  tool-id TOOL_XML                   print the tool's id
  wait URL --pid PID [--timeout S]   wait until URL/api/version answers (fails if PID dies)
  create-user URL --admin-key KEY --email E --password P --username U
                                     create a user with the bootstrap admin key, print its API key
  summarize JSON [--expect-failure [TEXT]]
                                     summarize a galaxy-tool-test report; exit 0 if every test
                                     passed (or, with --expect-failure, if a test failed with a
                                     message that names TEXT)
  negative TOOL_XML OUT_DIR          write OUT_DIR/tool.xml: a copy of the tool whose first test
                                     compares with a wrong expected file (id <id>_negative_check)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path


WRONG_FILE = "negative-check-wrong-expected.txt"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tool_id(tool_xml: str) -> str:
    return ET.parse(tool_xml).getroot().attrib["id"]


def _request(url: str, key: str | None = None, data: dict | None = None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["x-api-key"] = key
    body = json.dumps(data).encode() if data is not None else None
    req = urllib.request.Request(url, data=body, headers=headers, method="POST" if body is not None else "GET")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read().decode() or "null")


def wait(url: str, pid: int, timeout: float) -> None:
    t0 = time.monotonic()
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit(f"galaxy (pid {pid}) exited before answering")
        try:
            v = _request(f"{url}/api/version")
            print(f"Galaxy {v.get('version_major')}.{v.get('version_minor')} answers after "
                  f"{time.monotonic() - t0:.0f} s")
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            pass
        if time.monotonic() - t0 > timeout:
            sys.exit(f"galaxy did not answer {url}/api/version within {timeout:.0f} s")
        time.sleep(2)


def create_user(url: str, admin_key: str, email: str, password: str, username: str) -> str:
    user = _request(f"{url}/api/users", admin_key,
                    {"username": username, "email": email, "password": password})
    key = _request(f"{url}/api/users/{user['id']}/api_key", admin_key, {})
    return key if isinstance(key, str) else key["key"]


def summarize(report: str, expect_failure: str | None) -> int:
    data = json.loads(Path(report).read_text())
    tests = data.get("tests", [])
    counts: dict[str, int] = {}
    named = False
    for t in tests:
        status = t.get("data", {}).get("status", "unknown")
        counts[status] = counts.get(status, 0) + 1
        if status != "success":
            d = t.get("data", {})
            problems = d.get("output_problems") or d.get("execution_problem") or d.get("problems") or ""
            if isinstance(problems, list):
                problems = "; ".join(str(p) for p in problems)
            named = named or bool(expect_failure and expect_failure in str(problems))
            print(f"  {t.get('id')}: {status}: {str(problems)[:600]}")
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no tests"
    print(f"  {len(tests)} test(s): {summary}")
    failed = len(tests) - counts.get("success", 0)
    if expect_failure is not None:
        if failed and expect_failure and not named:
            print(f"  but no failure names {expect_failure!r}")
        return 0 if failed > 0 and (named or not expect_failure) else 1
    return 0 if tests and failed == 0 else 1


def negative(tool_xml: str, out_dir: str) -> str:
    """Copy the tool with the first test's first expected file replaced by a wrong one.

    The copy gets the id <id>_negative_check, keeps only that test, compares
    exactly (compare="diff", lines_diff="0"), and gets its own test-data/
    (copies of the original files plus the wrong one).  A test without any
    expected file gets an assertion that cannot hold instead.
    """
    src = Path(tool_xml).resolve()
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    (out / "test-data").mkdir(parents=True)
    tree = ET.parse(src)
    root = tree.getroot()
    new_id = root.attrib["id"] + "_negative_check"
    root.attrib["id"] = new_id
    root.attrib["name"] = root.attrib.get("name", "") + " (negative check)"
    tests = root.find("tests")
    if tests is None or not tests.findall("test"):
        sys.exit(f"{src} has no tests")
    first = tests.findall("test")[0]
    for t in tests.findall("test")[1:]:
        tests.remove(t)
    orig_data = src.parent / "test-data"
    if orig_data.is_dir():
        for f in orig_data.iterdir():
            if f.is_file():
                shutil.copyfile(f, out / "test-data" / f.name)
    # the first element of an <output>/<element>/<output_collection> that names a file
    target = next((e for e in first.iter() if e.tag in ("output", "element") and e.get("file")), None)
    if target is not None:
        wrong = WRONG_FILE
        original = (out / "test-data" / target.attrib["file"])
        text = original.read_text(errors="replace") if original.is_file() else ""
        (out / "test-data" / wrong).write_text(
            "this line is not in the tool's output\n" + "".join(
                line[::-1] + "\n" for line in text.splitlines()))
        print(f"  expected file {target.attrib['file']!r} of output {target.get('name')!r} "
              f"replaced by {wrong!r}", file=sys.stderr)
        target.attrib["file"] = wrong
        target.attrib["compare"] = "diff"
        target.attrib["lines_diff"] = "0"
        for a in ("sort", "delta", "delta_frac"):
            target.attrib.pop(a, None)
    else:
        target = next((e for e in first.iter() if e.tag == "output"), None)
        if target is None:
            sys.exit("the first test has neither an expected file nor an <output>")
        ac = target.find("assert_contents")
        if ac is None:
            ac = ET.SubElement(target, "assert_contents")
        ET.SubElement(ac, "has_text", text="negative check: this text is not in the output")
        print(f"  output {target.get('name')!r} given an assertion that cannot hold", file=sys.stderr)
    tree.write(out / "tool.xml", encoding="utf-8", xml_declaration=False)
    # macros.xml and other imports next to the tool
    for f in src.parent.glob("*.xml"):
        if f.name != src.name and not (out / f.name).exists():
            shutil.copyfile(f, out / f.name)
    return new_id


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("free-port")
    s = sub.add_parser("tool-id")
    s.add_argument("tool_xml")
    s = sub.add_parser("wait")
    s.add_argument("url")
    s.add_argument("--pid", type=int, required=True)
    s.add_argument("--timeout", type=float, default=300)
    s = sub.add_parser("create-user")
    s.add_argument("url")
    s.add_argument("--admin-key", required=True)
    s.add_argument("--email", required=True)
    s.add_argument("--password", required=True)
    s.add_argument("--username", required=True)
    s = sub.add_parser("summarize")
    s.add_argument("report")
    s.add_argument("--expect-failure", nargs="?", const="", default=None, metavar="TEXT")
    s = sub.add_parser("negative")
    s.add_argument("tool_xml")
    s.add_argument("out_dir")
    a = p.parse_args()
    if a.cmd == "free-port":
        print(free_port())
    elif a.cmd == "tool-id":
        print(tool_id(a.tool_xml))
    elif a.cmd == "wait":
        wait(a.url.rstrip("/"), a.pid, a.timeout)
    elif a.cmd == "create-user":
        print(create_user(a.url.rstrip("/"), a.admin_key, a.email, a.password, a.username))
    elif a.cmd == "summarize":
        sys.exit(summarize(a.report, a.expect_failure))
    elif a.cmd == "negative":
        print(negative(a.tool_xml, a.out_dir))


if __name__ == "__main__":
    main()
