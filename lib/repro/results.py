"""Tidy result tables: published from a notebook as output metadata, collected by the runner."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

META_KEY = "repro"


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


def publish(name: str, table: pd.DataFrame | Sequence[Mapping[str, Any]], show: bool = True) -> pd.DataFrame:
    """Display `table` and attach its records to the output, so the runner files it under `name`."""
    from IPython.display import display

    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table))
    payload = {META_KEY: {"table": name, "records": to_records(frame)}}
    if show:
        display(frame, metadata=payload)
    else:
        display({"text/plain": f"[table {name}: {len(frame)} rows]"}, raw=True, metadata=payload)
    return frame


def collect(notebook: Any) -> dict[str, list[dict[str, Any]]]:
    """All tables published in an executed notebook, by name (a later publish wins)."""
    tables: dict[str, list[dict[str, Any]]] = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            meta = output.get("metadata", {}).get(META_KEY)
            if meta and "table" in meta:
                tables[meta["table"]] = meta["records"]
    return tables


def verdict(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Publish the chapter's verdict: one row per claim with `claim`, `paper`, `ours` and `held`."""
    needed = {"claim", "paper", "ours", "held"}
    for row in rows:
        if missing := needed - set(row):
            raise ValueError(f"verdict row {row.get('claim', row)!r} lacks {sorted(missing)}")
    frame = pd.DataFrame(list(rows))
    frame["held"] = frame["held"].map(lambda h: "yes" if h is True else "no" if h is False else str(h))
    return publish("verdict", frame)
