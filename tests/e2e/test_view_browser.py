"""`swe-srl view` in a real headless Chromium (Debian's chromium + chromedriver, driven by Selenium): every kind of
page on runs the project writes (an eval run with a resolved, an unresolved and an error instance; a tiny training
run with TRL's completion logs; trajectories with replay rows; a samples file), the counts, filters and sorting,
the XSS payload staying text, the static export opened from file://, and Ctrl-C. Screenshots go to
build/test-artifacts/view/."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import view_runs

from swe_srl.trajectories.schema import read_jsonl
from swe_srl.view.open import open_site
from swe_srl.view.server import export, make_server

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

pytestmark = pytest.mark.e2e
ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "view"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--window-size=1400,1000")  # fmt: skip


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.fail("chromium and chromedriver are not installed: scripts/install.sh installs them")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("view")
    data = view_runs.dataset(root / "data.jsonl")
    trajs_path = view_runs.trajectories_file(root / "trajs.jsonl")
    trajs = list(read_jsonl(trajs_path))
    return {
        "eval": view_runs.eval_run(root / "eval", data, steps=50),
        "trajectories": trajs_path,
        "samples": view_runs.samples_file(root / "samples.jsonl", trajs, history=2),
        "replay": view_runs.replay_file(root / "replay.jsonl", trajs),
    }


@pytest.fixture(scope="module")
def served(runs):
    site = open_site(
        runs["eval"], trajectories=runs["trajectories"], samples=runs["samples"], replay=runs["replay"]
    )
    server = make_server(site, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield site, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _loaded(address_part: str):
    """A wait condition: the page at an address containing ``address_part`` has loaded."""
    return lambda driver: (
        address_part in driver.current_url
        and driver.execute_script("return document.readyState") == "complete"
    )


def _shown(driver) -> list[str]:
    return [row.get_attribute("data-id") for row in driver.find_elements(By.CSS_SELECTOR, "#instances tbody tr")
            if row.is_displayed()]  # fmt: skip


def _xss_ran(driver) -> bool:
    return driver.execute_script("return window.__xss !== undefined")


def test_eval_run_summary_table_filters_and_instance_pages(browser, served):
    _, base = served
    browser.get(base)
    assert browser.find_element(By.ID, "rate").text == "33.3%"
    assert [browser.find_element(By.ID, key).text for key in ("resolved", "total")] == ["1", "3"]
    assert "95% interval 6.1%–79.2%" in browser.find_element(By.ID, "summary").text  # the Wilson interval
    assert "infra_error" in browser.find_element(By.ID, "by-exit").text
    browser.save_screenshot(str(ARTIFACTS / "eval-run.png"))
    Select(browser.find_element(By.CSS_SELECTOR, "[data-filter=status]")).select_by_value("error")
    assert _shown(browser) == ["demo__gamma-3"]
    Select(browser.find_element(By.CSS_SELECTOR, "[data-filter=status]")).select_by_value("")
    browser.find_element(By.CSS_SELECTOR, "[data-search=id]").send_keys("BETA")
    assert _shown(browser) == ["demo__beta-2"]
    browser.get(base)
    browser.find_elements(By.CSS_SELECTOR, "#instances th")[6].click()  # time, descending
    assert _shown(browser) == ["demo__gamma-3", "demo__beta-2", "demo__alpha-1"]

    started = time.monotonic()
    browser.find_element(By.LINK_TEXT, "demo__alpha-1").click()  # 50 steps
    assert len(browser.find_elements(By.CSS_SELECTOR, "section.step")) == 50
    assert time.monotonic() - started < 1.0, "the instance page of a 50-step episode took a second or more"
    problem = browser.find_element(By.ID, "problem").text
    assert "<script>window.__xss = 1</script>" in problem and not _xss_ran(browser)
    assert '<img src=x onerror="window.__xss = 2">' in browser.find_element(By.ID, "step-2").text
    folded = browser.find_element(By.CSS_SELECTOR, "#step-1 details")
    assert folded.get_attribute("open") is None and "400 lines" in folded.text
    assert "replay: exit 0, observation matches" in browser.find_element(By.ID, "step-0").text
    assert browser.find_element(By.CSS_SELECTOR, ".diff .add").text.startswith("+x = 2 # <b>bold</b>")
    f2p = browser.find_element(By.ID, "FAIL_TO_PASS").text
    assert "tests/test_a.py::test_fix PASSED" in f2p
    browser.save_screenshot(str(ARTIFACTS / "eval-instance.png"))
    browser.find_element(By.LINK_TEXT, "trajectory").click()  # cross-link: eval instance → trajectory
    assert "replay: exit 0" in browser.find_element(By.ID, "step-0").text and not _xss_ran(browser)
    browser.find_element(By.LINK_TEXT, "samples").click()  # → its samples
    assert browser.find_element(By.TAG_NAME, "h1").text.endswith("demo__alpha-1")
    browser.find_element(By.LINK_TEXT, "eval instance").click()  # and back
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("demo__alpha-1")

    browser.get(base + "instance/demo__gamma-3.html")
    assert "docker: the daemon went away" in browser.find_element(By.ID, "error").text
    assert "tests/test_c.py::test_fix not run" in browser.find_element(By.ID, "FAIL_TO_PASS").text


def test_samples_as_the_model_sees_them_with_server_filters(browser, served):
    _, base = served
    browser.get(base + "samples/index.html")
    assert "history window: last 2 steps" in browser.find_element(By.TAG_NAME, "main").text
    samples = browser.find_elements(By.CSS_SELECTOR, "section.sample")
    assert len(samples) == 12  # 3 trajectories × 4 steps
    step3 = browser.find_element(By.CSS_SELECTOR, "section.sample[data-step='3']")
    step3.find_element(By.TAG_NAME, "summary").click()
    roles = [e.text for e in step3.find_elements(By.CSS_SELECTOR, ".msg .role")]
    assert [r.lower() for r in roles] == ["system", "user", "assistant", "user", "assistant", "user"]
    problem = step3.find_elements(By.CSS_SELECTOR, ".msg pre")[1].text
    assert "[1 earlier steps not shown]" in problem  # the window's note
    browser.save_screenshot(str(ARTIFACTS / "samples.png"))
    browser.find_element(By.NAME, "step").send_keys("2")
    browser.find_element(By.NAME, "instance").send_keys("demo__beta-2")
    browser.find_element(By.CSS_SELECTOR, "#sample-filters button").click()  # served: the server filters
    # a form's submit navigates after click() returns (seen once in CI): wait for the filtered page's address
    WebDriverWait(browser, 10).until(_loaded("step=2"))
    assert [e.get_attribute("data-instance") for e in browser.find_elements(By.CSS_SELECTOR, "section.sample")] == [
        "demo__beta-2"]  # fmt: skip
    assert not _xss_ran(browser)


@pytest.mark.train
def test_training_run_curves_heldout_and_grpo_groups(browser, tmp_path: Path):
    pytest.importorskip("trl")
    run = view_runs.training_run(tmp_path / "train")
    server = make_server(open_site(run), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        browser.get(base)
        assert browser.find_element(By.CSS_SELECTOR, ".curves img").get_attribute("naturalWidth") != "0"
        assert len(browser.find_elements(By.CSS_SELECTOR, "#curves tbody tr")) >= 2
        rows = browser.find_elements(By.CSS_SELECTOR, "#heldout tbody tr")
        assert len(rows) == 5
        browser.find_element(By.ID, "gain-header").click()  # best change first
        gains = [float(r.find_element(By.CSS_SELECTOR, "td.gain").get_attribute("data-sort"))
                 for r in browser.find_elements(By.CSS_SELECTOR, "#heldout tbody tr")]  # fmt: skip
        assert gains == sorted(gains, reverse=True)
        Select(browser.find_element(By.CSS_SELECTOR, "[data-filter=step]")).select_by_value("3")
        shown = [r for r in browser.find_elements(By.CSS_SELECTOR, "#heldout tbody tr") if r.is_displayed()]
        assert [r.get_attribute("data-step") for r in shown] == ["3"]
        browser.save_screenshot(str(ARTIFACTS / "training-run.png"))
        browser.find_element(By.LINK_TEXT, "GRPO groups").click()
        browser.find_elements(By.CSS_SELECTOR, "#steps a")[-1].click()
        groups = browser.find_elements(By.CSS_SELECTOR, "section.group")
        assert groups
        for group in groups:
            rewards = [
                float(td.text) for td in group.find_elements(By.CSS_SELECTOR, "tbody tr td:nth-child(3)")
            ]
            assert len(rewards) == 4 and rewards == sorted(rewards, reverse=True)
        headers = [th.text for th in groups[0].find_elements(By.TAG_NAME, "th")]
        assert {"format", "syntax", "similarity"} <= set(headers)  # the reward's layers per completion
        browser.save_screenshot(str(ARTIFACTS / "grpo-groups.png"))
    finally:
        server.shutdown()
        server.server_close()


def test_export_is_the_served_site_and_opens_from_file(browser, served, tmp_path: Path):
    site, base = served
    out = tmp_path / "site"
    assert export(site, out) == len(site.routes())
    for route in site.routes():
        with urllib.request.urlopen(base + route) as answer:
            assert answer.read() == (out / route).read_bytes(), route
    browser.get((out / "index.html").as_uri())
    assert browser.find_element(By.ID, "total").text == "3"
    Select(browser.find_element(By.CSS_SELECTOR, "[data-filter=repo]")).select_by_value("demo/beta")
    assert _shown(browser) == ["demo__beta-2"]
    browser.find_element(By.LINK_TEXT, "demo__beta-2").click()
    assert "<script>" in browser.find_element(By.ID, "problem").text and not _xss_ran(browser)
    browser.get((out / "samples" / "index.html").as_uri())
    browser.find_element(By.NAME, "split").send_keys("train")  # file://: the form filters this page's rows
    browser.find_element(By.CSS_SELECTOR, "#sample-filters button").click()
    assert not [e for e in browser.find_elements(By.CSS_SELECTOR, "section.sample") if e.is_displayed()]


def test_cli_serves_on_localhost_and_stops_cleanly_on_ctrl_c(runs):
    proc = subprocess.Popen([sys.executable, "-m", "swe_srl.cli", "view", str(runs["eval"]), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = proc.stdout.readline()
        assert "at http://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split(" at ")[1].split()[0]
        with urllib.request.urlopen(url + "index.html") as answer:
            assert b"demo__alpha-1" in answer.read()
        request = urllib.request.Request(url + "index.html", data=b"x", method="POST")
        with pytest.raises(urllib.error.HTTPError, match="501"):  # no endpoint writes
            urllib.request.urlopen(request)
        with pytest.raises(urllib.error.HTTPError, match="404"):  # only the site's pages and files
            urllib.request.urlopen(url + "../../../etc/passwd")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0 and "stopped" in proc.stdout.read()
    finally:
        proc.kill()
    bad = subprocess.run([sys.executable, "-m", "swe_srl.cli", "view", str(runs["eval"] / "results")],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "expected an eval run folder" in bad.stderr and str(runs["eval"] / "results") in bad.stderr
