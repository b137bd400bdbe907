"""Line charts as inline SVG, written by hand: the HTML report must open offline, with nothing to load.

One function, :func:`line_chart`: series of (x, y) points, horizontal reference lines (the window,
thresholds) and markers (compactions). Series often coincide (a policy that changed nothing draws the
``none`` line again): each has its own dash pattern and point shape besides its colour, so a line
under another still shows, and the legend draws each as it is drawn. The chart scales to the page's
width (its ``viewBox`` is fixed, its width is the column's). Every element carries ``data-*`` attributes with the exact
values it draws, and a ``<title>`` (the browser's tooltip), so that the figures can be read back and
checked against ``ctxkit simulate --json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

PALETTE = ("#555555", "#c0392b", "#2471a3", "#1e8449", "#b9770e", "#7d3c98", "#117a65", "#a04000")
#: One per series, in order: solid, then patterns whose gaps show a line drawn under them
DASHES = ("", "9 5", "3 4", "14 5 3 5", "2 7", "18 7", "7 3 2 3 2 3", "5 10")
SHAPES = ("circle", "square", "triangle", "diamond", "cross", "down", "circle", "square")
WIDTH, HEIGHT = 1068, 360
LEFT, RIGHT, TOP, BOTTOM = 78, 170, 16, 36


@dataclass
class Series:
    name: str
    values: list[float]  # y per x index (x = request number)
    color: str = PALETTE[0]
    fmt: str = "{:,.0f}"
    markers: list[tuple[int, str]] = field(default_factory=list)  # (x index, label)
    dash: str = ""  # the stroke-dasharray of its line ("": solid)
    shape: str = "circle"  # its points: circle, square, triangle, down, diamond or cross


def styled(k: int) -> dict[str, str]:
    """The colour, dash pattern and point shape of the ``k``-th series of a chart."""
    return {"color": PALETTE[k % len(PALETTE)], "dash": DASHES[k % len(DASHES)], "shape": SHAPES[k % len(SHAPES)]}


def _point(shape: str, cx: float, cy: float, color: str, size: float = 3.2) -> str:
    """A point of a series drawn as its shape (hollow shapes would vanish under a solid one: all are filled)."""
    r = size
    if shape == "square":
        return f'<rect x="{cx - r:.1f}" y="{cy - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" fill="{color}"'
    if shape in ("triangle", "down"):
        k = -1 if shape == "triangle" else 1
        return (f'<path d="M{cx:.1f},{cy + k * 1.3 * r:.1f} l{-1.2 * r:.1f},{-k * 2.2 * r:.1f} h{2.4 * r:.1f} z" '
                f'fill="{color}"')
    if shape == "diamond":
        return f'<path d="M{cx:.1f},{cy - 1.4 * r:.1f} l{1.4 * r:.1f},{1.4 * r:.1f} l{-1.4 * r:.1f},{1.4 * r:.1f} ' \
               f'l{-1.4 * r:.1f},{-1.4 * r:.1f} z" fill="{color}"'
    if shape == "cross":
        return (f'<path d="M{cx - r:.1f},{cy - r:.1f} L{cx + r:.1f},{cy + r:.1f} M{cx - r:.1f},{cy + r:.1f} '
                f'L{cx + r:.1f},{cy - r:.1f}" stroke="{color}" stroke-width="2" fill="none"')
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="{color}"'


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

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
           f'preserveAspectRatio="xMinYMin meet" role="img" aria-label="{escape(title)}" '
           f'data-chart="{escape(chart_id)}">',
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
    # each series' shapes at its own points (series k at k, k + m, ...): where lines coincide, every one still
    # shows its shapes; on a long session a shape every few points keeps the line readable
    every = max(len(series), n // 40, 1)
    for k, s in enumerate(series):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(s.values))
        values = ",".join(f"{v:g}" for v in s.values)
        out.append(f'<g data-series="{escape(s.name)}" data-values="{values}" data-dash="{s.dash}" '
                   f'data-shape="{s.shape}">')
        if len(s.values) > 1:
            dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
            out.append(f'<polyline points="{points}" fill="none" stroke="{s.color}" stroke-width="2"{dash}/>')
        for i, v in enumerate(s.values):
            big = (i - k) % every == 0
            mark = ' class="mark"' if big else ""
            out.append(f'{_point(s.shape, x(i), y(v), s.color, 3.6 if big else 1.4)}{mark}>'
                       f'<title>{escape(s.name)}, request {i + 1}: {escape(s.fmt.format(v))}</title>'
                       f'</{_tag(s.shape)}>')
        for i, label in s.markers:
            if 0 <= i < len(s.values):
                out.append(f'<path d="M{x(i):.1f},{y(s.values[i]) - 12:.1f} l-5,-8 h10 z" fill="{s.color}" '
                           f'data-marker="{escape(label)}" data-request="{i + 1}"><title>{escape(s.name)}: '
                           f'{escape(label)} before request {i + 1}</title></path>')
        out.append('</g>')
    out.append('</svg>')
    legend = "".join(f'<span class="key"><svg width="34" height="12" viewBox="0 0 34 12" aria-hidden="true">'
                     f'<line x1="1" y1="6" x2="33" y2="6" stroke="{s.color}" stroke-width="2"'
                     f'{f" stroke-dasharray={chr(34)}{s.dash}{chr(34)}" if s.dash else ""}/>'
                     f'{_point(s.shape, 17, 6, s.color)}/></svg> {escape(s.name)}</span>' for s in series)
    return "\n".join(out) + f'\n<div class="legend">{legend}</div>'



def _tag(shape: str) -> str:
    """The SVG element :func:`_point` opens for ``shape``."""
    return {"square": "rect", "circle": "circle"}.get(shape, "path")
