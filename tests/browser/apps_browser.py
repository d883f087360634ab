"""Drives headless Chromium (Selenium, the distribution's chromedriver) through the test host
page (host.html) for each case given: the host renders the Apps example's dashboard in a
sandboxed iframe, the test clicks the app's Refresh button, and checks that the app's own
`tools/call` reached the server and its answer came back into the page.

    apps_browser.py --site URL --out DIR --chromium PATH --chromedriver PATH \\
        --case NAME MCP_URL TOOL METRICS_URL [--case ...]

For each case: the app renders the tool's result (generation 0) in the iframe; a click on
Refresh makes the app call `dashboard.refresh`, and the page shows generation 1; the bridge
saw the app's `ui/initialize`, `ui/notifications/initialized` and `tools/call` and answered
the call with the server's result; the server behind METRICS_URL (the example, also behind the
gateway) counted one more `tools/call`; the host recorded no error. A screenshot of each case
is kept as DIR/apps-NAME.png (apps-NAME-failed.png when it failed). Runs every case, then
exits 1 if any failed, saying what.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 30
# Monday's value at generation 0 and 1 (examples/apps_server.rs rotates BASE by one a refresh).
MONDAY = {0: "120", 1: "340"}


class Failure(Exception):
    """A check that did not hold."""


def tool_calls(metrics_url: str) -> int:
    """The server's count of `tools/call` requests, from its Prometheus text."""
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    total = 0
    for line in text.splitlines():
        m = re.match(r'^mcp_http_requests_total\{([^}]*)\} (\d+)', line)
        if m and 'method="tools/call"' in m.group(1):
            total += int(m.group(2))
    return total


def start_browser(chromium: str, chromedriver: str, profile: Path) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=800,600",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)


def wait_for(driver: webdriver.Chrome, what: str, condition) -> None:
    try:
        WebDriverWait(driver, TIMEOUT, poll_frequency=0.1).until(lambda d: condition(d))
    except TimeoutException:
        raise Failure(f"timed out after {TIMEOUT} s waiting for {what}") from None


def body_state(driver: webdriver.Chrome) -> str:
    return driver.find_element(By.TAG_NAME, "body").get_attribute("data-state") or ""


def host_text(driver: webdriver.Chrome) -> str:
    return driver.find_element(By.ID, "log").text


def app_status(driver: webdriver.Chrome) -> str:
    """The app's state and #status, read from its frame (for a failure's message)."""
    frames = driver.find_elements(By.CSS_SELECTOR, "#frame iframe")
    if not frames:
        return "no iframe"
    driver.switch_to.frame(frames[0])
    try:
        return f"{body_state(driver)!r}, {driver.find_element(By.ID, 'status').text!r}"
    finally:
        driver.switch_to.default_content()


def app_rows(driver: webdriver.Chrome) -> list[tuple[str, str]]:
    rows = []
    for tr in driver.find_elements(By.CSS_SELECTOR, "#rows tr"):
        cells = tr.find_elements(By.TAG_NAME, "td")
        rows.append((cells[0].text, cells[1].text))
    return rows


def check_rendered(driver: webdriver.Chrome, generation: int) -> None:
    """Inside the app's frame: the table of `generation` is shown."""
    wait_for(
        driver,
        f"the app to show generation {generation}",
        lambda d: body_state(d) in ("rendered", "error")
        and f"generation {generation}" in d.find_element(By.ID, "status").text
        or body_state(d) == "error",
    )
    status = driver.find_element(By.ID, "status").text
    if body_state(driver) != "rendered":
        raise Failure(f"the app is in state {body_state(driver)!r}: {status}")
    rows = app_rows(driver)
    if len(rows) != 5 or rows[0] != ("Mon", MONDAY[generation]):
        raise Failure(f"the app shows {rows} at generation {generation}, not Mon = {MONDAY[generation]} first of 5")
    print(f"  ok: the app shows {len(rows)} rows, generation {generation} ({status!r}; Mon = {rows[0][1]})")


def check_messages(log: list[dict]) -> None:
    """The messages between the app and the official bridge, as the host page recorded them."""
    from_app = [e["message"] for e in log if e["from"] == "app"]
    from_host = [e["message"] for e in log if e["from"] == "host"]
    init = next((m for m in from_app if m.get("method") == "ui/initialize"), None)
    if init is None:
        raise Failure("the app sent no ui/initialize")
    answer = next((m for m in from_host if m.get("id") == init.get("id") and "method" not in m), None)
    if answer is None or "result" not in answer:
        raise Failure(f"the bridge did not accept the app's ui/initialize: {answer}")
    if not any(m.get("method") == "ui/notifications/initialized" for m in from_app):
        raise Failure("the app sent no ui/notifications/initialized")
    calls = [m for m in from_app if m.get("method") == "tools/call"]
    if len(calls) != 1:
        raise Failure(f"the app made {len(calls)} tools/call requests, not 1: {calls}")
    call = calls[0]
    if call["params"].get("name") != "dashboard.refresh" or call["params"].get("arguments") != {"generation": 0}:
        raise Failure(f"the app's call is {call['params']}, not dashboard.refresh {{generation: 0}}")
    reply = next((m for m in from_host if m.get("id") == call["id"] and "method" not in m), None)
    if reply is None or "result" not in reply:
        raise Failure(f"the bridge answered the app's tools/call with {reply}")
    structured = reply["result"].get("structuredContent") or {}
    if structured.get("generation") != 1:
        raise Failure(f"the app's tools/call came back with {reply['result']}, not generation 1")
    sent = sorted({m.get("method") for m in from_host if "method" in m})
    print(
        f"  ok: the bridge answered ui/initialize (protocol {init['params'].get('protocolVersion')}), "
        f"relayed the app's tools/call dashboard.refresh and returned generation 1; it sent {sent}"
    )


def run_case(driver: webdriver.Chrome, site: str, out: Path, name: str, mcp: str, tool: str, metrics: str) -> None:
    print(f"apps-browser: {name}: {tool} at {mcp}")
    before = tool_calls(metrics)
    query = urllib.parse.urlencode({"mcp": mcp, "tool": tool})
    driver.get(f"{site}/host.html?{query}")
    try:
        wait_for(driver, "the host to send the tool's result to the app", lambda d: body_state(d) in ("result-sent", "error"))
    except Failure as failure:
        raise Failure(f"{failure}; the host says:\n{host_text(driver)}\nand the app: {app_status(driver)}") from None
    if body_state(driver) == "error":
        raise Failure(f"the host failed:\n{host_text(driver)}")
    print("  " + host_text(driver).replace("\n", "\n  "))

    iframe = driver.find_element(By.CSS_SELECTOR, "#frame iframe")
    if iframe.get_attribute("sandbox") != "allow-scripts":
        raise Failure(f"the app's iframe has sandbox={iframe.get_attribute('sandbox')!r}")
    driver.switch_to.frame(iframe)
    check_rendered(driver, 0)
    shown = tool_calls(metrics)
    if shown != before + 1:
        raise Failure(f"the server counted {shown - before} tools/call for the host's call of {tool}, not 1")

    button = driver.find_element(By.ID, "refresh")
    if not button.is_enabled():
        raise Failure("the app's Refresh button is disabled")
    button.click()
    check_rendered(driver, 1)
    driver.switch_to.default_content()
    after = tool_calls(metrics)
    if after != shown + 1:
        raise Failure(f"the server counted {after - shown} tools/call for the app's click, not 1")
    print(f"  ok: the server counted the app's tools/call ({shown} -> {after} at {metrics})")

    check_messages(driver.execute_script("return window.hostLog"))
    errors = driver.execute_script("return window.hostErrors")
    if errors:
        raise Failure(f"the host recorded errors: {errors}")
    shot = out / f"apps-{name}.png"
    driver.save_screenshot(str(shot))
    print(f"  ok: {name}; screenshot {shot}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", required=True, help="where host.html is served")
    parser.add_argument("--out", required=True, type=Path, help="for the screenshots and the profile")
    parser.add_argument("--chromium", required=True)
    parser.add_argument("--chromedriver", required=True)
    parser.add_argument("--case", nargs=4, action="append", required=True, metavar=("NAME", "MCP_URL", "TOOL", "METRICS_URL"))
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    profile = args.out / "profile"
    started = time.monotonic()
    driver = start_browser(args.chromium, args.chromedriver, profile)
    try:
        caps = driver.capabilities
        driver_version = (caps.get("chrome") or {}).get("chromedriverVersion", "?").split(" ")[0]
        print(f"apps-browser: {caps.get('browserName')} {caps.get('browserVersion')} (chromedriver {driver_version}), headless")
        passed, failed = 0, 0
        for name, mcp, tool, metrics in args.case:
            try:
                run_case(driver, args.site, args.out, name, mcp, tool, metrics)
                passed += 1
            except Failure as failure:
                failed += 1
                driver.switch_to.default_content()
                driver.save_screenshot(str(args.out / f"apps-{name}-failed.png"))
                for entry in driver.get_log("browser"):
                    if entry.get("level") != "DEBUG":
                        print(f"  | console {entry.get('level')}: {entry.get('message')}", file=sys.stderr)
                print(f"apps-browser: {name} FAILED: {failure}", file=sys.stderr)
        print(f"apps-browser: the cases took {time.monotonic() - started:.1f} s")
        print(f"apps-browser: {passed} passed, {failed} failed")
        return 1 if failed else 0
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
