"""The dashboard in a real browser (Debian's headless chromium through chromedriver and selenium),
static (farm dashboard --out) and live (farm serve): every page loads without console errors, the
run list shows the runs and its filters narrow it, a run's file links open its files (the console
log), a place's page shows its history, the trends index has a sparkline per series, a trend has its
points, a kernel panic's message is whole, and hostile console text and names render as text.

FARM_DASHBOARD_SCREENSHOTS=DIR saves a screenshot of each page there (docs/dashboard/ holds them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_farm
from tests.store.rundirs import make_run

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
PANIC = "Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)"
# a console as the twin's U-Boot and Linux write it: farm's typed markers around a command, hostile text,
# and a panic; the failing run's message is made from it by farm's own driver (below)
HOSTILE_CONSOLE = ("U-Boot 2023.01\r\n=> echo 'ABCD''EFGHIJ'; dhcp; echo \"$?\"; echo 'ABCD''EFGHIJ';\r\n"
                   "ABCDEFGHIJ\r\nBOOTP broadcast 1\r\nDHCP client bound to address 10.0.2.15 (2 ms)\r\n0\r\n"
                   "ABCDEFGHIJ\r\n=> booti ${kernel_addr_r}\r\nStarting kernel ...\r\n"
                   "<script>alert('console')</script>\r\n[    3.104] " + PANIC + "\r\nCPU: 0 PID: 1 Comm: swapper\r\n")
HOSTILE_WHO = "<img src=x onerror=alert(1)>"
RUNS = ("20261201-100000-aaaa", "20261202-100000-bbbb", "20261203-100000-cccc", "20261204-100000-dddd")
PLACE = {"name": "maaxboard-1", "coordinator": "127.0.0.1:20408", "owner": "ci/lab",
         "tags": {"board": "maaxboard", "note": "<b>bold</b>"}}
#: the place of each run: the third ran on another board
PLACES = ("maaxboard-1", "maaxboard-1", "maaxboard-2", "maaxboard-1")


def panic_message() -> str:
    """The boot stage's message as farm's U-Boot driver makes it from HOSTILE_CONSOLE, the panic line
    arriving in two reads cut at 'VFS: Unabl' (what once cut the message there)."""
    from labgrid import Target

    from farm.boot.ubootdriver import FarmUBootDriver
    from farm.boot.watch import LINUX_FATAL, UBOOT_FATAL
    from tests.unit.test_fatal_whole_line import SlowConsole

    data = HOSTILE_CONSOLE.encode()
    data = data[data.index(b"Starting kernel"):]  # what the driver reads once U-Boot handed over to Linux
    cut = data.index(b"VFS: Unabl") + len(b"VFS: Unabl")
    target = Target("maaxboard-twin")
    console = SlowConsole(target, "console")
    console.pieces = deque([(0.0, data[:cut]), (0.3, data[cut:])])
    target.activate(console)
    uboot = FarmUBootDriver(target, "uboot", prompt="=> ")
    try:
        uboot.expect_or_fail(["FARM-READY"], (*LINUX_FATAL, *UBOOT_FATAL), "booting Linux", 10)
    except Exception as exc:  # noqa: BLE001 - BootFailure, as the boot stage records it
        return str(exc)
    finally:
        target.cleanup()
    raise AssertionError("no panic seen")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("dash")
    # LG_COORDINATOR empty: the places page shows the store's side only, whatever virtual lab an earlier test
    # of the session left in the environment (its places would be listed too)
    env = {"FARM_DB": str(base / "results.db"), "FARM_BASELINES": str(base / "baselines"), "LG_COORDINATOR": ""}
    # runs 2 and 3 with 5 values: run 3's drop is judged (5 a side, compare's rule); the others' 3 never are
    values = ([1.00e8, 1.02e8, 1.01e8], [1.05e8, 1.04e8, 1.06e8, 1.03e8, 1.07e8],
              [0.80e8, 0.82e8, 0.81e8, 0.79e8, 0.83e8], [1.0e8, 1.0e8, 1.0e8])
    kernels = ("6.1.0-57-arm64", "6.1.0-57-arm64", "6.12.0-1-arm64", "6.12.0-1-arm64")
    failure = panic_message()
    dirs = []
    for i, (run_id, vs, kernel) in enumerate(zip(RUNS, values, kernels)):
        last = i == len(RUNS) - 1
        dirs.append(make_run(base / run_id, run_id, started=f"2026-12-0{i + 1}T10:00:00.000+00:00", kernel=kernel,
                             values={"throughput": vs}, git_sha=str(i + 1) * 40,
                             status="failed" if last else "passed", failure=failure if last else None,
                             console=HOSTILE_CONSOLE if last else "U-Boot 2023.01\nFARM-READY\n",
                             who=HOSTILE_WHO if last else "lab-engineer", place={**PLACE, "name": PLACES[i]},
                             # run 2 has a network sweep on two setups (compared with none of the pages below)
                             sweep_setups=("bare-linux", "kvm-guest") if i == 1 else ()))
    proc = run_farm("db", "ingest", *map(str, dirs), env=env)
    assert proc.returncode == 0, proc.stderr
    proc = run_farm("baseline", "save", str(dirs[0]), "--name", "v1.0", env=env)
    assert proc.returncode == 0, proc.stderr
    return env


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.fail(f"{CHROMIUM} or {CHROMEDRIVER} is missing: install Debian's chromium and chromium-driver "
                    "packages (scripts/setup.sh does it)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1100,1400",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def live(store):
    """farm serve on a free port of 127.0.0.1; its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--port", "0"], cwd=ROOT,
                            env={**os.environ, **store}, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line + (proc.stderr.read() if proc.poll() is not None else "")
        yield f"http://127.0.0.1:{match.group(1)}/"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _load(browser, url: str, shot: str, tmp_path: Path):
    from selenium.webdriver.common.by import By

    browser.get(url)
    errors = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert not errors, f"{url}: {errors}"
    assert browser.find_elements(By.TAG_NAME, "script") == [], "a page of farm's carries no script at all"
    folder = Path(os.environ.get("FARM_DASHBOARD_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(folder / f"{shot}.png"))
    return browser


def _follow(browser, element) -> None:
    """Click a link or button and wait until the next page has loaded (a click does not wait).

    The old page is told apart by a mark on its window object, which a new document does not have. (Not by
    the staleness of its <html> element: Chrome, asked about that element while the document is being
    replaced, can answer "unhandled inspector error: Node with given id does not belong to the document"
    instead of a stale reference.) While the page changes, the browser may refuse a script: tried again."""
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    browser.execute_script("window.farmLeft = true")
    element.click()
    refused: list[str] = []

    def arrived(b) -> bool:
        try:
            return b.execute_script("return window.farmLeft === undefined && document.readyState === 'complete'")
        except WebDriverException as e:  # the document in between
            refused.append(e.msg or str(e))
            return False

    try:
        WebDriverWait(browser, 30).until(arrived)
    except TimeoutException:
        raise AssertionError(f"no new page loaded within 30 s of the click (the browser's last refusal: "
                             f"{refused[-1] if refused else None})") from None


def _shot(browser, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("FARM_DASHBOARD_SCREENSHOTS") or tmp_path)
    browser.save_screenshot(str(folder / f"{name}.png"))


def _runs_listed(page) -> list[str]:
    from selenium.webdriver.common.by import By

    return [r.find_element(By.TAG_NAME, "a").text for r in page.find_elements(By.CSS_SELECTOR, "table.runs tbody tr")]


def _check_pages(browser, base: str, tmp_path: Path, prefix: str, live: bool) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page = _load(browser, base + "index.html", f"{prefix}runs", tmp_path)
    assert _runs_listed(page) == list(reversed(RUNS))
    assert HOSTILE_WHO in page.find_element(By.CSS_SELECTOR, "table.runs").text  # shown, as text
    assert page.find_elements(By.TAG_NAME, "img") == []

    # filters narrow the list: live, the form (status failed, then a place and a date range); static, a value's link
    if live:
        Select(page.find_element(By.NAME, "status")).select_by_value("failed")
        _follow(browser, page.find_element(By.CSS_SELECTOR, "form.filters button"))
        assert _runs_listed(browser) == [RUNS[-1]]
        assert "status=failed" in browser.current_url
        Select(browser.find_element(By.NAME, "status")).select_by_value("")
        Select(browser.find_element(By.NAME, "place")).select_by_value("maaxboard-1")
        browser.find_element(By.NAME, "since").send_keys("12/02/2026")  # the date input, as a person types it
        _follow(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button"))
        assert _runs_listed(browser) == [RUNS[3], RUNS[1]]
        assert "2 runs with place maaxboard-1, from 2026-12-02" in browser.find_element(By.CSS_SELECTOR, "p.count").text
        _shot(browser, tmp_path, f"{prefix}runs-filtered")
    else:
        _follow(browser, page.find_element(By.CSS_SELECTOR, 'nav.facets a[href$="runs/place/maaxboard-2/1.html"]'))
        assert _runs_listed(browser) == [RUNS[2]]
        _follow(browser, browser.find_element(By.CSS_SELECTOR, 'nav.facets a[href$="runs/status/passed/1.html"]'))
        assert _runs_listed(browser) == [RUNS[2], RUNS[1], RUNS[0]]
        _shot(browser, tmp_path, f"{prefix}runs-filtered")
    assert not browser.get_log("browser")

    # the trends index: a row and a sparkline per series, no regression where the statistics say none
    page = _load(browser, base + "trends.html", f"{prefix}trends", tmp_path)
    rows = page.find_elements(By.CSS_SELECTOR, "table.series tbody tr:not(:has(th))")
    sparks = page.find_elements(By.CSS_SELECTOR, "table.series svg.spark")
    assert len(sparks) == len(rows) > 1
    throughput = next(r for r in rows if "algorithm=sha256" in r.text and "default" in r.text
                      and r.find_elements(By.CSS_SELECTOR, "svg.spark polyline"))
    assert len(throughput.find_element(By.CSS_SELECTOR, "svg.spark polyline").get_attribute("points").split()) == 4
    assert "100 MB/s" in throughput.text and "baseline v1.0" in throughput.text  # newest value, against v1.0
    # 1.01e8 -> 1.0e8 from 3 values a side: never judged under compare's 5 boots a side (issue 45's one rule)
    assert "-1.0% n=3 a side: not judged" in throughput.text
    assert page.find_elements(By.CSS_SELECTOR, "svg.spark .spark-last.regression") == []
    # a sweep's single-value series are listed, never judged a regression
    assert "one point: nothing to compare" in page.find_element(By.CSS_SELECTOR, "table.series").text

    _follow(browser, page.find_element(By.PARTIAL_LINK_TEXT, "crypto.openssl-speed throughput"))
    assert not browser.get_log("browser")
    points = browser.find_elements(By.CSS_SELECTOR, "svg.chart circle.point")
    assert len(points) == 4
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart circle.regression")) == 1  # run 3 dropped 20 %
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart circle.baseline")) == 1  # v1.0 = run 1
    assert "v1.0" in browser.find_element(By.TAG_NAME, "table").text
    ticks = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "svg.chart > text[text-anchor=end]")
             if t.text.endswith("MB/s")]
    assert ticks and all(re.fullmatch(r"\d+(\.5)? MB/s", t) for t in ticks), ticks  # round values
    _shot(browser, tmp_path, f"{prefix}trend")

    # a failed run: the panic's message whole, in its stage and marked in the console, the line linked
    page = _load(browser, base + f"run/{RUNS[-1]}.html", f"{prefix}run", tmp_path)
    stage = next(tr for tr in page.find_elements(By.CSS_SELECTOR, "table tbody tr") if "crypto.openssl" in tr.text)
    message = stage.find_element(By.TAG_NAME, "pre").text
    assert message.splitlines()[0] == f"booting Linux: kernel panic: {PANIC}"
    console = page.find_element(By.CSS_SELECTOR, "pre.console")
    assert "<script>alert('console')</script>" in console.text
    marked = [m.text for m in console.find_elements(By.TAG_NAME, "mark")]
    assert marked == [f"[    3.104] {PANIC}"]  # the whole line, the only one marked
    assert "'ABCD''EFGHIJ'" not in console.text and "=> dhcp" in console.text  # farm's typing folded away
    assert "failure" in page.find_element(By.TAG_NAME, "table").text  # the junit outcome
    page.find_element(By.CSS_SELECTOR, "label[for=typing-0]").click()  # shown on demand, no script
    assert "=> echo 'ABCD''EFGHIJ'; dhcp;" in console.text
    page.find_element(By.CSS_SELECTOR, "label[for=typing-0]").click()
    jump = stage.find_element(By.CSS_SELECTOR, "a.jump")
    assert jump.text == "the failing line: console of maaxboard-twin, line 11"
    jump.click()  # to the failing line of the console
    assert browser.current_url.endswith("#c-maaxboard-twin-L11")
    _shot(browser, tmp_path, f"{prefix}run-console")

    # its files: a link opens the console log, the file as it is (markers and all)
    files = {a.text: a for a in page.find_elements(By.CSS_SELECTOR, "table.files a")}
    assert {"console/maaxboard-twin.log", "junit.xml", "results.csv", "run.json"} <= set(files)
    files["console/maaxboard-twin.log"].click()
    text = browser.find_element(By.TAG_NAME, "body").text
    assert PANIC in text and "echo 'ABCD''EFGHIJ'; dhcp;" in text and "<script>alert('console')</script>" in text
    assert browser.find_elements(By.TAG_NAME, "script") == []
    _shot(browser, tmp_path, f"{prefix}run-file")
    browser.back()
    page = browser
    _follow(browser, page.find_element(By.PARTIAL_LINK_TEXT, "compare with the run before it"))
    assert not browser.get_log("browser")
    ratios = [td.text for td in page.find_elements(By.CSS_SELECTOR, "tbody tr td:nth-child(9)")]
    # 1.0e8 / 0.81e8, 3 values against 5: an interval, and never judged under 5 a side
    assert ratios == ["inconclusive: 1.235 [1.20–1.27]"]
    label = page.find_element(By.CSS_SELECTOR, "svg.chart.ratio text.label")
    assert label.text.replace("\n", " ") == "openssl-speed throughput [algorithm=sha256; block=16384 B]"  # whole
    _shot(browser, tmp_path, f"{prefix}compare")
    _load(browser, base + "compare.html", f"{prefix}compare-index", tmp_path)

    page = _load(browser, base + "places.html", f"{prefix}places", tmp_path)
    rows = page.find_elements(By.CSS_SELECTOR, "table.places tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["maaxboard-1", "maaxboard-2"]
    cells = [td.text for td in rows[0].find_elements(By.TAG_NAME, "td")]
    assert cells[1] == "board=maaxboard note=<b>bold</b>"  # a tag renders as text
    assert cells[5] == "3" and RUNS[-1] in cells[6] and RUNS[-1] in cells[7]  # its runs, last run, last failure
    _follow(browser, rows[0].find_elements(By.TAG_NAME, "a")[-1])  # the last failure's run page
    assert not browser.get_log("browser")
    assert browser.find_element(By.TAG_NAME, "h1").text == f"Run {RUNS[-1]}"

    # a place's page: its history, oldest first, a cell per run coloured by its outcome, its jobs
    page = _load(browser, base + "places.html", f"{prefix}places", tmp_path)
    _follow(browser, page.find_element(By.LINK_TEXT, "maaxboard-1"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Place maaxboard-1"
    cells = browser.find_elements(By.CSS_SELECTOR, "svg.strip rect")
    assert [c.get_attribute("class") for c in cells] == ["pass", "pass", "failure"]
    assert _runs_listed(browser) == [RUNS[3], RUNS[1], RUNS[0]]
    assert "3 runs: 2 passed, 1 failed" in browser.find_element(By.TAG_NAME, "main").text
    assert not browser.get_log("browser")
    _shot(browser, tmp_path, f"{prefix}place")

    page = _load(browser, base + f"run/{RUNS[1]}.html", f"{prefix}run-sweep", tmp_path)
    charts = page.find_elements(By.CSS_SELECTOR, "svg.chart.xy")
    assert len(charts) == 2  # achieved against requested, RTT: drawn inline, no image file
    colours = {c.value_of_css_property("stroke") for c in charts[0].find_elements(By.CSS_SELECTOR, "polyline.curve")}
    assert len(colours) == 2  # each setup its own colour
    ticks = [t.text for t in charts[0].find_elements(By.TAG_NAME, "text") if "bit/s" in t.text]
    assert "100 Mbit/s" in ticks and not any("." in t for t in ticks), ticks  # round values in human units
    assert len(page.find_elements(By.CSS_SELECTOR, "table.sweep")) == 2  # a row per load, per setup
    # its screenshot shows the whole page: the sweep summary is below the charts, past the first screen
    size = browser.get_window_size()
    browser.set_window_size(size["width"], browser.execute_script("return document.body.scrollHeight") + 120)
    try:
        _shot(browser, tmp_path, f"{prefix}run-sweep")
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_the_static_site_in_a_browser(store, browser, tmp_path):
    out = tmp_path / "site"
    proc = run_farm("dashboard", "--out", str(out), env=store)
    assert proc.returncode == 0, proc.stderr
    _check_pages(browser, out.as_uri() + "/", tmp_path, "", live=False)


def test_farm_serve_in_a_browser(store, browser, live, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _check_pages(browser, live, tmp_path, "live-", live=True)
    page = _load(browser, live + "compare.html", "live-compare-form", tmp_path)
    Select(page.find_element(By.NAME, "a")).select_by_visible_text(RUNS[0])
    Select(page.find_element(By.NAME, "b")).select_by_visible_text(RUNS[2])
    _follow(browser, page.find_element(By.TAG_NAME, "button"))
    assert not browser.get_log("browser")
    ratios = [td.text for td in page.find_elements(By.CSS_SELECTOR, "tbody tr td:nth-child(9)")]
    assert len(ratios) == 1 and ratios[0].startswith(f"inconclusive: {0.81 / 1.01:.3f} ["), ratios  # 3 against 5


def test_farm_serve_is_read_only_and_local(live):
    import urllib.error
    import urllib.request

    assert live.startswith("http://127.0.0.1:")
    for method in ("POST", "PUT", "DELETE"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(urllib.request.Request(live + "index.html", data=b"x", method=method))
        assert err.value.code == 405
    with urllib.request.urlopen(live + "index.html") as resp:
        assert "script-src" not in resp.headers["Content-Security-Policy"]
        assert resp.headers["Content-Security-Policy"].startswith("default-src 'none'")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(live + "run/no-such-run.html")
    assert err.value.code == 404
