"""Does a figure read? Its texts (tick labels, axis labels, titles, notes) are not printed over each other, no legend
or note sits on the data, no data point lies outside its axes (where it would be clipped), every labelled line or set
of points has a legend entry where the figure has a legend, no text is cut.

`problems(fig)` draws the figure and lists its defects in words. With REPRO_FIGURE_CHECK=1 in a notebook's kernel (the
test suite sets it), `install()`, called by `repro.page.set_up`, checks every figure the notebook shows: a figure with
a defect fails the cell that drew it (`FigureDefect`, naming the figure and the defect). Otherwise it does nothing.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

ENV_VAR = "REPRO_FIGURE_CHECK"
TOLERANCE_PX = 1.0  # overlaps and overshoots up to this many pixels are rounding, not defects


class FigureDefect(Exception):
    """A figure a notebook shows does not read: texts over each other, a legend on the data, a clipped point."""


# ------------------------------------------------------------------------------------------------------------- names
def _plain(text: str) -> str:
    """A label as a reader sees it: mathtext markup dropped ('$\\mathdefault{2\\times10^{0}}$' -> '2×10^0')."""
    text = text.replace("\\mathdefault", "").replace("\\times", "×").replace("\\minus", "−")
    return " ".join(re.sub(r"[${}\\]", "", text).split())


def figure_name(fig: Any) -> str:
    """The figure as a reader finds it on the page: its title, else its panels' titles, else its first y label."""
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        return repr(_plain(suptitle.get_text()))
    titles = [_plain(ax.get_title()) for ax in fig.axes if ax.get_title()]
    if titles:
        return " / ".join(repr(t) for t in titles[:3]) + (" / …" if len(titles) > 3 else "")
    ylabels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    return f"untitled figure (y: {_plain(ylabels[0])!r})" if ylabels else "untitled figure"


def _axes_name(ax: Any) -> str:
    """One panel of a figure: its title, else its position."""
    title = ax.get_title() or ax.get_title(loc="left") or ax.get_title(loc="right")
    if title:
        title = _plain(title)
        return f"panel {title if len(title) <= 48 else title[:47] + '…'!r}"
    index = ax.figure.axes.index(ax) + 1
    return "the axes" if len(ax.figure.axes) == 1 else f"panel {index}"


# ------------------------------------------------------------------------------------------------------------- boxes
def _corners(text: Any, renderer: Any) -> np.ndarray:
    """The four corners, in display pixels, of the rectangle a text covers, rotated with the text: a rotated label's
    axis-aligned extent is larger than the text and would make neighbours that do not touch seem to overlap."""
    box = text.get_window_extent(renderer)
    angle = text.get_rotation() % 180
    if np.isclose(angle % 90, 0):
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    text.set_rotation(0)  # the text's own width and height; a rotated text turns about its extent's centre
    try:
        flat = text.get_window_extent(renderer)
    finally:
        text.set_rotation(angle)
    w, h = flat.width / 2, flat.height / 2
    theta = np.deg2rad(angle)
    turn = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    local = np.array([[-w, -h], [w, -h], [w, h], [-w, h]])
    return local @ turn.T + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def _box_corners(box: Any) -> np.ndarray:
    return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])


def _overlap(a: np.ndarray, b: np.ndarray, tol: float = TOLERANCE_PX) -> bool:
    """Whether two convex quadrilaterals overlap by more than `tol` pixels (separating-axis test)."""
    if (a[:, 0].max() <= b[:, 0].min() + tol or b[:, 0].max() <= a[:, 0].min() + tol) or (
        a[:, 1].max() <= b[:, 1].min() + tol or b[:, 1].max() <= a[:, 1].min() + tol
    ):
        return False
    for quad in (a, b):
        for edge in (quad[1] - quad[0], quad[3] - quad[0]):
            norm = np.hypot(*edge)
            if norm == 0:
                return False
            axis = np.array([-edge[1], edge[0]]) / norm
            pa, pb = a @ axis, b @ axis
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= tol:
                return False
    return True


# ------------------------------------------------------------------------------------------------------------- texts
def _tick_labels(ax: Any) -> list[tuple[str, str, Any]]:
    """The tick labels drawn on each axis of `ax` (ticks inside the view only), as (axis, label, Text)."""
    out = []
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        if not axis.get_visible():
            continue
        for tick in axis._update_ticks():  # the ticks a draw draws: those within the view interval
            for label in (tick.label1, tick.label2):
                if label.get_visible() and label.get_text().strip():
                    out.append((name, _plain(label.get_text()), label))
    return out


def _texts(fig: Any) -> list[tuple[str, Any]]:
    """Every visible text of the figure outside its legends, described for a message."""
    out: list[tuple[str, Any]] = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        where = _axes_name(ax)
        for axis, label, text in _tick_labels(ax):
            out.append((f"{axis} tick label {label!r} of {where}", text))
        for kind, text in (
            ("title", ax.title),
            ("left title", ax._left_title),
            ("right title", ax._right_title),
            ("x label", ax.xaxis.label),
            ("y label", ax.yaxis.label),
        ):
            if text.get_visible() and text.get_text().strip():
                out.append((f"{kind} {_plain(text.get_text())!r} of {where}", text))
        for text in ax.texts:
            if text.get_visible() and text.get_text().strip():
                out.append((f"note {_plain(text.get_text())!r} in {where}", text))
    for text in fig.texts:
        if text.get_visible() and text.get_text().strip():
            out.append((f"figure text {_plain(text.get_text())!r}", text))
    return out


def _legends(fig: Any) -> list[tuple[str, Any]]:
    out = [(f"legend of {_axes_name(ax)}", ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    out += [("figure legend", legend) for legend in fig.legends]
    return [(name, legend) for name, legend in out if legend.get_visible()]


def _legend_box(legend: Any, renderer: Any) -> Any:
    """The part of a legend that hides what is under it: its frame if drawn, else its entries (without the padding)."""
    box = legend.get_window_extent(renderer)
    if legend.get_frame_on() and legend.get_frame().get_alpha() != 0:
        return box.padded(-TOLERANCE_PX)
    pad = legend.borderpad * legend.prop.get_size_in_points() * legend.figure.dpi / 72
    return box.padded(-pad)


def overlapping_texts(fig: Any, renderer: Any) -> list[str]:
    """Texts printed over each other: tick labels of one axis, labels and titles of neighbouring panels, notes;
    and texts under a legend."""
    texts = _texts(fig)
    quads = [_corners(text, renderer) for _, text in texts]
    found = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            if _overlap(quads[i], quads[j]):
                found.append(f"{texts[i][0]} and {texts[j][0]} print over each other")
    for name, legend in _legends(fig):
        box = _box_corners(_legend_box(legend, renderer))
        for (what, _), quad in zip(texts, quads):
            if _overlap(box, quad):
                found.append(f"the {name} covers the {what}")
    return found


# -------------------------------------------------------------------------------------------------------------- data
def _is_data(artist: Any, ax: Any, transform: Any) -> bool:
    """An artist placed in data coordinates (not a reference line drawn across the axes, like axhline)."""
    return artist.get_visible() and transform == ax.transData


def _line_vertices(line: Any) -> np.ndarray:
    """A line's vertices as drawn (steps expanded), in data coordinates."""
    from matplotlib.cbook import STEP_LOOKUP_MAP

    xy = np.asarray(line.get_xydata(), dtype=float)
    if len(xy) and line.get_drawstyle() in STEP_LOOKUP_MAP and line.get_drawstyle() != "default":
        xy = np.column_stack(STEP_LOOKUP_MAP[line.get_drawstyle()](xy[:, 0], xy[:, 1]))
    return xy


def _no_style(value: Any) -> bool:
    return value in (None, "None", "none", "", " ")


def _errorbar_parts(ax: Any) -> dict[int, str]:
    """What each piece of an errorbar plot is, named by the plot's label: its points, its bars and caps."""
    from matplotlib.container import ErrorbarContainer

    parts = {}
    for container in ax.containers:
        if not isinstance(container, ErrorbarContainer):
            continue
        label = container.get_label()
        name = f" of {label!r}" if label and not label.startswith("_") else ""
        line, caps, bars = container.lines
        if line is not None:
            parts[id(line)] = f"points{name}"
        for piece in [*caps, *bars]:
            parts[id(piece)] = f"error bars{name}"
    return parts


def data_marks(ax: Any) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """What `ax` plots in data coordinates, in display pixels: (what, points, segments as N×2×2) per artist.
    Points are markers, scatter offsets and line vertices; segments are drawn line pieces and error bars. Shaded bands,
    bars and reference lines across the axes are left out."""
    out = []
    errorbars = _errorbar_parts(ax)
    for line in ax.get_lines():
        if not _is_data(line, ax, line.get_transform()):
            continue
        xy = _line_vertices(line)
        if not len(xy):
            continue
        pts = ax.transData.transform(xy)
        label = line.get_label()
        what = f"line {label!r}" if label and not label.startswith("_") else errorbars.get(id(line), "a line")
        segments = np.zeros((0, 2, 2))
        if not _no_style(line.get_linestyle()) and len(pts) > 1:
            segments = np.stack([pts[:-1], pts[1:]], axis=1)
        out.append((what, pts, segments))
    from matplotlib.collections import LineCollection, PathCollection

    for coll in ax.collections:
        if not coll.get_visible():
            continue
        label = coll.get_label()
        named = label and not label.startswith("_")
        if isinstance(coll, PathCollection) and _is_data(coll, ax, coll.get_offset_transform()):
            offsets = np.asarray(coll.get_offsets(), dtype=float)
            if len(offsets):
                what = f"points of {label!r}" if named else "scatter points"
                out.append((what, ax.transData.transform(offsets), np.zeros((0, 2, 2))))
        elif isinstance(coll, LineCollection) and _is_data(coll, ax, coll.get_transform()):
            segs = [np.asarray(s, dtype=float) for s in coll.get_segments() if len(s) >= 2]
            if segs:
                pieces = np.concatenate([np.stack([s[:-1], s[1:]], axis=1) for s in segs])
                shape = pieces.shape
                pieces = ax.transData.transform(pieces.reshape(-1, 2)).reshape(shape)
                what = f"error bars of {label!r}" if named else errorbars.get(id(coll), "error bars")
                out.append((what, pieces.reshape(-1, 2), pieces))
    return [
        (what, pts[np.isfinite(pts).all(1)], segs[np.isfinite(segs).all((1, 2))]) for what, pts, segs in out if len(pts)
    ]


def _segments_cross(segs: np.ndarray, box: Any) -> np.ndarray:
    """Which segments (N×2×2, pixels) pass through `box` (Liang–Barsky clipping)."""
    p0, d = segs[:, 0], segs[:, 1] - segs[:, 0]
    t0, t1 = np.zeros(len(segs)), np.ones(len(segs))
    hit = np.ones(len(segs), dtype=bool)
    for k, lo, hi in ((0, box.x0, box.x1), (1, box.y0, box.y1)):
        for p, q in ((-d[:, k], p0[:, k] - lo), (d[:, k], hi - p0[:, k])):
            parallel = p == 0
            hit &= ~(parallel & (q < 0))
            r = np.divide(q, p, out=np.zeros_like(q), where=~parallel)
            t0 = np.where(~parallel & (p < 0), np.maximum(t0, r), t0)
            t1 = np.where(~parallel & (p > 0), np.minimum(t1, r), t1)
    return hit & (t0 <= t1)


def _inside(pts: np.ndarray, box: Any) -> np.ndarray:
    return (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)


def covered_data(fig: Any, renderer: Any) -> list[str]:
    """Legends and notes placed on plotted points, lines or error bars (of any panel under them)."""
    covers = [(f"the {name}", _legend_box(legend, renderer)) for name, legend in _legends(fig)]
    for ax in fig.axes:
        for text in ax.texts:
            if text.get_visible() and text.get_text().strip():
                extent = text.get_window_extent(renderer).padded(-TOLERANCE_PX)
                covers.append((f"the note {_plain(text.get_text())!r} in {_axes_name(ax)}", extent))
    found = []
    for name, box in covers:
        if box.width <= 0 or box.height <= 0:
            continue
        for ax in fig.axes:
            if not ax.get_visible() or not box.overlaps(ax.bbox):
                continue
            for what, pts, segs in data_marks(ax):
                if _inside(pts, box).any() or (len(segs) and _segments_cross(segs, box).any()):
                    found.append(f"{name} covers {what} in {_axes_name(ax)}")
    return found


def clipped_data(fig: Any) -> list[str]:
    """Points, line vertices and error-bar ends outside their axes' view limits: drawn cut, or not at all."""
    found = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        view = ax.bbox.padded(TOLERANCE_PX)
        for what, pts, _ in data_marks(ax):
            outside = ~_inside(pts, view)
            if outside.any():
                x, y = np.round(ax.transData.inverted().transform(pts[outside][0]), 9) + 0.0  # no -0, no 1e-17
                found.append(
                    f"{what} in {_axes_name(ax)}: a point at (x={x:.4g}, y={y:.4g}) lies outside the view "
                    f"(x {_range(ax.get_xlim())}, y {_range(ax.get_ylim())}){_more(outside.sum())}"
                )
    return found


def missing_entries(fig: Any) -> list[str]:
    """In a figure with a legend, labelled lines and points that no legend names (a method drawn on one panel only,
    left out of a legend taken from another panel)."""
    legends = [legend for _, legend in _legends(fig)]
    if not legends:
        return []
    named = {text.get_text() for legend in legends for text in legend.get_texts()}
    found = []
    for ax in fig.axes:
        for artist in [*ax.get_lines(), *ax.collections]:
            label = artist.get_label()
            if artist.get_visible() and label and not label.startswith("_") and label not in named:
                found.append(f"{label!r} in {_axes_name(ax)} has no legend entry")
    return found


def _range(lim: tuple[float, float]) -> str:
    return f"{min(lim):.4g} to {max(lim):.4g}"


def _more(n: int) -> str:
    return f", and {n - 1} more" if n > 1 else ""


def cut_texts(fig: Any, renderer: Any) -> list[str]:
    """Texts cut: by their own clip box (a note clipped to its axes), or by the figure's edge where the figure is not
    saved with a tight bounding box (a tight box grows to hold every text)."""
    import matplotlib as mpl

    tight = mpl.rcParams["savefig.bbox"] == "tight"
    edge = fig.bbox.padded(TOLERANCE_PX)
    found = []
    for what, text in _texts(fig):
        extent = text.get_window_extent(renderer)
        clip = text.get_clip_box() if text.get_clip_on() else None
        if clip is not None and not _contains(clip.padded(TOLERANCE_PX), extent):
            found.append(f"the {what} is cut by its panel's edge")
        elif not tight and not _contains(edge, extent):
            found.append(f"the {what} is cut by the figure's edge")
    return found


def _contains(outer: Any, inner: Any) -> bool:
    return outer.x0 <= inner.x0 and inner.x1 <= outer.x1 and outer.y0 <= inner.y0 and inner.y1 <= outer.y1


# ------------------------------------------------------------------------------------------------------------ checks
def problems(fig: Any) -> list[str]:
    """Every defect of `fig`, in words, after drawing it as the page will."""
    fig.draw_without_rendering()  # lays the figure out (tight layout, ticks) as a save does
    renderer = fig._get_renderer()
    found = (
        overlapping_texts(fig, renderer)
        + covered_data(fig, renderer)
        + clipped_data(fig)
        + missing_entries(fig)
        + cut_texts(fig, renderer)
    )
    return list(dict.fromkeys(found))


_PENDING: list[str] = []  # defects of figures shown (or glued) during the current cell, raised at its end


def _record(fig: Any) -> None:
    found = problems(fig)
    if found:
        _PENDING.append(f"figure {figure_name(fig)}: " + "; ".join(found))


def check_cell() -> None:
    """Run at the end of every cell under the check: check the figures still open (the inline backend shows them
    after the cell), then raise FigureDefect for those and for any figure shown or glued during the cell."""
    import matplotlib.pyplot as plt

    for n in plt.get_fignums():
        _record(plt.figure(n))
    if _PENDING:
        report = " | ".join(dict.fromkeys(_PENDING))
        _PENDING.clear()
        raise FigureDefect(report)


class _CheckAtCellEnd:
    """An IPython AST transformer that ends every cell with `check_cell()`: a defect fails the cell that drew the
    figure (an error in a post-execute callback or a display formatter would only be printed)."""

    def visit(self, node: Any) -> Any:
        import ast

        call = ast.parse("__import__('repro.figure_checks').figure_checks.check_cell()").body
        node.body = [*node.body, *call]
        return ast.fix_missing_locations(node)


def _checked_print_figure(print_figure: Any) -> Any:
    """`FigureCanvasBase.print_figure`, through which every shown, glued or saved figure passes, recording defects."""

    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        _record(self.figure)
        return print_figure(self, *args, **kwargs)

    checked.__wrapped__ = print_figure
    checked._repro_checked = True
    return checked


def install(shell: Any = None) -> None:
    """Under REPRO_FIGURE_CHECK=1 in IPython (a notebook's kernel): check every figure the page shows, whether by
    `plt.show()`, at the end of its cell, or glued, and fail the cell that drew a figure with a defect. Anywhere
    else, or without the variable: nothing."""
    if os.environ.get(ENV_VAR) != "1":
        return
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return
        shell = get_ipython()
    if shell is None:
        return
    from matplotlib.backend_bases import FigureCanvasBase

    if not getattr(FigureCanvasBase.print_figure, "_repro_checked", False):
        FigureCanvasBase.print_figure = _checked_print_figure(FigureCanvasBase.print_figure)
    if not any(isinstance(t, _CheckAtCellEnd) for t in shell.ast_transformers):
        shell.ast_transformers.append(_CheckAtCellEnd())
