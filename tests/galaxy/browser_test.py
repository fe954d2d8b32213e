#!/usr/bin/env python3
"""The gpu_search tool form in a real Galaxy, in headless Chromium (Playwright, sync API).

Run by .ci/galaxy-test.sh (phase "browser") against the Galaxy it started:

    python tests/galaxy/browser_test.py --url http://127.0.0.1:PORT \\
        --email USER --password PASS --tool-xml tool.xml \\
        [--out .galaxy-run/screenshots] [--docs docs/galaxy]

What it checks, with the conditional read from the tool XML (the first
<conditional> of <inputs>, its select and its <when> cases), so it follows the
tool as it changes:

1. log in at /login/start; upload (one API request) the test-data files that
   the first <test> of each case gives its data parameters, so the form shows
   real datasets (--no-data: leave the history empty);
2. open /?tool_id=ID: the tool form shows the conditional's select, set to its
   default case;
3. in each case, the parameters of that case (directly under its <when>) are
   shown and those only in other cases are not (e.g. blastp: query and subject
   shown, the HMM file not), and its data parameters take the test's datasets;
4. switching to every other case and back to the first works.

Each form state is saved as OUT/NN-<case>.png; the first screenshot of each
case is copied to DOCS/<name>-form.png, where <name> is the case's value where it is a
search type ("hmmsearch", "phmmer", "jackhmmer", "hmmscan", "blastp"), else "hmmsearch" or "blastp" when it contains
"hmm" or "blast" (else the value).
Exits 1 if a check fails (a screenshot of the failing page is saved as
OUT/failure.png), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run",
]


@dataclass
class Case:
    value: str
    label: str
    params: dict[str, str] = field(default_factory=dict)  # name -> label, directly under <when>
    data: dict[str, str] = field(default_factory=dict)    # data param -> test-data file (first test)


@dataclass
class Conditional:
    name: str
    test_param: str
    test_label: str
    default: str
    cases: list[Case]


def read_tool(tool_xml: Path) -> tuple[str, str, Conditional]:
    """The tool's id, name and first top-level conditional."""
    root = ET.parse(tool_xml).getroot()
    cond = root.find("inputs/conditional")
    if cond is None:
        raise SystemExit(f"{tool_xml}: no <conditional> in <inputs>")
    test = cond.find("param")
    options = [(o.get("value"), (o.text or "").strip(), o.get("selected", "").lower() == "true")
               for o in test.findall("option")]
    default = next((v for v, _, sel in options if sel), options[0][0])
    tests = [_flatten(t) for t in root.findall("tests/test")]
    cname, tname = cond.get("name"), test.get("name")
    cases = []
    for value, label, _ in options:
        when = cond.find(f"when[@value='{value}']")
        params, data = {}, {}
        first = next((t for t in tests if t.get(f"{cname}|{tname}", default) == value), {})
        if when is not None:
            for p in when.findall("param"):
                params[p.get("name")] = p.get("label") or p.get("name")
                f = first.get(f"{cname}|{p.get('name')}")
                if p.get("type") == "data" and f:
                    data[p.get("name")] = f.split(",")[0]
        cases.append(Case(value, label, params, data))
    return root.get("id"), root.get("name", ""), Conditional(
        cond.get("name"), test.get("name"), test.get("label") or test.get("name"), default, cases)


def _flatten(elem, prefix: str = "") -> dict[str, str]:
    """A <test>'s parameter values by full name ("search|hmmfile"), nested or flat."""
    out = {}
    for child in elem:
        if child.tag == "param" and child.get("name"):
            out[prefix + child.get("name")] = child.get("value", "")
        elif child.tag in ("conditional", "section") and child.get("name"):
            out.update(_flatten(child, prefix + child.get("name") + "|"))
    return out


def doc_name(value: str) -> str:
    if value in ("hmmsearch", "phmmer", "jackhmmer", "hmmscan", "blastp"):
        return value
    if "hmm" in value.lower():
        return "hmmsearch"
    if "blast" in value.lower():
        return "blastp"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", value)


class FormTest:
    def __init__(self, page, url: str, out: Path, timeout_ms: int):
        self.page = page
        self.url = url.rstrip("/")
        self.out = out
        self.timeout = timeout_ms
        self.failures: list[str] = []
        self.shots: list[tuple[str, Path]] = []  # (case value, screenshot)

    # -- helpers ---------------------------------------------------------------
    def element(self, cond: Conditional, name: str):
        """The form element of parameter `name` of the conditional (Galaxy ids: form-element-cond|name)."""
        return self.page.locator(f'[id="form-element-{cond.name}|{name}"]')

    def check(self, ok: bool, what: str) -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            self.failures.append(what)

    def shot(self, case: str) -> None:
        path = self.out / f"{len(self.shots) + 1:02d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', case)}.png"
        self.page.screenshot(path=str(path), full_page=True)
        self.shots.append((case, path))
        print(f"  screenshot {path}")

    # -- steps -----------------------------------------------------------------
    def login(self, email: str, password: str) -> None:
        self.page.goto(f"{self.url}/login/start")
        self.page.locator("input[name=login]").fill(email)
        self.page.locator("input[name=password]").fill(password)
        self.page.locator("button[type=submit], input[type=submit]").first.click()
        # logged in: the login form goes away and the client loads the user
        self.page.wait_for_function(
            "() => !document.querySelector('input[name=password]')", timeout=self.timeout)
        self.page.wait_for_load_state("networkidle", timeout=self.timeout)
        who = self.page.evaluate(
            "async () => (await (await fetch('/api/users/current')).json()).email || null")
        self.check(who == email, f"logged in as {email} (server says {who})")

    def upload(self, files: list[Path]) -> bool:
        """Upload files into the current history in one request and wait until they are ready."""
        history = self.page.request.get(f"{self.url}/history/current_history_json").json()
        elements = [{"src": "pasted", "paste_content": f.read_text(), "name": f.name, "ext": "auto"}
                    for f in files]
        r = self.page.request.post(
            f"{self.url}/api/tools/fetch", headers={"Content-Type": "application/json"},
            data=json.dumps({"history_id": history["id"],
                             "targets": [{"destination": {"type": "hdas"}, "elements": elements}]}))
        self.check(r.ok, f"upload of {', '.join(f.name for f in files)} accepted (HTTP {r.status})")
        if not r.ok:
            return False
        deadline = time.monotonic() + 5 * self.timeout / 1000
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            items = self.page.request.get(
                f"{self.url}/api/histories/{history['id']}/contents").json()
            states = {i["name"]: i["state"] for i in items}
            if len(states) >= len(files) and all(s in ("ok", "error", "failed_metadata")
                                                 for s in states.values()):
                break
            time.sleep(2)
        self.check(all(states.get(f.name) == "ok" for f in files), f"uploaded datasets ready: {states}")
        return True

    def choose_dataset(self, cond: Conditional, param: str, name: str) -> None:
        """Pick the history dataset called `name` for data parameter `param`, as a user does."""
        el = self.element(cond, param)
        chosen = el.locator(".multiselect__single")
        if name not in (chosen.inner_text() if chosen.count() else ""):
            el.locator(".multiselect").first.click()
            option = el.locator(".multiselect__option").filter(
                has_text=re.compile(rf"^\s*\d+: {re.escape(name)}\s*$")).first
            option.wait_for(state="visible", timeout=self.timeout)
            option.click()
        shown = el.locator(".multiselect__single").inner_text() if chosen.count() else ""
        self.check(name in shown, f"{param!r} set to dataset {name!r} (shows {shown!r})")

    def open_tool(self, tool_id: str, tool_name: str, cond: Conditional) -> None:
        self.page.goto(f"{self.url}/?tool_id={tool_id}")
        sel = self.element(cond, cond.test_param)
        sel.wait_for(state="visible", timeout=self.timeout)
        self.check(sel.is_visible(), f"tool form of {tool_id} shows the select {cond.test_label!r}")
        if tool_name:
            self.check(self.page.get_by_text(tool_name).first.is_visible(),
                       f"tool form shows the tool name {tool_name!r}")

    def select_case(self, cond: Conditional, case: Case) -> None:
        """Choose `case` in the conditional's select, as a user does: open it, click the option."""
        sel = self.element(cond, cond.test_param)
        sel.locator(".multiselect, .multiselect__select, [role=combobox]").first.click()
        option = sel.locator(".multiselect__option, [role=option]").filter(has_text=case.label).first
        option.wait_for(state="visible", timeout=self.timeout)
        option.click()

    def wait_case(self, cond: Conditional, case: Case, with_data: bool = False) -> None:
        """Wait until the form shows `case`, then check what is shown and what is not."""
        mine = set(case.params)
        others = {n for c in cond.cases if c is not case for n in c.params} - mine
        deadline = time.monotonic() + self.timeout / 1000
        while time.monotonic() < deadline:
            if all(self.element(cond, n).is_visible() for n in mine) and \
                    not any(self.element(cond, n).is_visible() for n in others):
                break
            time.sleep(0.25)
        self.page.wait_for_timeout(500)  # let the form settle before the screenshot
        shown = self.element(cond, cond.test_param).inner_text()
        self.check(case.label in shown, f"select shows {case.label!r}")
        for n in sorted(mine):
            self.check(self.element(cond, n).is_visible(),
                       f"[{case.value}] shows {n!r} ({case.params[n]!r})")
        for n in sorted(others):
            self.check(not self.element(cond, n).is_visible(),
                       f"[{case.value}] hides {n!r} (a parameter of another search type)")
        if with_data:
            for n, f in case.data.items():
                self.choose_dataset(cond, n, f)
            self.page.keyboard.press("Escape")  # no open list or tooltip in the screenshot
            self.page.mouse.move(1300, 950)
            self.page.wait_for_timeout(300)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="Galaxy URL, e.g. http://127.0.0.1:8080")
    ap.add_argument("--email", required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--tool-xml", type=Path, default=Path("tool.xml"))
    ap.add_argument("--out", type=Path, default=Path(".galaxy-run/screenshots"),
                    help="folder for the screenshots (default: .galaxy-run/screenshots)")
    ap.add_argument("--docs", type=Path, default=None,
                    help="copy one screenshot of each search type here as <type>-form.png")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--timeout", type=float, default=60, help="seconds to wait for each step")
    ap.add_argument("--no-data", action="store_true",
                    help="do not upload the tests' input files (the form then shows an empty history)")
    a = ap.parse_args()

    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    tool_id, tool_name, cond = read_tool(a.tool_xml)
    a.out.mkdir(parents=True, exist_ok=True)
    for old in a.out.glob("*.png"):
        old.unlink()
    print(f"browser test: tool {tool_id}, conditional {cond.name!r} "
          f"({', '.join(c.value for c in cond.cases)}), default {cond.default!r}")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=a.chromium, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t = FormTest(page, a.url, a.out, int(a.timeout * 1000))
        try:
            t.login(a.email, a.password)
            files = list(dict.fromkeys(f for c in cond.cases for f in c.data.values()))
            test_data = a.tool_xml.resolve().parent / "test-data"
            with_data = bool(files) and not a.no_data and all((test_data / f).is_file() for f in files)
            if with_data:
                with_data = t.upload([test_data / f for f in files])
            t.open_tool(tool_id, tool_name, cond)
            first = next(c for c in cond.cases if c.value == cond.default)
            t.wait_case(cond, first, with_data)
            t.shot(first.value)
            for case in [c for c in cond.cases if c is not first] + [first]:
                print(f"  switching to {case.value!r} ({case.label!r})")
                t.select_case(cond, case)
                t.wait_case(cond, case, with_data)
                t.shot(case.value)
        except PlaywrightError as exc:
            t.failures.append(f"browser error: {exc}")
            print(f"  FAIL browser error: {exc}")
        if t.failures:
            page.screenshot(path=str(a.out / "failure.png"), full_page=True)
            print(f"  page at failure: {a.out / 'failure.png'}")
        browser.close()

    if a.docs and not t.failures:
        a.docs.mkdir(parents=True, exist_ok=True)
        done = set()
        for value, path in t.shots:
            if value not in done:
                done.add(value)
                dest = a.docs / f"{doc_name(value)}-form.png"
                shutil.copyfile(path, dest)
                print(f"  copied {path.name} to {dest}")
    if t.failures:
        print(f"browser test: {len(t.failures)} check(s) failed")
        return 1
    print("browser test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
