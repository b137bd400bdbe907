"""Line charts as inline SVG, written by hand: the HTML report must open offline, with nothing to load.

One function, :func:`line_chart`: series of (x, y) points, horizontal reference lines (the window,
thresholds) and markers (compactions). Every element carries ``data-*`` attributes with the exact
values it draws, and a ``<title>`` (the browser's tooltip), so that the figures can be read back and
checked against ``ctxkit simulate --json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

PALETTE = ("#555555", "#c0392b", "#2471a3", "#1e8449", "#b9770e", "#7d3c98", "#117a65", "#a04000")
WIDTH, HEIGHT = 860, 320
LEFT, RIGHT, TOP, BOTTOM = 78, 170, 16, 36


@dataclass
class Series:
    name: str
    values: list[float]  # y per x index (x = request number)
    color: str = PALETTE[0]
    fmt: str = "{:,.0f}"
    markers: list[tuple[int, str]] = field(default_factory=list)  # (x index, label)


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** (len(f"{int(value)}") - 1)
    return float(((value * 1.05) // step + 1) * step)


def line_chart(title: str, series: list[Series], *, hlines: list[tuple[str, float]] = (), y_label: str = "",
               chart_id: str = "") -> str:
    """An SVG line chart; x is the request number (1-based on the axis)."""
    n = max((len(s.values) for s in series), default=0)
    top = _nice_max(max([v for s in series for v in s.values] + [v for _, v in hlines] + [0]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h - plot_h * v / top

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
           f'height="{HEIGHT}" role="img" aria-label="{escape(title)}" data-chart="{escape(chart_id)}">',
           f'<title>{escape(title)}</title>',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fbfbfb" stroke="#ccc"/>']
    for k in range(5):
        v = top * k / 4
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">'
                   f'{escape(series[0].fmt.format(v) if series else str(v))}</text>')
    ticks = sorted({0, n - 1, *range(0, n, max(1, n // 10))}) if n else []
    for i in ticks:
        out.append(f'<text x="{x(i):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" font-size="11">{i + 1}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle" font-size="11">'
               f'request</text>')
    if y_label:
        out.append(f'<text x="14" y="{TOP + plot_h / 2:.1f}" font-size="11" text-anchor="middle" '
                   f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(y_label)}</text>')
    label_y = -1e9
    for name, v in sorted(hlines, key=lambda h: -h[1]):  # top down, each label at least a line below the last
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#888" '
                   f'stroke-dasharray="5 4" data-line="{escape(name)}" data-value="{v:g}">'
                   f'<title>{escape(name)}: {v:,.0f}</title></line>')
        label_y = max(y(v) + 4, label_y + 13)
        out.append(f'<text x="{LEFT + plot_w + 4}" y="{label_y:.1f}" font-size="11" fill="#555">'
                   f'{escape(name)} {v:,.0f}</text>')
    for s in series:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(s.values))
        values = ",".join(f"{v:g}" for v in s.values)
        out.append(f'<g data-series="{escape(s.name)}" data-values="{values}">')
        if len(s.values) > 1:
            out.append(f'<polyline points="{points}" fill="none" stroke="{s.color}" stroke-width="2"/>')
        for i, v in enumerate(s.values):
            out.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{s.color}">'
                       f'<title>{escape(s.name)}, request {i + 1}: {escape(s.fmt.format(v))}</title></circle>')
        for i, label in s.markers:
            if 0 <= i < len(s.values):
                out.append(f'<path d="M{x(i):.1f},{y(s.values[i]) - 12:.1f} l-5,-8 h10 z" fill="{s.color}" '
                           f'data-marker="{escape(label)}" data-request="{i + 1}"><title>{escape(s.name)}: '
                           f'{escape(label)} before request {i + 1}</title></path>')
        out.append('</g>')
    out.append('</svg>')
    legend = "".join(f'<span class="key"><span class="swatch" style="background:{s.color}"></span>{escape(s.name)}</span>'
                     for s in series)
    return "\n".join(out) + f'\n<div class="legend">{legend}</div>'

