"""API keys (read and write scopes, 401/403, /healthz open, constant-time lookup), CORS only
when configured, and /metrics in the Prometheus text format."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from snowfire.api import Settings, create_app
from snowfire.api.security import load_keys
from snowfire.jobs import Home

READ, WRITE = "r" * 8 + "-read-key-0001", "w" * 8 + "-write-key-0001"
TRAIN = {"encoder": "minilm", "task": "sst2", "head": "linear"}


@pytest.fixture
def home(tmp_path):
    from tests.helpers.tasks import write_sst2

    write_sst2(tmp_path / "tasks")
    return Home(tmp_path)


def _client(home, **settings):
    return TestClient(create_app(settings=Settings(home=home.root, **settings)))


def test_keys_guard_every_route_but_healthz(home):
    with _client(home, api_keys=f"{READ},{WRITE}:write") as c:
        assert c.get("/healthz").status_code == 200
        for path in ("/v1/featuresets", "/v1/jobs", "/metrics", "/openapi.json"):
            r = c.get(path)
            assert r.status_code == 401, path
            assert r.headers["www-authenticate"] == 'Bearer realm="snowfire"'
            assert "Authorization: Bearer KEY" in r.json()["detail"]
        bad = {"Authorization": "Bearer not-a-key-at-all-xx"}
        assert c.get("/v1/jobs", headers=bad).status_code == 401
        read, write = {"Authorization": f"Bearer {READ}"}, {"Authorization": f"Bearer {WRITE}"}
        assert c.get("/v1/jobs", headers=read).status_code == 200
        r = c.post("/v1/jobs", json={"kind": "train", "params": TRAIN}, headers=read)
        assert r.status_code == 403 and "write key" in r.json()["detail"]
        assert c.get("/v1/jobs", headers=read).json() == []  # nothing queued by the read key
        r = c.post("/v1/jobs", json={"kind": "train", "params": TRAIN}, headers=write)
        assert r.status_code == 202, r.text
        job = r.json()["id"]
        assert c.post(f"/v1/jobs/{job}/cancel", headers=read).status_code == 403
        assert c.post(f"/v1/jobs/{job}/cancel", headers=write).json()["status"] == "cancelled"
        # a method a listed path does not take is 405 for any key, a path not listed 404
        for headers in (read, write):
            for method, path in (
                ("POST", f"/v1/jobs/{job}"),
                ("PUT", "/v1/jobs"),
                ("DELETE", f"/v1/jobs/{job}/cancel"),
            ):
                r = c.request(method, path, headers=headers)
                assert r.status_code == 405, (method, path, r.text)
            assert c.post(f"/v1/jobs/{job}/cancel/now", headers=headers).status_code == 404


def test_the_page_signs_a_browser_in_with_a_strict_httponly_cookie(home):
    with _client(home, api_keys=f"{READ},{WRITE}:write") as c:
        r = c.get("/", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/ui/login"
        assert c.get("/ui/jobs").status_code == 401  # fragments and the API are not open
        assert c.get("/ui/login").status_code == 200
        r = c.post("/ui/login", content=b"key=not-a-key-at-all-xx", follow_redirects=False)
        assert r.status_code == 401 and "snowfire_key" not in r.headers.get("set-cookie", "")
        r = c.post("/ui/login", content=f"key={READ}".encode(), follow_redirects=False)
        assert r.status_code == 303
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert c.get("/").status_code == 200  # the client keeps the cookie
        assert c.get("/v1/jobs").status_code == 200
        r = c.post("/v1/jobs", json={"kind": "train", "params": TRAIN})
        assert r.status_code == 403  # the cookie carries the read key's scope, no more


def test_without_keys_the_service_is_open_and_cors_is_off(home):
    with _client(home) as c:
        assert c.get("/v1/jobs").status_code == 200
        r = c.get("/v1/jobs", headers={"Origin": "https://elsewhere.example"})
        assert "access-control-allow-origin" not in r.headers
    with _client(home, cors_origins="https://ui.example") as c:
        r = c.get("/v1/jobs", headers={"Origin": "https://ui.example"})
        assert r.headers["access-control-allow-origin"] == "https://ui.example"
        r = c.get("/v1/jobs", headers={"Origin": "https://elsewhere.example"})
        assert "access-control-allow-origin" not in r.headers


def test_keys_file_and_bad_entries(tmp_path):
    f = tmp_path / "keys"
    f.write_text(f"# team keys\n{READ}\n{WRITE} write  # the CI\n")
    assert sorted(load_keys(None, f).values()) == ["read", "write"]
    with pytest.raises(ValueError, match=r"SNOWFIRE_API_KEYS entry 1: a key of 5 characters"):
        load_keys("short", None)
    f.write_text(f"{READ} admin\n")
    with pytest.raises(
        ValueError, match=rf"{f}:1: scope 'admin', expected one of read, predict, write"
    ):
        load_keys(None, f)


def test_metrics_count_requests_by_route_and_status_and_jobs_by_state(home):
    with _client(home) as c:
        c.post("/v1/jobs", json={"kind": "train", "params": TRAIN})
        c.get("/v1/jobs/nope")
        c.get("/v1/jobs/nope")
        text = c.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {
        (s.labels.get("route"), s.labels.get("status")): s.value
        for s in families["snowfire_requests"].samples
        if s.name == "snowfire_requests_total"
    }
    assert samples[("/v1/jobs/{job_id}", "404")] == 2
    assert samples[("/v1/jobs", "202")] == 1
    jobs = {
        (s.labels["kind"], s.labels["status"]): s.value for s in families["snowfire_jobs"].samples
    }
    assert jobs == {("train", "queued"): 1}
    assert "snowfire_request_seconds_bucket" in text and "snowfire_response_bytes_total" in text
