"""``ctxkit report``: one self-contained HTML page about a session under one or more policies.

Everything is inline (style, SVG charts; no script, font, image or frame is loaded from anywhere),
so the page opens offline and can be attached to an issue. Its numbers are those of
``ctxkit simulate --json`` for the same session and policies (the page is rendered from the same
result), and each figure carries them in ``data-*`` attributes. Sections:

* the rows (recorded, replayed, none, each policy) as ``simulate`` prints them, and the model's
  calibration (replayed against recorded);
* what each policy saves against ``none`` and against ``replayed`` (both modelled: the model's own
  error is no saving), never against ``recorded``;
* context per request, with the window, the thresholds and the compactions, and cumulative cost per
  request: charts at the page's width whose lines each have a dash pattern and point shape of their
  own, so that one drawn over another does not hide it;
* where the tokens of the last view go, by tool and by kind of message;
* the compactions, with what they kept (retention) when the autocompact report has it;
* every item a stage removed (persisted, cleared, snipped, collapsed) with its original behind a
  disclosure, redacted as anything sent to a summarizer is.
"""
from __future__ import annotations

from html import escape
from typing import Any

from .pricing import PriceTable
from .simulate import Row
from .svg import Series, line_chart, styled

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1100px;
       color: #222; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 3px 10px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.legend { margin: 4px 0 12px 78px; } .key { margin-right: 16px; white-space: nowrap; }
.key svg { vertical-align: middle; } svg[data-chart] { display: block; width: 100%; height: auto; }
.bar { display: inline-block; height: 10px; background: #2471a3; vertical-align: middle; }
details pre { white-space: pre-wrap; max-height: 360px; overflow: auto; background: #f7f7f7; padding: 8px; }
.muted { color: #777; } .fail { color: #c0392b; font-weight: 600; }
"""
_ROW_COLUMNS = (("requests", "requests"), ("peak_context", "peak context"), ("compactions", "compactions"),
                ("failures", "failures"), ("input_tokens", "input"), ("cache_creation_input_tokens", "cache write"),
                ("cache_read_input_tokens", "cache read"), ("output_tokens", "output"))


def _num(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else escape(str(v))


def _change(row: dict[str, Any], base: dict[str, Any]) -> float | None:
    """The relative change in cost from ``base`` to ``row`` (None when ``base`` cost nothing)."""
    return (row["cost_usd"] - base["cost_usd"]) / base["cost_usd"] if base["cost_usd"] else None


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:+.0%}"


def _rows_table(session: dict[str, Any]) -> str:
    rows = [session["recorded"], session["replayed"], session["none"], *session["policies"]]
    if session["sidechain"]["requests"]:
        rows.append(session["sidechain"])
    head = "".join(f"<th>{escape(label)}</th>" for _, label in _ROW_COLUMNS)
    body = []
    for r in rows:
        attrs = " ".join(f'data-{key.replace("_", "-")}="{r[key]}"' for key, _ in _ROW_COLUMNS)
        cells = "".join(f'<td class="n{" fail" if key == "failures" and r[key] else ""}">{_num(r[key])}</td>'
                        for key, _ in _ROW_COLUMNS)
        policy = r in session["policies"] or r is session["none"]
        versus = [_change(r, session["none"]) if policy and r is not session["none"] else None,
                  _change(r, session["replayed"]) if policy else None]
        body.append(f'<tr data-row="{escape(r["policy"])}" {attrs} data-cost-usd="{r["cost_usd"]}">'
                    f'<td>{escape(r["policy"])}</td>{cells}<td class="n">{r["cost_usd"]:.4f}</td>'
                    + "".join(f'<td class="n">{_percent(v)}</td>' for v in versus) + "</tr>")
    return (f'<table id="rows"><tr><th>row</th>{head}<th>cost USD</th><th>vs none</th><th>vs replayed</th></tr>'
            + "".join(body) + "</table>")


def _calibration(session: dict[str, Any]) -> str:
    """How far the model is from what the session was billed (``replayed`` against ``recorded``)."""
    check = session["calibration"]
    cells = "".join(f'<tr data-calibration="{key}" data-error="{"" if v is None else v}"><td>{escape(key)}</td>'
                    f'<td class="n{" fail" if key in check["off"] else ""}">'
                    f'{"recorded 0" if v is None else f"{v:+.1%}"}</td></tr>'
                    for key, v in check["relative_error"].items())
    return f"<table><tr><th>figure</th><th>replayed vs recorded</th></tr>{cells}</table>"


def _savings(session: dict[str, Any]) -> str:
    """What each policy saves against the two modelled baselines, in USD and relative."""
    lines = []
    for r in session["policies"]:
        cells = ""
        for base in ("none", "replayed"):
            saved = session[base]["cost_usd"] - r["cost_usd"]
            change = _change(r, session[base])
            cells += (f'<td class="n" data-saved-vs-{base}="{round(saved, 6)}">{saved:,.4f}</td>'
                      f'<td class="n">{_percent(change)}</td>')
        lines.append(f'<tr data-savings="{escape(r["policy"])}"><td>{escape(r["policy"])}</td>{cells}</tr>')
    if not lines:
        return '<p class="muted">No policy was simulated.</p>'
    return ("<table><tr><th>policy</th><th>saved vs none, USD</th><th>cost vs none</th>"
            "<th>saved vs replayed, USD</th><th>cost vs replayed</th></tr>" + "".join(lines) + "</table>")


def _series(rows: list[Row], value) -> list[Series]:
    out = []
    for k, row in enumerate(rows):
        main = [r for r in row.requests if r.kind == "main"]
        marks = [(c["request"], "compaction") for c in row.compactions if isinstance(c.get("request"), int)]
        out.append(Series(row.policy, value(row, main), markers=marks, **styled(k)))
    return out


def _cumulative(row: Row, main: list) -> list[float]:
    """The cost so far at each main request (summarizer requests counted where they were made)."""
    total, out = 0.0, []
    for r in row.requests:
        total += r.cost
        if r.kind == "main":
            out.append(round(total, 6))
    return out


def _breakdown(rows: list[Row]) -> str:
    parts = []
    for row in rows:
        if not row.breakdown:
            continue
        parts.append(f'<h3>{escape(row.policy)}</h3><div data-breakdown="{escape(row.policy)}">')
        for key, label in (("by_tool", "by tool"), ("by_kind", "by kind")):
            items = row.breakdown.get(key) or {}
            top = max(items.values(), default=1) or 1
            lines = "".join(f'<tr data-{key.replace("_", "-")}="{escape(name)}" data-tokens="{n}"><td>{escape(name)}</td>'
                            f'<td class="n">{n:,}</td><td><span class="bar" style="width:{max(1, int(240 * n / top))}px">'
                            f'</span></td></tr>' for name, n in items.items())
            parts.append(f"<table><tr><th>{label}</th><th>tokens</th><th></th></tr>{lines}</table>")
        parts.append("</div>")
    return "".join(parts)


def _retention_cell(value: Any) -> str:
    if not isinstance(value, dict):
        return '<span class="muted">not reported</span>'
    return ", ".join(f"{escape(k)} {'—' if v is None else f'{v:.0%}'}" for k, v in value.items())


def _compactions(rows: list[Row]) -> str:
    lines = []
    for row in rows:
        for k, c in enumerate(row.compactions):
            retention = row.retention[k] if k < len(row.retention) else None
            lines.append(f'<tr data-compaction="{escape(row.policy)}" data-request="{c["request"] + 1}">'
                         f'<td>{escape(row.policy)}</td><td class="n">{c["request"] + 1}</td>'
                         f'<td class="n">{c["tokens_before"]:,}</td><td class="n">{c["tokens_after"]:,}</td>'
                         f'<td>{escape(str(c.get("summarizer") or ""))}</td><td>{_retention_cell(retention)}</td></tr>')
    if not lines:
        return '<p class="muted">No policy compacted this session.</p>'
    return ("<table><tr><th>policy</th><th>before request</th><th>view tokens before</th><th>after</th>"
            "<th>summarizer</th><th>retention</th></tr>" + "".join(lines) + "</table>")


def _removed(rows: list[Row]) -> str:
    parts = []
    for row in rows:
        if not row.removed:
            continue
        lines = "".join(
            f'<tr data-removed="{escape(row.policy)}" data-stage="{escape(i["stage"])}" data-bytes="{i["bytes"]}">'
            f'<td>{escape(i["stage"])}</td><td>{escape(i["action"])}</td><td>{escape(i["what"])}</td>'
            f'<td class="n">{i["bytes"]:,}</td><td class="n">{i["tokens"]:,}</td>'
            f'<td><details><summary>original</summary><pre>{escape(i["original"])}</pre></details></td></tr>'
            for i in row.removed)
        parts.append(f"<h3>{escape(row.policy)}</h3><table><tr><th>stage</th><th>action</th><th>what</th>"
                     f"<th>bytes</th><th>tokens</th><th></th></tr>{lines}</table>")
    return "".join(parts) or '<p class="muted">No stage removed anything from this session.</p>'


def render_report(session: dict[str, Any], result: dict[str, Any], prices: PriceTable) -> str:
    """The page for one session: ``session`` is its ``simulate --json`` object, ``result`` the rows behind it."""
    rows = result["rows"]
    shown: list[Row] = [rows["recorded"], rows["replayed"], rows["none"], *rows["policies"]]
    policies: list[Row] = rows["policies"]
    hlines = [("window", float(session["context_window"]))]
    if policies:
        th = policies[0].thresholds
        hlines += [("autocompact", float(th["autocompact_threshold"])), ("blocking", float(th["blocking_limit"]))]
    context = line_chart("Context per request (tokens)", _series(shown, lambda row, main: [r.context for r in main]),
                         hlines=hlines, y_label="tokens", chart_id="context")
    cost_series = _series(shown, _cumulative)
    for s in cost_series:
        s.fmt = "${:,.4f}"
    cost = line_chart("Cumulative cost (USD)", cost_series, y_label="USD", chart_id="cost")
    warnings = "".join(f"<li>{escape(w)}</li>" for w in session["warnings"])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>ctxkit report: {escape(session["session"])}</title><style>{_CSS}</style></head>
<body>
<h1>ctxkit report</h1>
<p><b>{escape(session["session"])}</b> — model {escape(session["model"])}, context window
{session["context_window"]:,} tokens, prompt cache {escape(session["cache_ttl"])}; prices of {escape(str(prices.as_of))}
({escape(prices.source)}).</p>
{f"<ul>{warnings}</ul>" if warnings else ""}
<h2>Rows</h2>
<p class="muted">recorded: what the session was billed; replayed: the same session through ctxkit's cost model;
none: the whole history with no context management (requests over the window are failures); then each policy,
replayed request by request. The same figures as <code>ctxkit simulate --json</code>. Policies are compared with
none and replayed, which come out of the same model, never with recorded.</p>
{_rows_table(session)}
<h2>Savings</h2>
{_savings(session)}
<h2>Calibration</h2>
<p class="muted">How far the model is from what the session was billed: its error bounds every saving above.</p>
{_calibration(session)}
<h2>Context per request</h2>
{context}
<h2>Cumulative cost</h2>
{cost}
<h2>Where the tokens go</h2>
<p class="muted">The view at the last request, by tool and by kind of message.</p>
{_breakdown(shown)}
<h2>Compactions</h2>
{_compactions(policies)}
<h2>What each stage removed</h2>
<p class="muted">Originals are redacted as anything sent to a summarizer is.</p>
{_removed(policies)}
</body></html>
"""
