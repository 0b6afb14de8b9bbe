"""The page at `/` in a real headless browser (Debian's chromium driven by selenium): it loads,
shows a feature set and a job the test made, the job's cancel button cancels it, and with API
keys on the browser signs in through /ui/login."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request

import pytest

from snowfire.jobs import free_port, stop_process, wait_healthy
from tests.helpers import snowfire_cli

pytestmark = pytest.mark.subprocess

KEY = "page-test-write-key-00001"
INSTALL = "apt-get install -y chromium chromium-driver (Debian/Ubuntu; .ci/run does it when it can)"


def _browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.fail(f"the page test needs a headless chromium and its driver: {INSTALL}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1300,1000",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=options)


@pytest.fixture
def service(tiny_bert_dir, tmp_path):
    """A service over a home with one feature set and one queued job (no worker runs it)."""
    from snowfire.extractor import ExtractConfig, run_extract

    texts = tmp_path / "texts.txt"
    texts.write_text("the dog runs\na man plays the guitar\n")
    (info,) = run_extract(
        ExtractConfig(
            encoder=f"hf:{tiny_bert_dir}",
            input=str(texts),
            store=str(tmp_path / "store"),
            progress=False,
        )
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "SNOWFIRE_API_KEYS": f"{KEY}:write", "SNOWFIRE_LOG_LEVEL": "warning"}
    proc = subprocess.Popen(
        snowfire_cli("serve", "--home", str(tmp_path), "--port", str(port)), env=env
    )
    try:
        wait_healthy(url, proc)
        body = {"kind": "extract", "params": {"encoder": "minilm", "input": "texts.txt"}}
        job = _api(url, "/v1/jobs", body)
        yield url, info.id, job["id"]
    finally:
        stop_process(proc, grace=30)


def _api(url: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.load(r)


def test_the_page_shows_sets_and_jobs_and_cancels_a_job(service):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    url, fs_id, job_id = service
    browser = _browser()
    try:
        browser.get(url + "/")  # keys are on: the page sends the browser to sign in
        WebDriverWait(browser, 20).until(ec.url_contains("/ui/login"))
        field = browser.find_element(By.NAME, "key")
        field.send_keys("not-the-key-at-all-000")
        field.submit()
        WebDriverWait(browser, 20).until(
            ec.text_to_be_present_in_element((By.TAG_NAME, "body"), "not known")
        )
        field = browser.find_element(By.NAME, "key")
        field.send_keys(KEY)
        field.submit()
        WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "jobs")))
        assert browser.title == "snowfire"
        sets = browser.find_element(By.ID, "featuresets").text
        assert fs_id in sets and "tiny_bert" in sets
        jobs = browser.find_element(By.ID, "jobs")
        assert job_id in jobs.text and "queued" in jobs.text
        browser.find_element(By.CSS_SELECTOR, f'button[data-cancel="{job_id}"]').click()
        WebDriverWait(browser, 20).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, '#jobs [data-status="cancelled"]'))
        )
        assert _api(url, f"/v1/jobs/{job_id}")["status"] == "cancelled"
        assert not browser.find_elements(By.CSS_SELECTOR, f'button[data-cancel="{job_id}"]')
    finally:
        browser.quit()
