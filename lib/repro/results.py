"""Tidy result tables: published from a notebook as output metadata, collected by the runner."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

META_KEY = "repro"
_PUBLISHED: set[str] = set()  # names of the tables this kernel has published since repro.start
_DISTINCT: dict[str, dict[str, int]] = {}  # each published table's columns: how many distinct values each holds


def published() -> frozenset[str]:
    """Names of the tables published in this run (repro.start clears them)."""
    return frozenset(_PUBLISHED)


def forget_published() -> None:
    """Start a run's record of published tables afresh (called by repro.start)."""
    _PUBLISHED.clear()
    _DISTINCT.clear()


def distinct_values(name: str) -> dict[str, int]:
    """How many distinct values each column of the published table `name` holds (empty if not published): what a
    verdict's measuring table varies."""
    return dict(_DISTINCT.get(name, {}))


def _json_safe(value: Any) -> Any:
    """Convert numpy scalars, NaN and tuples into plain JSON values."""
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_safe(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    return value


def to_records(table: pd.DataFrame | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tidy records (one dict per row) with JSON-safe values."""
    rows = table.to_dict(orient="records") if isinstance(table, pd.DataFrame) else list(table)
    return [{str(k): _json_safe(v) for k, v in row.items()} for row in rows]


MAX_ROWS = 30  # the rendered page shows at most this many rows per table; the JSON keeps every row
HIDDEN_MIME = "application/vnd.repro.table+json"  # carries a table that is published but not shown


def _cell(v: float, digits: int) -> str:
    """One number as a reader scans it: `digits` decimals below 1, `digits` significant digits up to 10^digits, whole
    numbers with separators above; never an exponent."""
    if pd.isna(v):
        return ""
    if abs(v) >= 10**digits:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.{digits}g}"
    text = f"{v:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def rounded(frame: pd.DataFrame, digits: int) -> pd.DataFrame:
    """Floats rounded for display (integers and text untouched)."""
    out = frame.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].map(lambda v: _cell(v, digits))
    return out


def html_table(frame: pd.DataFrame, digits: int = 4) -> str:
    """A compact HTML table without the index: floats rounded, long cells wrapping, decisions coloured."""
    if len(frame) > MAX_ROWS:
        raise ValueError(f"a shown table has {len(frame)} rows (at most {MAX_ROWS}): pivot it, or publish a view")
    shown = rounded(frame.reset_index(drop=True), digits)
    shown.columns.name = None  # a pivot's column-level name would render as an empty first column
    html = shown.to_html(index=False, escape=True, border=0, classes="repro-table", na_rep="")
    for decision in ("held", "not held", "inconclusive"):
        css = "repro-" + decision.replace(" ", "-")
        html = html.replace(f"<td>{decision}</td>", f'<td class="{css}">{decision}</td>')
    return html


def publish(
    name: str,
    table: pd.DataFrame | Sequence[Mapping[str, Any]],
    show: bool = True,
    view: pd.DataFrame | None = None,
    digits: int = 4,
    collapsed: str = "",
) -> pd.DataFrame:
    """Attach `table`'s tidy records to the output under `name`; show `view` (or the table) compactly, or nothing.

    The shown table carries the anchor `table-<name>` (a verdict row's cause links to it); `collapsed` puts it behind
    a disclosure with that summary. Returns the tidy frame. Nothing else reaches the page: call it as a statement,
    not as a cell's last value."""
    from IPython.display import display

    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table))
    payload = {META_KEY: {"table": name, "records": to_records(frame)}}
    _PUBLISHED.add(name)
    _DISTINCT[name] = {str(c): int(frame[c].astype(str).nunique()) for c in frame.columns}
    if show:
        shown = html_table(frame if view is None else view, digits)
        if collapsed:
            shown = f"<details><summary>{html.escape(collapsed)}</summary>{shown}</details>"
        shown = f'<div id="table-{html.escape(name)}">{shown}</div>'
        display({"text/html": shown, "text/plain": f"table {name}"}, raw=True, metadata=payload)
    else:
        display({HIDDEN_MIME: {"table": name, "rows": len(frame)}}, raw=True, metadata=payload)
    return frame


def published_table(metadata: Mapping[str, Any] | None) -> tuple[str, list[dict[str, Any]]] | None:
    """(name, records) of the table an output's display metadata carries, or None."""
    meta = (metadata or {}).get(META_KEY)
    return (meta["table"], meta["records"]) if meta and "table" in meta else None


def collect(notebook: Any) -> dict[str, list[dict[str, Any]]]:
    """All tables published in an executed notebook, by name (a later publish wins)."""
    found = (published_table(output.get("metadata")) for cell in notebook.cells for output in cell.get("outputs", []))
    return dict(table for table in found if table)


TIMING = re.compile(r"second|time|speed|throughput|cached|elapsed", re.IGNORECASE)  # columns a rebuild may change


def table_differences(
    a: Mapping[str, list[dict[str, Any]]], b: Mapping[str, list[dict[str, Any]]], ignore: re.Pattern = TIMING
) -> list[str]:
    """Where two runs' tables differ (timing columns aside): one line per table with missing tables, other row
    counts, or cells that differ (the first such cell named). Empty when the two runs are identical."""
    lines = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            lines.append(f"{name}: only in {'the second' if name not in a else 'the first'} run")
            continue
        rows_a, rows_b = a[name], b[name]
        if len(rows_a) != len(rows_b):
            lines.append(f"{name}: {len(rows_a)} rows vs {len(rows_b)}")
            continue
        diffs = [
            (i, key, ra.get(key), rb.get(key))
            for i, (ra, rb) in enumerate(zip(rows_a, rows_b))
            for key in sorted(set(ra) | set(rb))
            if not ignore.search(key) and ra.get(key) != rb.get(key)
        ]
        if diffs:
            i, key, va, vb = diffs[0]
            lines.append(f"{name}: {len(diffs)} cells differ (first: row {i}, {key}: {va!r} vs {vb!r})")
    return lines


def legacy_verdict(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Publish a chapter's verdict in the form used before repro.verdict: `claim`, `paper`, `ours`, `held` (no interval).

    Kept only until each chapter adopts repro.verdict in its own pass; the front page marks these rows."""
    needed = {"claim", "paper", "ours", "held"}
    for row in rows:
        if missing := needed - set(row):
            raise ValueError(f"verdict row {row.get('claim', row)!r} lacks {sorted(missing)}")
    frame = pd.DataFrame(list(rows))
    frame["held"] = frame["held"].map(lambda h: "yes" if h is True else "no" if h is False else str(h))
    return publish("verdict", frame)


def pivot_view(frame: pd.DataFrame, index: str | list[str], columns: str, values: str) -> pd.DataFrame:
    """A table's reader view: `values` pivoted to one column per `columns` value, rows in their first-seen order."""
    return frame.pivot_table(index=index, columns=columns, values=values, sort=False).reset_index()
