"""A small SVG plotter for the report's charts: axes, ticks, bars, points and legends written
as SVG text directly (no plotting library: a report's charts take milliseconds, not seconds).

Sizes are in inches (72 user units each, as points), text stays text, nothing has an id or
refers outside the element, and the same data always gives the same bytes.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from placeflow.support.text import printable

PT = 72.0
"""User units per inch."""
FONT = '"DejaVu Sans", "Liberation Sans", Arial, sans-serif'
INK = "#263238"
CHAR = 0.075
"""Inches per character of 9-point text (DejaVu Sans, a little generous)."""
TICK = 3.5
"""Tick mark length, points."""


def _f(v: float) -> str:
    """A coordinate: two decimals at most, no trailing zeros."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _e(text: object) -> str:
    """Text for a chart: `printable`, then escaped (see `reporting.page._e`)."""
    return html.escape(printable(str(text)))


def text_width(text: str, size: float = 9.0) -> float:
    """Points a line of text takes at `size` points (an estimate on the generous side)."""
    return len(text) * CHAR * PT * size / 9.0


def nice_ticks(lo: float, hi: float, *, most: int = 8, integer: bool = False) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) from `lo` to `hi`."""
    span = hi - lo
    if span <= 0 or not math.isfinite(span):
        return [lo]
    mag = 10.0 ** math.floor(math.log10(span / most))
    step = 10 * mag
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if integer and (m * mag < 1 or (m == 2.5 and mag < 10)):
            continue
        if span / (m * mag) <= most:
            step = m * mag
            break
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [round(k * step, 10) for k in range(first, last + 1)]


def tick_label(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.4f}".rstrip("0").rstrip(".")


class Chart:
    """One chart: axes of `height` inches in a figure `width` inches wide, with margins
    (inches) around them; x and y limits set before anything is drawn in data units."""

    def __init__(
        self,
        name: str,
        width: float,
        height: float,
        *,
        left: float,
        right: float,
        top: float,
        bottom: float,
    ) -> None:
        self.name = name
        self.w = width * PT
        self.x0, self.x1 = left * PT, self.w - right * PT
        self.y0 = top * PT
        self.y1 = self.y0 + height * PT
        self.h = self.y1 + bottom * PT
        self.xlim = (0.0, 1.0)
        self.ylim = (0.0, 1.0)
        self.parts: list[str] = []

    # --- scales -------------------------------------------------------------------------------

    def x(self, v: float) -> float:
        lo, hi = self.xlim
        return self.x0 + (v - lo) / ((hi - lo) or 1.0) * (self.x1 - self.x0)

    def y(self, v: float) -> float:
        """`ylim` is (bottom, top): give it (high, low) to have the first value on top."""
        lo, hi = self.ylim
        return self.y1 - (v - lo) / ((hi - lo) or 1.0) * (self.y1 - self.y0)

    # --- shapes -------------------------------------------------------------------------------

    def rect(self, x: float, y: float, w: float, h: float, fill: str, extra: str = "") -> None:
        self.parts.append(
            f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(max(w, 0.0))}" height="{_f(max(h, 0.0))}"'
            f' fill="{fill}"{extra}/>'
        )

    def line(
        self, xa: float, ya: float, xb: float, yb: float, stroke: str = INK, width: float = 0.8
    ) -> None:
        self.parts.append(
            f'<line x1="{_f(xa)}" y1="{_f(ya)}" x2="{_f(xb)}" y2="{_f(yb)}" stroke="{stroke}"'
            f' stroke-width="{_f(width)}"/>'
        )

    def text(
        self,
        x: float,
        y: float,
        value: object,
        *,
        anchor: str = "start",
        size: float | None = None,
        bold: bool = False,
        rotate: bool = False,
    ) -> None:
        attrs = f'x="{_f(x)}" y="{_f(y)}" dominant-baseline="central"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if size is not None:
            attrs += f' font-size="{_f(size)}"'
        if bold:
            attrs += ' font-weight="bold"'
        if rotate:
            attrs += f' transform="rotate(-90 {_f(x)} {_f(y)})"'
        self.parts.append(f"<text {attrs}>{_e(value)}</text>")

    def hbar(self, y: float, thickness: float, start: float, end: float, fill: str) -> None:
        """A horizontal bar centred on data `y`, `thickness` in data units, start to end in x."""
        top, bottom = self.y(y - thickness / 2), self.y(y + thickness / 2)
        self.rect(self.x(start), min(top, bottom), self.x(end) - self.x(start),
                  abs(bottom - top), fill)  # fmt: skip

    def vbar(
        self, x: float, width: float, bottom: float, top: float, fill: str, extra: str = ""
    ) -> None:
        self.rect(self.x(x), self.y(top), self.x(x + width) - self.x(x),
                  self.y(bottom) - self.y(top), fill, extra)  # fmt: skip

    # --- axes ---------------------------------------------------------------------------------

    def spines(self) -> None:
        """The left and bottom axis lines (no top or right one)."""
        self.line(self.x0, self.y0, self.x0, self.y1)
        self.line(self.x0, self.y1, self.x1, self.y1)

    def xaxis(
        self, ticks: Sequence[float], label: str, labels: Sequence[str] | None = None
    ) -> None:
        shown = labels if labels is not None else [tick_label(t) for t in ticks]
        for t, name in zip(ticks, shown, strict=True):
            px = self.x(t)
            self.line(px, self.y1, px, self.y1 + TICK)
            self.text(px, self.y1 + TICK + 7, name, anchor="middle")
        if label:
            self.text((self.x0 + self.x1) / 2, self.y1 + TICK + 21, label, anchor="middle")

    def yaxis(
        self, ticks: Sequence[float], label: str, labels: Sequence[str] | None = None
    ) -> None:
        shown = labels if labels is not None else [tick_label(t) for t in ticks]
        for t, name in zip(ticks, shown, strict=True):
            py = self.y(t)
            self.line(self.x0 - TICK, py, self.x0, py)
            self.text(self.x0 - TICK - 2, py, name, anchor="end")
        if label:
            widest = max((text_width(s) for s in shown), default=0.0)
            at = self.x0 - TICK - 6 - widest - 6
            self.text(at, (self.y0 + self.y1) / 2, label, anchor="middle", rotate=True)

    def grid(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        for t in xs:
            self.line(self.x(t), self.y0, self.x(t), self.y1, "#eceff1", 0.5)
        for t in ys:
            self.line(self.x0, self.y(t), self.x1, self.y(t), "#eceff1", 0.5)

    def title(self, text: str) -> None:
        self.text((self.x0 + self.x1) / 2, self.y0 - 12, text, anchor="middle", size=10, bold=True)

    def legend_above(self, entries: Sequence[tuple[str, str]], ncols: int, size: float = 8) -> None:
        """Colour swatches and names in rows of `ncols` above the axes, centred."""
        ncols = max(1, min(ncols, len(entries)))
        col = max((text_width(n, size) for n, _ in entries), default=0.0) + 22
        rows = -(-len(entries) // ncols)
        left = (self.x0 + self.x1) / 2 - col * ncols / 2
        for i, (name, colour) in enumerate(entries):
            r, c = divmod(i, ncols)
            cy = self.y0 - 6 - (rows - 1 - r) * (size + 7)
            cx = left + c * col
            self.rect(cx, cy - 3.5, 12, 7, colour)
            self.text(cx + 16, cy, name, size=size)

    def legend_at(
        self,
        x: float,
        y: float,
        entries: Sequence[tuple[str, str]],
        *,
        size: float = 8,
        dots: bool = False,
    ) -> None:
        """A column of entries from (x, y) down: swatches (or dots) and names."""
        for i, (name, colour) in enumerate(entries):
            cy = y + i * (size + 6)
            if dots:
                self.parts.append(
                    f'<circle cx="{_f(x + 5)}" cy="{_f(cy)}" r="3.2" fill="{colour}"/>'
                )
            else:
                self.rect(x, cy - 3.5, 12, 7, colour)
            self.text(x + 16, cy, name, size=size)

    def svg(self) -> str:
        body = "".join(self.parts)
        return (
            f'<svg class="chart" data-chart="{_e(self.name)}" xmlns="http://www.w3.org/2000/svg"'
            f' width="{_f(self.w)}pt" height="{_f(self.h)}pt"'
            f' viewBox="0 0 {_f(self.w)} {_f(self.h)}"'
            f' font-family=\'{FONT}\' font-size="9" fill="{INK}">{body}</svg>'
        )
