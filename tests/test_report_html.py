"""``ctxkit report``: one self-contained HTML page, rendered by headless Chromium offline, whose figures are
the numbers ``ctxkit simulate --json`` prints."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape

import pytest
from conftest import ROOT

from ctxkit.cli.main import app

EXAMPLE = ROOT / "examples" / "session.jsonl"
ARGS = [str(EXAMPLE), "-p", "default", "-p", "claude-code-full", "--context-window", "50000",
        "--set", "thresholds.summary_reserve=5000"]
CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)


def chromium(*args: str) -> subprocess.CompletedProcess:
    """Headless Chromium with the network unreachable (a proxy to nowhere, no name resolves) and its
    console messages logged on stderr (``INFO:CONSOLE``)."""
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it when it can)")
    return subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--proxy-server=127.0.0.1:9",
                           "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def report(runner, tmp_path):
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", *ARGS, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    sim = runner.invoke(app, ["simulate", *ARGS, "--json"])
    assert sim.exit_code == 0, sim.stderr
    return out, json.loads(sim.stdout)["sessions"][0]


def test_the_page_loads_nothing_from_anywhere(report):
    page = report[0].read_text()
    assert not re.search(r"<(script|link|iframe|img|object|embed)\b|\bsrc=|url\(|@import", page, re.I)
    assert "default-src 'none'" in page  # and the browser is told so: anything that tries is blocked


def test_chromium_renders_it_offline_without_console_errors_and_shows_the_simulated_numbers(report):
    path, session = report
    done = chromium("--dump-dom", path.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []
    dom = done.stdout
    rows = {unescape(m.group(1)): m.group(0) for m in re.finditer(r'<tr data-row="([^"]+)"[^>]*>', dom)}
    expected = [session["recorded"], session["replayed"], session["none"], *session["policies"]]
    assert list(rows) == [r["policy"] for r in expected]
    for r in expected:
        tag = rows[r["policy"]]
        for key in ("requests", "peak_context", "compactions", "failures", "input_tokens",
                    "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens", "cost_usd"):
            assert f'data-{key.replace("_", "-")}="{r[key]}"' in tag, (r["policy"], key)
    for chart, pick in (("context", max), ("cost", lambda v: v[-1])):
        block = dom[dom.index(f'data-chart="{chart}"'):]
        block = block[:block.index("</svg>")]
        series = {unescape(m.group(1)): [float(x) for x in m.group(2).split(",")]
                  for m in re.finditer(r'data-series="([^"]+)" data-values="([^"]*)"', block)}
        for r in expected:
            key = "peak_context" if chart == "context" else "cost_usd"
            assert pick(series[r["policy"]]) == pytest.approx(r[key], abs=1e-6), (chart, r["policy"])
    assert 'data-line="window" data-value="50000"' in dom
    # savings against the two modelled rows, never against recorded
    for r in session["policies"]:
        for base in ("none", "replayed"):
            saved = re.search(rf'data-savings="{re.escape(r["policy"])}">.*?data-saved-vs-{base}="([-0-9.e]+)"', dom)
            assert float(saved.group(1)) == pytest.approx(session[base]["cost_usd"] - r["cost_usd"], abs=1e-6)
    assert "<th>vs recorded" not in dom and "saved vs recorded" not in dom
    # the visible text says the same
    assert f"{session['none']['peak_context']:,}" in dom and f"{session['policies'][0]['cost_usd']:.4f}" in dom


def test_lines_that_coincide_stay_apart_and_charts_take_the_page_width(report):
    """default and claude-code-full draw nearly the none-less line, recorded and replayed the same one: each
    series has a dash pattern and shape of its own, and its shapes at points no other series marks."""
    page = report[0].read_text()
    for chart in ("context", "cost"):
        block = page[page.index(f'data-chart="{chart}"'):]
        block = block[:block.index("</svg>")]
        styles = re.findall(r'data-series="[^"]+" data-values="[^"]*" data-dash="([^"]*)" data-shape="([^"]+)"', block)
        assert len(styles) == 5 and len(set(styles)) == 5
        assert 'width="100%"' in page[page.rindex("<svg", 0, page.index(f'data-chart="{chart}"')):][:300]
        marked = [set(re.findall(r'class="mark"><title>[^<]*, request (\d+):', g)) for g in block.split("<g data-series")[1:]]
        assert all(marked)  # every series draws its shapes full size somewhere ...
        assert sum(map(len, marked)) == len(set().union(*marked))  # ... where no other series does
    assert "stroke-dasharray" in page.split('class="legend"')[1]  # the legend draws each line as it is drawn


def test_every_removed_item_has_its_stage_size_and_redacted_original(runner, tmp_path, report):
    page = report[0].read_text()
    removed = re.findall(r'<tr data-removed="([^"]+)" data-stage="([^"]+)" data-bytes="(\d+)"', page)
    big = {stage for policy, stage, size in removed if policy == "default" and int(size) > 100_000}
    assert big == {"tool-result-budget", "microcompact"}  # the big Bash output: persisted, then cleared
    assert page.count("<details><summary>original</summary>") == len(removed)
    # a secret in a persisted output is redacted in the page
    lines = EXAMPLE.read_text().splitlines()
    secret = "sk-ant-api03-" + "Q" * 90
    at = next(k for k, line in enumerate(lines) if len(line) > 100_000)
    entry = json.loads(lines[at])
    block = entry["message"]["content"][0]
    block["content"] = f"ANTHROPIC_API_KEY={secret}\n" + (block["content"] if isinstance(block["content"], str)
                                                          else json.dumps(block["content"]))
    lines[at] = json.dumps(entry)
    session = tmp_path / "secret.jsonl"
    session.write_text("\n".join(lines) + "\n")
    out = tmp_path / "secret.html"
    result = runner.invoke(app, ["report", str(session), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    assert secret not in text and "[REDACTED:" in text


def test_a_failing_page_is_caught(tmp_path):
    """The console check can fail: a page that tries to load an image logs an error."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                    "'none'\"></head><body><img src=\"https://example.com/x.png\"></body></html>")
    done = chromium("--dump-dom", page.as_uri())
    assert any(":CONSOLE" in line and "example.com" in line for line in done.stderr.splitlines())
