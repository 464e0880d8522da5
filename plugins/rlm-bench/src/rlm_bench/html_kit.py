"""What the self-contained HTML pages of rlm-bench share (``html_report``: one or more benchmarks; ``sweep.report``:
a sweep): escaping, number formats, colours, the page's CSS and head (a Content-Security-Policy forbidding any
fetch), and the axes of the SVG charts drawn in Python.
"""

from __future__ import annotations

import html
import json
from typing import Any, Callable, Optional

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
WIDTH, HEIGHT = 640, 320
MARGIN = {"left": 70, "right": 20, "top": 20, "bottom": 50}
#: No script, no font, no remote image: nothing on the page can fetch anything.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef2f7; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.answer { max-width: 360px; white-space: pre-wrap; word-break: break-word; }
.charts { display: flex; flex-wrap: wrap; gap: 24px; }
figure { margin: 0; border: 1px solid #ddd; padding: 8px; background: #fafafa; }
figcaption { font-weight: 600; margin-bottom: 4px; }
.legend span { display: inline-block; margin-right: 14px; font-size: 13px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }
.meta { color: #555; font-size: 13px; }
.status-error { color: #b00; } .status-incomplete { color: #a60; }
"""


def e(value: Any) -> str:
    """``value`` as escaped HTML text (None as a dash; non-strings as JSON)."""
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return html.escape(text, quote=True)


def pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def num(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    step = (high - low) / (count - 1)
    return [low + i * step for i in range(count)]


def tick_label(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value / 1000:.0f}k" if abs(value) >= 10_000 else f"{value / 1000:.1f}k"
    if abs(value) >= 10 or value == 0:
        return f"{value:.0f}"
    return f"{value:.2g}" if abs(value) < 0.01 else f"{value:.2f}"


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def legend(labels: Any) -> str:
    return '<div class="legend">' + "".join(f'<span><i style="background:{color(i)}"></i>{e(label)}</span>'
                                            for i, label in enumerate(labels)) + "</div>"


def plot_size() -> tuple[int, int]:
    return WIDTH - MARGIN["left"] - MARGIN["right"], HEIGHT - MARGIN["top"] - MARGIN["bottom"]


def y_axis(py: Callable[[float], float], y_lo: float, y_hi: float, y_label: str,
           y_format: Callable[[float], str] = tick_label) -> list[str]:
    """The plot frame, horizontal grid lines with their labels and the rotated y label."""
    plot_w, plot_h = plot_size()
    parts = [f'<rect x="{MARGIN["left"]}" y="{MARGIN["top"]}" width="{plot_w}" height="{plot_h}" fill="#fff" '
             'stroke="#999"/>']
    for t in ticks(y_lo, y_hi):
        y = py(t)
        parts.append(f'<line class="grid" x1="{MARGIN["left"]}" x2="{MARGIN["left"] + plot_w}" y1="{y:.1f}" '
                     f'y2="{y:.1f}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{MARGIN["left"] - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
                     f"{e(y_format(t))}</text>")
    parts.append(f'<text x="14" y="{MARGIN["top"] + plot_h / 2}" font-size="12" text-anchor="middle" '
                 f'transform="rotate(-90 14 {MARGIN["top"] + plot_h / 2})">{e(y_label)}</text>')
    return parts


def x_label(text: str) -> str:
    plot_w, _ = plot_size()
    return (f'<text x="{MARGIN["left"] + plot_w / 2}" y="{HEIGHT - 8}" font-size="12" text-anchor="middle">'
            f"{e(text)}</text>")


def svg_open(chart_id: str, title: str) -> str:
    return (f'<svg id="{e(chart_id)}" class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'role="img" aria-label="{e(title)}">')


def page(title: str, body: str, css: str = "") -> str:
    """A whole self-contained page."""
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>{e(title)}</title><style>{CSS}{css}</style></head><body>",
        f"<h1>{e(title)}</h1>", body, "</body></html>\n",
    ])
