"""Reading-group session guides: one per chapter, appended to the chapter's page when the book is staged.

A guide's source is `book/sessions/<notebook>.yml`: what to read first, a 60-90-minute plan, discussion questions and
exercises. Questions quote the chapter's own results through placeholders, resolved against the run the page shows,
so no number in a guide is typed:

- `{row: text}`: the verdict row whose claim contains `text` (its estimate, interval and decision);
- `{paper: text}`: that row's paper value;
- `{table: name}`: a table the run published (checked to exist).

An exercise is one runner command that changes one parameter at `smoke` (`override`), the prediction it asks for,
and the table that answers it (`answer_in`); the tests run each one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .paths import project_root

PLACEHOLDER = re.compile(r"\{(row|paper|table):\s*([^{}]+?)\s*\}")
KEYS = {"read_first", "plan", "questions", "exercises"}
HEADING = "Reading-group session"


class SessionError(ValueError):
    """A guide that does not match its chapter's results (a claim or table that the run did not publish)."""


def spec_path(stem: str) -> Path:
    """Where the guide of notebook `stem` is written."""
    return project_root() / "book" / "sessions" / f"{stem}.yml"


def load(stem: str) -> dict[str, Any] | None:
    """The guide of notebook `stem` (None when it has none), checked for its keys."""
    path = spec_path(stem)
    if not path.exists():
        return None
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(spec, dict) or set(spec) != KEYS:
        raise SessionError(f"{path.name}: a guide has exactly the keys {sorted(KEYS)}")
    for ex in spec["exercises"]:
        if set(ex) != {"predict", "override", "answer_in"} or not isinstance(ex["override"], dict):
            raise SessionError(f"{path.name}: an exercise has predict, override (a mapping) and answer_in")
    return spec


def find_row(result: dict[str, Any], text: str) -> dict[str, Any]:
    """The first verdict row whose claim contains `text`."""
    for row in result["tables"].get("verdict", []):
        if text in row["claim"]:
            return row
    raise SessionError(f"{result['notebook']}: no verdict row's claim contains {text!r}")


def _number(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def _fill(text: str, result: dict[str, Any]) -> str:
    """`text` with every placeholder replaced by the run's value."""

    def one(match: re.Match[str]) -> str:
        kind, arg = match.group(1), match.group(2)
        if kind == "table":
            if arg not in result["tables"]:
                raise SessionError(f"{result['notebook']}: the run published no table {arg!r}")
            return f"`{arg}`"
        row = find_row(result, arg)
        if kind == "paper":
            return _number(row["paper"])
        return f"{_number(row['ours'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}], *{row['decision']}*"

    return PLACEHOLDER.sub(one, text)


def command(stem: str, override: dict[str, Any]) -> str:
    """The runner command of an exercise."""
    args = " ".join(f"-p {name} {_shell(value)}" for name, value in override.items())
    return f".venv/bin/python -m repro run {stem} --profile smoke {args}".rstrip()


def _shell(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
    return f"'{text}'" if any(c in text for c in " []{},") else text


def render(stem: str, result: dict[str, Any]) -> str | None:
    """The guide of `stem` as markdown, its placeholders filled from `result` (None when it has no guide)."""
    spec = load(stem)
    if spec is None:
        return None
    out = [
        f"## {HEADING}",
        "",
        "A plan for one 60-90-minute session of a reading group on this chapter. The numbers in the questions are "
        "this page's own (they change when the chapter is re-run). Preparing and running a session: "
        "{doc}`../teaching`.",
        "",
        "**Read first.**",
        "",
        *(f"- {_fill(item, result)}" for item in spec["read_first"]),
        "",
        "**Plan.**",
        "",
        "| minutes | what |",
        "|---|---|",
        *(f"| {step['minutes']} | {_fill(step['what'], result)} |" for step in spec["plan"]),
        "",
        "**Questions for discussion.**",
        "",
        *(f"{i}. {_fill(q, result)}" for i, q in enumerate(spec["questions"], 1)),
        "",
        "**Exercises.** Write down a prediction first, then run the command (a minute or two at `smoke`) and read "
        "the answer in the table named.",
        "",
    ]
    for i, ex in enumerate(spec["exercises"], 1):
        out += [
            f"{i}. {_fill(ex['predict'], result)} Answer: table {_fill('{table: ' + ex['answer_in'] + '}', result)}.",
            "",
            "   ```bash",
            f"   {command(stem, ex['override'])}",
            "   ```",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"
