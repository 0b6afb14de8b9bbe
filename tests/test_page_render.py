"""The page's sections rendered from a home's files (the browser test is tests/test_page.py)."""

from __future__ import annotations

import json

from snowfire.api.page import _mix_svg, runs_html


def test_runs_show_metrics_layer_weights_and_compare_tables(tmp_path):
    head = tmp_path / "sst2-linear"
    head.mkdir()
    (head / "config.json").write_text(json.dumps({"train": {"task": "sst2", "head": "linear"}}))
    (head / "metrics.json").write_text(json.dumps({"dev": {"accuracy": 0.8125}}))
    (head / "scalar_mix.json").write_text(json.dumps({"mix": [0.1, 0.2, 0.7]}))
    fire = tmp_path / "stsb-fire"
    fire.mkdir()
    (fire / "config.json").write_text(json.dumps({"finetune": {"task": "stsb"}}))
    cmp = tmp_path / "cmp"
    cmp.mkdir()
    (cmp / "table.md").write_text(
        "# t\n\n| task | ❄️ | 🔥 |\n| --- | --- | --- |\n| stsb | **88.0** | 85.6 |\n"
    )
    (cmp / "table.png").write_bytes(b"\x89PNG")
    html = runs_html(tmp_path)
    assert "accuracy 0.8125" in html and "<svg" in html
    assert "running or unfinished" in html  # the 🔥 run has no metrics.json yet
    assert "<td>88.0</td><td>85.6</td>" in html
    assert 'src="/ui/runs/cmp/table.png"' in html
    assert "<script" not in runs_html(_evil(tmp_path))


def _evil(tmp_path):
    run = tmp_path / "evil" / "<script>x"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"train": {"task": "<script>alert(1)</script>"}}))
    return run.parent


def test_layer_weight_bars_are_proportional():
    svg = _mix_svg([0.25, 0.5, 0.25])
    heights = [float(h.split('"')[0]) for h in svg.split('height="')[2:]]  # after the svg's own
    assert heights == [21.0, 42.0, 21.0]
