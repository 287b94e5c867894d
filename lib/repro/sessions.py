"""Reading-group session guides: one per chapter, appended to the chapter's page when the book is staged.

A guide's source is `book/sessions/<notebook>.yml`: what to read first, a 60-90-minute plan, discussion questions with
teacher notes, and exercises. Every number in a guide is glued from a run through placeholders, so none is typed:

- `{row: text}`: the verdict row whose claim contains `text` (its estimate, interval and decision);
- `{rows: text}`: every verdict row whose claim contains `text`, each after the rest of its claim (a claim judged on
  groups of pairs has a row per group at `default`, one at `smoke`);
- `{paper: text}`: that row's paper value;
- `{table: name}`: a table the run published (checked to exist);
- `{param: name}`: a parameter of the run;
- `{value: TABLE.COLUMN | KEY=VALUE; ...}`: the one cell of COLUMN in the rows of TABLE that match every filter
  (COLUMN may be a pandas expression over columns, such as `abs(apfd - paper)`, or a pattern such as `min_*pct`);
- `{interval: TABLE.COLUMN | ...}`: that cell with its interval (`ci_low`/`ci_high`, or `COLUMN_low`/`COLUMN_high`);
- `{min: ...}`, `{max: ...}`, `{mean: ...}`, `{median: ...}`: COLUMN reduced over the matching rows;
- `{argmax: TABLE.COLUMN -> OTHER | ...}`, `{argmin: ...}`: OTHER at the matching row where COLUMN is largest
  (smallest).

A question is `ask` (what the group discusses) and `notes` (the teacher's answer, glued from the same run). An
exercise is one runner command that changes one parameter at `smoke` (`override`), the prediction it asks for
(`predict`), the table that answers it (`answer_in`) and the answer itself (`expect`: a text whose placeholders read
that table), shown as the smoke runs give it before and after the change; `noise` (optional, filled from the run
after the change) says why that smoke answer is too noisy to read a direction into.

The questions and notes are filled from the run the page shows; an exercise's prediction and answer from smoke runs
(`exercise_runs`), which `python -m repro book` executes through the runner's cache and the tests check against a
fresh execution.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from .paths import project_root
from .results import _cell

KINDS = (
    "rows",
    "row",
    "paper",
    "table",
    "param",
    "value",
    "interval",
    "min",
    "max",
    "mean",
    "median",
    "argmax",
    "argmin",
)
PLACEHOLDER = re.compile(r"\{(" + "|".join(KINDS) + r"):\s*([^{}]+?)\s*\}")
KEYS = {"session_minutes", "read_first", "plan", "questions", "exercises"}
EXERCISE_KEYS = {"predict", "override", "answer_in", "expect"}
HEADING = "Reading-group session"
SESSION_MINUTES = (60, 90)  # the length of one reading-group session
MINUTES_PER_QUESTION = 3  # the least a plan leaves for each discussion question
EXERCISE_PROFILE = "smoke"

Runner = Callable[[str, dict[str, Any]], dict[str, Any]]


class SessionError(ValueError):
    """A guide that does not match its chapter's results (a claim, table, column or row the run did not publish)."""


def spec_path(stem: str) -> Path:
    """Where the guide of notebook `stem` is written."""
    return project_root() / "book" / "sessions" / f"{stem}.yml"


def load(stem: str) -> dict[str, Any] | None:
    """The guide of notebook `stem` (None when it has none), checked for its keys and its plan."""
    path = spec_path(stem)
    if not path.exists():
        return None
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(spec, dict) or set(spec) != KEYS:
        raise SessionError(f"{path.name}: a guide has exactly the keys {sorted(KEYS)}")
    for step in spec["plan"]:
        if not {"minutes", "what"} <= set(step) <= {"minutes", "what", "discussion"}:
            raise SessionError(f"{path.name}: a plan step has minutes, what and optionally discussion: true")
    for q in spec["questions"]:
        if not isinstance(q, dict) or set(q) != {"ask", "notes"}:
            raise SessionError(f"{path.name}: a question has ask and notes (the teacher's answer)")
    for ex in spec["exercises"]:
        if not EXERCISE_KEYS <= set(ex) <= EXERCISE_KEYS | {"noise"} or not isinstance(ex["override"], dict):
            raise SessionError(
                f"{path.name}: an exercise has predict, override (a mapping), answer_in, expect and optionally noise"
            )
        if not isinstance(ex["expect"], str) and set(ex["expect"]) != {"before", "after"}:
            raise SessionError(f"{path.name}: an exercise's expect is a text, or before and after texts")
    check_plan(spec, path.name)
    return spec


def discussion_minutes(spec: dict[str, Any]) -> int:
    """The minutes a plan gives its questions (the steps marked `discussion: true`)."""
    return sum(step["minutes"] for step in spec["plan"] if step.get("discussion"))


def check_plan(spec: dict[str, Any], name: str) -> None:
    """A plan fills its session (60-90 minutes, its steps adding up to `session_minutes`) and leaves at least
    `MINUTES_PER_QUESTION` minutes of discussion for each question."""
    length, planned = spec["session_minutes"], sum(step["minutes"] for step in spec["plan"])
    if not SESSION_MINUTES[0] <= length <= SESSION_MINUTES[1]:
        raise SessionError(f"{name}: a session lasts {SESSION_MINUTES[0]}-{SESSION_MINUTES[1]} minutes, not {length}")
    if planned != length:
        raise SessionError(f"{name}: the plan's steps add up to {planned} minutes, the session lasts {length}")
    needed = MINUTES_PER_QUESTION * len(spec["questions"])
    if discussion_minutes(spec) < needed:
        raise SessionError(
            f"{name}: the plan gives its {len(spec['questions'])} questions {discussion_minutes(spec)} minutes "
            f"(steps marked discussion: true); they need at least {needed}"
        )


def find_rows(result: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """Every verdict row whose claim contains `text`, in the table's order (at least one)."""
    rows = [row for row in result["tables"].get("verdict", []) if text in row["claim"]]
    if not rows:
        raise SessionError(f"{result['notebook']}: no verdict row's claim contains {text!r}")
    return rows


def find_row(result: dict[str, Any], text: str) -> dict[str, Any]:
    """The first verdict row whose claim contains `text`."""
    return find_rows(result, text)[0]


def _row_text(row: dict[str, Any], statistic: bool = True) -> str:
    """A verdict row's estimate, interval, statistic (unless `statistic` is false) and decision, as a guide quotes it."""
    named = f" ({row['statistic']})" if statistic and row.get("statistic") else ""
    return f"{_number(row['ours'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}]{named}, *{row['decision']}*"


def _number(x: Any) -> str:
    """A value as prose quotes it: three significant digits (as the page's tables round, never an exponent above
    1e-3), lists joined."""
    if isinstance(x, bool) or x is None:
        return "n/a" if x is None else str(x).lower()
    if isinstance(x, float):
        if math.isnan(x):
            return "n/a"
        return f"{x:.2g}" if 0 < abs(x) < 1e-3 else _cell(x, 3)  # a learning rate keeps its digits
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 10_000 else str(x)
    if isinstance(x, (list, tuple)):
        return ", ".join(_number(v) for v in x)
    return str(x)


def _matches(cell: Any, wanted: Any) -> bool:
    if isinstance(cell, (int, float)) and not isinstance(cell, bool) and not isinstance(wanted, bool):
        try:
            return math.isclose(float(cell), float(wanted), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return cell == wanted or str(cell) == str(wanted)


def _rows(result: dict[str, Any], arg: str) -> tuple[pd.DataFrame, str, str | None]:
    """The rows of a table placeholder `TABLE.EXPR [-> OTHER] [| KEY=VALUE; ...]` that match its filters."""
    what, _, filters = arg.partition("|")
    what, _, other = what.partition("->")
    name, dot, expr = what.strip().partition(".")
    if not dot or not expr.strip():
        raise SessionError(f"{result['notebook']}: {arg!r} names no column (TABLE.COLUMN)")
    if name not in result["tables"]:
        raise SessionError(f"{result['notebook']}: the run published no table {name!r}")
    frame = pd.DataFrame(result["tables"][name])
    for pair in filter(None, (p.strip() for p in filters.split(";"))):
        key, eq, text = pair.partition("=")
        key = key.strip()
        if not eq or key not in frame.columns:
            raise SessionError(f"{result['notebook']}: table {name!r} has no column {key!r} to filter on ({arg!r})")
        wanted = yaml.safe_load(text.strip())
        frame = frame[[_matches(cell, wanted) for cell in frame[key]]]
    if frame.empty:
        raise SessionError(f"{result['notebook']}: no row of table {name!r} matches {arg!r}")
    return frame, expr.strip(), other.strip() or None


def _column(frame: pd.DataFrame, expr: str, where: str) -> pd.Series:
    """Column `expr` of `frame`: a column's name (in backticks when it has spaces), a pattern matching exactly one
    column, or a pandas expression."""
    if expr.strip("`") in frame.columns:
        return frame[expr.strip("`")]
    if "*" in expr and not any(c in expr for c in " ()"):  # a pattern, not a product
        found = [c for c in frame.columns if fnmatch.fnmatchcase(c, expr)]
        if len(found) != 1:
            raise SessionError(f"{where}: {expr!r} matches {len(found)} columns, not one")
        return frame[found[0]]
    try:
        return frame.eval(expr, engine="python")
    except Exception as err:  # an unknown column or a malformed expression: one line naming the placeholder
        raise SessionError(f"{where}: cannot evaluate {expr!r} ({type(err).__name__}: {err})") from None


def _one(frame: pd.DataFrame, where: str) -> None:
    if len(frame) != 1:
        raise SessionError(f"{where}: {len(frame)} rows match, not one (add a filter, or reduce with min/max/mean)")


def _interval(frame: pd.DataFrame, expr: str, where: str) -> str:
    """The cell of column `expr` with its interval: `ci_low`/`ci_high`, or the column's name (or its first word:
    `mean ratio` has `mean low`) followed by `_low`/`_high` or ` low`/` high`."""
    name = expr.strip("`")
    if name not in frame.columns:
        raise SessionError(f"{where}: an interval reads a column, and there is no column {name!r}")
    stems = (name, name.split()[0])
    pairs = [("ci_low", "ci_high")] + [(f"{s}{sep}low", f"{s}{sep}high") for s in stems for sep in ("_", " ")]
    for low, high in pairs:
        if low in frame.columns and high in frame.columns:
            row = frame.iloc[0]
            return f"{_number(_plain(row[name]))} [{_number(_plain(row[low]))}, {_number(_plain(row[high]))}]"
    raise SessionError(f"{where}: no interval columns beside {name!r}")


def _plain(x: Any) -> Any:
    """A pandas or numpy scalar as the plain Python value a results JSON holds."""
    return x.item() if hasattr(x, "item") else x


def lookup(result: dict[str, Any], kind: str, arg: str) -> str:
    """The text that placeholder `{kind: arg}` stands for in `result`."""
    where = f"{result['notebook']}: {{{kind}: {arg}}}"
    if kind == "table":
        if arg not in result["tables"]:
            raise SessionError(f"{result['notebook']}: the run published no table {arg!r}")
        return f"`{arg}`"
    if kind == "param":
        if arg not in result["params"]:
            raise SessionError(f"{where}: the run has no parameter {arg!r}")
        return _number(result["params"][arg])
    if kind == "rows":  # a statistic shared by every row is named once, at the end
        rows = find_rows(result, arg)
        shared = {row.get("statistic") or "" for row in rows}
        rest = lambda row: row["claim"].split(arg, 1)[1].strip(" ,") or "as a whole"
        text = "; ".join(f"{rest(row)}: {_row_text(row, len(shared) > 1)}" for row in rows)
        return text + (f" ({shared.pop()})" if len(shared) == 1 and "" not in shared else "")
    if kind in ("row", "paper"):
        row = find_row(result, arg)
        return _number(row["paper"]) if kind == "paper" else _row_text(row)
    frame, expr, other = _rows(result, arg)
    if kind == "interval":
        _one(frame, where)
        return _interval(frame, expr, where)
    values = pd.to_numeric(_column(frame, expr, where), errors="coerce") if kind != "value" else None
    if kind == "value":
        _one(frame, where)
        return _number(_plain(_column(frame, expr, where).iloc[0]))
    if values.isna().all():
        raise SessionError(f"{where}: no number to reduce")
    if kind in ("argmax", "argmin"):
        other = (other or "").strip("`")
        if other not in frame.columns:
            raise SessionError(f"{where}: name the column to report after '->'")
        at = values.idxmax() if kind == "argmax" else values.idxmin()
        return _number(_plain(frame.loc[at, other]))
    return _number(float(getattr(values, kind)()))


def _fill(text: str, result: dict[str, Any]) -> str:
    """`text` with every placeholder replaced by the run's value."""
    return PLACEHOLDER.sub(lambda m: lookup(result, m.group(1), m.group(2)), text)


def placeholders(text: str) -> list[tuple[str, str]]:
    """The placeholders of `text`, as (kind, argument) pairs."""
    return [(m.group(1), m.group(2)) for m in PLACEHOLDER.finditer(text)]


def command(stem: str, override: dict[str, Any]) -> str:
    """The runner command of an exercise."""
    args = " ".join(f"-p {name} {_shell(value)}" for name, value in override.items())
    return f".venv/bin/python -m repro run {stem} --profile {EXERCISE_PROFILE} {args}".rstrip()


def _shell(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
    return f"'{text}'" if any(c in text for c in " []{},") else text


def _run_smoke(stem: str, override: dict[str, Any]) -> dict[str, Any]:
    from .runner import run  # the runner imports this module

    return run(stem, EXERCISE_PROFILE, override)


def exercise_runs(stem: str, runner: Runner | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The smoke run an exercise starts from and each exercise's smoke run, executed by `runner` (default: the
    runner's `run`, cached). The plain run comes last: `run` copies each run it returns into runs/smoke/, which then
    holds the chapter's own smoke run again (the book stages it from there when it is built at smoke)."""
    spec = load(stem) or {"exercises": []}
    runner = runner or _run_smoke
    changed = [runner(stem, ex["override"]) for ex in spec["exercises"]]
    return runner(stem, {}), changed


def expect_texts(ex: dict[str, Any]) -> tuple[str, str]:
    """An exercise's answer before and after its change, with placeholders (one text for both, or one each: a
    sweep value the change adds has no row before it)."""
    expect = ex["expect"]
    return (expect, expect) if isinstance(expect, str) else (expect["before"], expect["after"])


def expected_answer(ex: dict[str, Any], baseline: dict[str, Any], changed: dict[str, Any]) -> tuple[str, str]:
    """An exercise's answer at smoke: its `expect` filled from the run before the change and from the run after it."""
    before, after = expect_texts(ex)
    return _fill(before, baseline), _fill(after, changed)


def _dropdown(title: str, lines: list[str], indent: str = "") -> list[str]:
    """A collapsed admonition (the reader opens it), each line indented by `indent`."""
    body = [f":::{{admonition}} {title}", ":class: dropdown", "", *lines, ":::"]
    return [f"{indent}{line}" if line else "" for line in body]


def render(stem: str, result: dict[str, Any], runner: Runner | None = None) -> str | None:
    """The guide of `stem` as markdown, its placeholders filled from `result` and its exercises' answers from smoke
    runs (`exercise_runs`; `runner` executes one); None when the chapter has no guide."""
    spec = load(stem)
    if spec is None:
        return None
    baseline, changed = exercise_runs(stem, runner)
    out = [
        f"## {HEADING}",
        "",
        f"A plan for one {spec['session_minutes']}-minute session of a reading group on this chapter. The numbers in "
        "the questions and the teacher notes are "
        f"this page's own (the `{result['profile']}` run; they change when the chapter is re-run). Preparing and "
        "running a session: {doc}`../teaching`.",
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
        f"| **{sum(step['minutes'] for step in spec['plan'])}** | in all, {discussion_minutes(spec)} of them for the "
        "questions |",
        "",
        "**Questions for discussion.**",
        "",
        *(f"{i}. {_fill(q['ask'], result)}" for i, q in enumerate(spec["questions"], 1)),
        "",
        *_dropdown(
            "Teacher notes",
            [f"{i}. {_fill(q['notes'], result)}" for i, q in enumerate(spec["questions"], 1)],
        ),
        "",
        f"**Exercises.** Write down a prediction first, then run the command (a minute or two at `{EXERCISE_PROFILE}`) "
        f"and read the answer in the table named (`.venv/bin/python -m repro show {stem} TABLE --profile "
        f"{EXERCISE_PROFILE}` prints it). The expected answers are `{EXERCISE_PROFILE}` runs' (tiny models, "
        "few items), computed when this page was built: the table before the change and after it. Where one is "
        "marked *noise*, the change is within what the smoke run cannot resolve; read the direction at `default`.",
        "",
    ]
    for i, (ex, after) in enumerate(zip(spec["exercises"], changed, strict=True), 1):
        before_text, after_text = expected_answer(ex, baseline, after)
        answer = [
            f"Before the change: {before_text}",
            "",
            f"After it: {after_text}",
        ]
        if ex.get("noise"):
            answer += ["", f"*Noise at {EXERCISE_PROFILE}*: {_fill(ex['noise'], after)}"]
        out += [
            f"{i}. {_fill(ex['predict'], baseline)} Answer: table {lookup(after, 'table', ex['answer_in'])}.",
            "",
            "   ```bash",
            f"   {command(stem, ex['override'])}",
            "   ```",
            "",
            *_dropdown(f"Expected answer ({EXERCISE_PROFILE})", answer, indent="   "),
            "",
        ]
    return "\n".join(out).rstrip() + "\n"
