"""Check the HTML report of a finished workflow run in a real headless browser.

    python scripts/check_report.py [--configfile config/smoke.yaml] [--report PATH]
                                   [--screenshot report.png] [--figure NAME] [--no-generate]
                                   [--timeout SECONDS]

Run it in the workflow's directory after ``snakemake --configfile CONFIG`` has finished:
1. ``snakemake --configfile CONFIG --report REPORT`` writes the report (skip: --no-generate);
2. headless Chromium loads it and, through the DevTools protocol, drives the report's own
   single-page app as its menu does: for every claim page of the config (rfl/reporting/
   claim_pages.py) it opens the page's category and subcategory, checks that the figure and
   its claim page are listed there, opens the claim page and reads the text the browser
   renders inside its frame; then it opens REPRODUCTION.html the same way;
3. it asserts that every figure's name and title, and every claim's statement and verdict
   (from claims.json), appear in that rendered text, and that REPRODUCTION.html names every
   claim's statement. Failures are listed, exit status 1; all well, exit status 0.

The report is written to --report (default: report.html in the config's output folder,
beside its paper_tables/). Experiments skipped for want of data (``rfl.workflow.absent_data``,
as the workflow decides) have no figure and no page in the report: they are not looked for,
and the summary line says how many were skipped. A page that does not render within --timeout
(default 30 s) is a failure; the report is then loaded afresh before the next page, so one
broken page costs one timeout. Chromium runs in a process group of its own, which is ended on
exit, on Ctrl-C and on SIGTERM.

--screenshot saves a PNG of the report showing --figure (default: the first figure with
claims) and its claim page. Needs Chromium (``chromium`` or ``chromium-headless-shell`` on
PATH, or --chromium) and the ``websockets`` package. tests/test_report_browser.py runs it on
the smoke outputs (marker ``browser``).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import importlib.util
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome")


def find_chromium(explicit: str | None = None) -> str | None:
    """The Chromium executable: ``explicit``, else the first of CHROMIUM_NAMES on PATH."""
    if explicit:
        return explicit
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


class Browser:
    """A headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, chromium: str, width: int = 1400, height: int = 1000, timeout: float = 30.0,
                 extra_args: tuple[str, ...] = ()):
        """``extra_args``: more Chromium switches (scripts/asv_dashboard.py: no network)."""
        from websockets.sync.client import connect

        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="rfl-chromium-")
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", *extra_args, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self._stack = contextlib.ExitStack()
        port_file = Path(self.profile) / "DevToolsActivePort"
        try:
            port = self._wait(lambda: port_file.exists() and port_file.read_text().split("\n")[0],
                              "Chromium's DevTools port")
            targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
            url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            self.ws = self._stack.enter_context(connect(url, max_size=None, open_timeout=timeout))
            self.ids = itertools.count(1)
            self.call("Page.enable")
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:                    # no Chromium left behind by a failed start
            self.close()
            raise

    def _wait(self, ready, what: str, interval: float = 0.1):
        end = time.monotonic() + self.timeout
        while time.monotonic() < end:
            value = ready()
            if value:
                return value
            time.sleep(interval)
        raise TimeoutError(f"timed out waiting for {what}")

    def call(self, method: str, **params) -> dict:
        """Send one DevTools command; its result (events in between are skipped)."""
        i = next(self.ids)
        self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=self.timeout))
            if msg.get("id") == i:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def eval(self, expression: str, context: int | None = None):
        """The value of a JavaScript expression in the page (or an execution context)."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        if context is not None:
            params["contextId"] = context
        result = self.call("Runtime.evaluate", **params)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails'].get('text')}"
                               f" {result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str):
        return self._wait(lambda: self.eval(expression), what)

    def navigate(self, url: str):
        self.call("Page.navigate", url=url)

    def frame_text(self, url_prefix: str) -> str:
        """The rendered text (innerText) of the child frame whose URL starts with ``url_prefix``."""
        def text():
            tree = self.call("Page.getFrameTree")["frameTree"]
            for child in tree.get("childFrames", []):
                if child["frame"]["url"].startswith(url_prefix):
                    ctx = self.call("Page.createIsolatedWorld", frameId=child["frame"]["id"])["executionContextId"]
                    return self.eval("document.readyState === 'complete' && document.body "
                                     "&& document.body.innerText", ctx)
            return None
        return self._wait(text, "the frame of a result")

    def screenshot(self, path: Path):
        Path(path).write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def close(self):
        """End the DevTools connection, then Chromium's whole process group (its renderers and
        helpers too), and remove its profile."""
        try:
            self._stack.close()
        except Exception:                       # a dead connection: the processes still go
            pass
        finally:
            _kill_group(self.proc)
            shutil.rmtree(self.profile, ignore_errors=True)


def _kill_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM to the process group of ``proc`` (started with ``start_new_session``); SIGKILL
    to whatever of the group is left after ``grace`` seconds."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)
    while time.monotonic() < end:
        try:
            os.killpg(proc.pid, 0)               # a member is left (a renderer, a helper)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)


def _js(value) -> str:
    return json.dumps(value)


def show_subcategory(browser: Browser, category: str, subcategory: str) -> str:
    """Open ``category`` then ``subcategory`` as the report's menu does; the navbar's text."""
    browser.eval(f"app.showCategory({_js(category)}), true")
    browser.eval(f"app.setView({{navbarMode: 'subcategory', category: {_js(category)}, "
                 f"subcategory: {_js(subcategory)}}}), true")
    return browser.wait_for(f"app.state.navbarMode === 'subcategory' && app.state.category === {_js(category)} "
                            f"&& app.state.subcategory === {_js(subcategory)} "
                            f"&& document.body.innerText.includes({_js(category)}) && document.body.innerText",
                            f"subcategory {subcategory} of {category}")


def show_result(browser: Browser, suffix: str) -> str:
    """Open the result whose path ends with ``suffix`` as its view button does; its rendered text."""
    path = browser.eval(f"Object.keys(results).find(k => k.endsWith({_js(suffix)})) || null")
    if path is None:
        raise LookupError(f"no result {suffix} in the report")
    browser.eval(f"app.setView({{content: 'html', contentPath: results[{_js(path)}].data_uri, "
                 f"resultPath: {_js(path)}}}), true")
    uri = browser.eval(f"results[{_js(path)}].data_uri")
    return browser.frame_text(uri[:200])


def check(report: Path, config: dict, claims: list[dict], chromium: str, screenshot: Path | None = None,
          figure: str | None = None, timeout: float = 30.0) -> list[str]:
    """Load ``report`` in headless Chromium and check every claim page of ``config`` (the
    config as the workflow ran it: ``rfl.workflow.without_skipped``) and REPRODUCTION.html;
    the list of failures (empty: all well). A page that fails is listed and the report is loaded
    afresh before the next one."""
    from rfl.reporting.claim_pages import pages
    from rfl.reporting.order import REPORT_CATEGORY, menu

    records = {c["id"]: c for c in claims}
    failures: list[str] = []
    browser = Browser(chromium, timeout=timeout)

    def load():
        browser.navigate(report.resolve().as_uri())
        browser.wait_for("typeof app !== 'undefined' && typeof results !== 'undefined' "
                         "&& document.querySelector('#app') && document.querySelector('#app').children.length > 0",
                         "the report's app")

    try:
        load()
        for name, page in pages(config).items():
            try:
                navbar = show_subcategory(browser, page["category"], page["subcategory"])
                text = show_result(browser, f"/claims/{name}.html")
            except Exception as e:               # listed; the next page starts from a fresh load
                failures.append(f"{name}: {type(e).__name__}: {e}")
                load()
                continue
            expected = [page["title"]]
            if "figure" in page:
                expected.append(name)
                if f"figures/{name}.pdf" not in browser.eval(
                        f"JSON.stringify(categories[{_js(page['category'])}][{_js(page['subcategory'])}])"):
                    failures.append(f"{name}: the figure's PDF is not beside its claim page in the report")
                if page["title"] not in navbar:
                    failures.append(f"{name}: the figure's title is not in the report's menu")
            for cid in page["claims"]:
                c = records.get(cid)
                if c is None:
                    failures.append(f"{name}: claim {cid} is not in claims.json")
                    continue
                expected += [c["statement"], c["verdict"] or "measurement"]
            failures += [f"{name}: {x!r} is not on its page in the browser" for x in expected if x not in text]
        try:
            show_subcategory(browser, menu(config)["categories"][REPORT_CATEGORY], "Other")
            text = show_result(browser, "/REPRODUCTION.html")
            failures += [f"REPRODUCTION.html: claim {c['id']!r} ({c['statement']!r}) is not in it"
                         for c in claims if c["statement"] not in text]
        except Exception as e:
            failures.append(f"REPRODUCTION.html: {type(e).__name__}: {e}")
        if screenshot is not None:
            figure = figure or next((n for n, p in pages(config).items() if "figure" in p and p["claims"]),
                                    next(iter(config.get("figures", {})), None))
            if figure is not None:
                page = pages(config)[figure]
                show_subcategory(browser, page["category"], page["subcategory"])
                show_result(browser, f"/claims/{figure}.html")
                time.sleep(0.5)
            browser.screenshot(screenshot)
    finally:
        browser.close()
    return failures


def _terminate(signum, frame):
    """SIGTERM/SIGHUP end the check as Ctrl-C does, so that ``finally`` ends Chromium."""
    raise KeyboardInterrupt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configfile", default="config/config.yaml")
    ap.add_argument("--report", type=Path,
                    help="the report to write and check (default: report.html in the config's output folder)")
    ap.add_argument("--no-generate", action="store_true", help="check an existing --report")
    ap.add_argument("--screenshot", type=Path, help="save a PNG of a figure's claim page in the report")
    ap.add_argument("--figure", help="the figure of --screenshot (default: the first with claims)")
    ap.add_argument("--chromium", help="the Chromium executable (default: found on PATH)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds a page may take to render (default 30)")
    args = ap.parse_args(argv)

    from rfl import config as rflconfig
    from rfl.reporting.claim_pages import pages
    from rfl.workflow import absent_data, paper_only, without_skipped

    chromium = find_chromium(args.chromium)
    if chromium is None:
        print(f"check_report: error: no Chromium found (looked for {', '.join(CHROMIUM_NAMES)}); "
              "allowed: --chromium PATH", file=sys.stderr)
        return 2
    if importlib.util.find_spec("websockets") is None:
        print('check_report: error: the websockets package is not installed; allowed: '
              'pip install -e ".[report]" (README, the extras each task needs)', file=sys.stderr)
        return 2
    if not args.timeout > 0:
        print(f"check_report: error: --timeout {args.timeout:g}; allowed: a positive number of seconds",
              file=sys.stderr)
        return 2
    try:
        config = rflconfig.load(args.configfile)
    except (OSError, rflconfig.ConfigError) as e:
        print(f"check_report: error: {e}", file=sys.stderr)
        return 2
    claims_json = Path(config["output_dir"]) / "paper_tables" / "claims.json"
    if not claims_json.exists():
        print(f"check_report: error: {claims_json} does not exist; run "
              f"`snakemake --configfile {args.configfile}` first", file=sys.stderr)
        return 2
    skipped = absent_data(config)
    config = without_skipped(config, {**skipped, **paper_only(config)})
    report = args.report or Path(config["output_dir"]) / "report.html"
    if args.no_generate and not report.exists():
        print(f"check_report: error: --no-generate, and {report} does not exist", file=sys.stderr)
        return 2
    if not args.no_generate:
        done = subprocess.run(["snakemake", "--configfile", args.configfile, "--report", str(report)],
                              env={**os.environ}, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            print(f"check_report: error: `snakemake --report {report}` failed (exit {done.returncode})",
                  file=sys.stderr)
            return 1
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    try:
        failures = check(report, config, json.loads(claims_json.read_text()), chromium, args.screenshot,
                         args.figure, args.timeout)
    except KeyboardInterrupt:
        print("check_report: interrupted; Chromium ended", file=sys.stderr)
        return 130
    except Exception as e:                      # Chromium would not start, or the report's app never loaded
        print(f"check_report: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    for f in failures:
        print(f"FAIL {f}")
    print(f"{report}: {len(pages(config))} claim pages and REPRODUCTION.html checked in {Path(chromium).name}"
          f"{f' ({len(skipped)} experiment(s) skipped for want of data: no page)' if skipped else ''}: "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
