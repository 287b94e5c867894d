"""The figure check (`repro.figure_checks`): each detector on small figures made to have, or not have, its defect; the
hook that fails a notebook cell drawing a figure with a defect; and the chapters' figures on data shaped like the
runs whose figures had defects (the smoke runs themselves are checked in their kernels: conftest sets
REPRO_FIGURE_CHECK=1)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from repro import figure_checks as fc
from repro import page


@pytest.fixture(autouse=True)
def page_style():
    """The page's figure settings, put back and every figure closed afterwards."""
    with matplotlib.rc_context():
        page.legible_figures()
        yield
    plt.close("all")


def kinds(fig) -> list[str]:
    return fc.problems(fig)


# ------------------------------------------------------------------------------------------------ overlapping texts
def test_log_axis_minor_labels_printed_over_each_other_are_flagged() -> None:
    fig, ax = plt.subplots(figsize=(2.5, 2.2))  # a short log axis over less than a decade: 2×10⁰, 3×10⁰, 4×10⁰
    ax.plot([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], marker="o")
    ax.set(xscale="log", title="narrow")
    fig.tight_layout()
    found = kinds(fig)
    assert found and all("print over each other" in f for f in found), found
    assert any("3×10^0" in f and "4×10^0" in f for f in found), found


def test_plain_log_axis_and_spaced_labels_pass() -> None:
    from repro.plots import log_axis

    fig, ax = plt.subplots(figsize=(2.5, 2.2))
    ax.plot([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], marker="o")
    ax.set(title="narrow")
    log_axis(ax, "x")
    fig.tight_layout()
    assert kinds(fig) == []
    fig, ax = plt.subplots()
    ax.plot(range(5), range(5))
    fig.tight_layout()
    assert kinds(fig) == []


def test_rotated_labels_count_by_their_own_rectangle() -> None:
    fig, ax = plt.subplots()  # rotated: the axis-aligned extents of neighbours overlap, the texts do not
    ax.bar(range(6), range(1, 7))
    ax.set_xticks(range(6), ["a rather long category name"] * 6)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right", rotation_mode="anchor")
    fig.tight_layout()
    assert kinds(fig) == []
    ax.set_xticks(range(6), ["a rather long category name"] * 6, rotation=0)  # level: they run into each other
    fig.tight_layout()
    assert any("print over each other" in f for f in kinds(fig))


def test_labels_of_neighbouring_panels_running_into_each_other_are_flagged() -> None:
    fig, axes = plt.subplots(2, 1, figsize=(4, 3))  # stacked panels, each y label longer than its panel is high
    for ax in axes:
        ax.plot([0, 1], [0, 1])
        ax.set_ylabel("AUROC(RMD_m) − AUROC(MD)")
    assert any("y label" in f for f in kinds(fig))


# ------------------------------------------------------------------------------------------------ legends and notes
def test_legend_on_points_is_flagged_and_one_in_an_empty_corner_is_not() -> None:
    rng = np.random.default_rng(0)
    fig, ax = plt.subplots()
    ax.scatter(rng.random(300), rng.random(300), label="points")
    ax.legend(loc="center")
    assert any("legend of the axes covers points of 'points'" in f for f in kinds(fig))
    fig, ax = plt.subplots()
    ax.scatter([0.1, 0.2, 0.3], [0.1, 0.2, 0.15], label="points")
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="upper right")
    assert kinds(fig) == []


def test_a_line_or_error_bar_passing_under_a_legend_is_flagged() -> None:
    fig, ax = plt.subplots()  # two vertices far apart: the segment between them crosses the legend
    ax.plot([0, 1], [1, 0], label="line")
    ax.legend(loc="center")
    assert any("covers line 'line'" in f for f in kinds(fig))
    fig, ax = plt.subplots()
    ax.errorbar([0.1, 0.9], [0.5, 0.5], yerr=0.45, fmt="o", label="bars")
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="upper left")  # beside the first bar, over it
    assert any("error bars" in f or "covers line 'bars'" in f for f in kinds(fig)), kinds(fig)


def test_reference_lines_across_the_axes_may_pass_under_a_legend() -> None:
    fig, ax = plt.subplots()
    ax.plot([0.1, 0.2], [0.1, 0.2], "o", label="points")
    ax.axhline(0.95, color="grey", ls=":", label="chance")
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="upper right")
    assert kinds(fig) == []


def test_a_note_printed_on_the_data_is_flagged() -> None:
    fig, ax = plt.subplots()
    ax.errorbar([0.5], [0.5], yerr=0.4, fmt="o")
    ax.text(0.5, 0.3, "a set name", rotation=90, ha="center")
    assert any("the note 'a set name'" in f for f in kinds(fig))


def test_a_line_left_out_of_the_legend_is_flagged() -> None:
    fig, (left, right) = plt.subplots(1, 2)
    left.plot([0, 1], [0, 1], label="S-DP")
    right.plot([0, 1], [1, 0], label="CRT")
    right.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    assert any("'S-DP' in panel 1 has no legend entry" in f for f in kinds(fig)), kinds(fig)


# ---------------------------------------------------------------------------------------------------- clipped data
def test_a_point_below_the_axis_is_flagged_and_one_inside_is_not() -> None:
    fig, ax = plt.subplots()
    ax.errorbar([0, 1], [0.25, 0.7], yerr=0.1, fmt="o")
    ax.set(ylim=(0.3, 1.02), title="AUC")
    found = kinds(fig)
    assert any("panel 'AUC': a point at (x=0, y=0.25) lies outside the view" in f for f in found), found
    ax.set_ylim(0, 1.02)
    assert kinds(fig) == []


def test_points_on_the_edge_of_the_view_are_not_clipped() -> None:
    from repro.plots import apfd_area

    fig, ax = plt.subplots()
    apfd_area(ax, [1, 0, 2, 0, 1], "curve")  # the curve runs from (0, 0) to (1, 1), on the limits it sets
    assert kinds(fig) == []


# ------------------------------------------------------------------------------------------------------- cut texts
def test_text_beyond_the_edge_is_cut_only_where_the_figure_is_not_saved_tight() -> None:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    ax.set_title("a title far longer than this small figure is wide, so its ends fall off")
    with matplotlib.rc_context({"savefig.bbox": "standard"}):
        assert any("is cut by the figure's edge" in f for f in kinds(fig))
    assert not any("cut" in f for f in kinds(fig))  # the page saves tight: the image grows to hold it
    ax.text(0.9, 0.5, "clipped to the axes", clip_on=True)
    assert any("is cut by its panel's edge" in f for f in kinds(fig))


# ------------------------------------------------------------------------------------------------------------ hook
@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch):
    """An IPython shell of its own, as a notebook kernel runs cells; the patched canvas put back afterwards."""
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib.backend_bases import FigureCanvasBase
    from traitlets.config import Config

    monkeypatch.setattr(FigureCanvasBase, "print_figure", FigureCanvasBase.print_figure)
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell(config=config)
    shell.run_cell("import matplotlib.pyplot as plt")
    yield shell
    fc._PENDING.clear()
    shell.cleanup() if hasattr(shell, "cleanup") else None


BAD_CELL = (
    "fig, ax = plt.subplots(figsize=(2.5, 2.2)); ax.plot([1, 2, 3, 4], [1, 2, 3, 4]); ax.set_xscale('log'); "
    "ax.set_title('AUROC against K'); fig.tight_layout()"
)


def test_under_the_check_a_cell_drawing_a_defective_figure_fails_naming_it(
    shell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fc.ENV_VAR, "1")
    fc.install(shell)
    fc.install(shell)  # repro.start may run twice: one check per cell
    result = shell.run_cell(BAD_CELL)  # shown after the cell, as the inline backend flushes open figures
    assert isinstance(result.error_in_exec, fc.FigureDefect)
    assert "figure 'AUROC against K'" in str(result.error_in_exec) and "print over each other" in str(
        result.error_in_exec
    )
    shell.run_cell("plt.close('all')")
    assert shell.run_cell("fig, ax = plt.subplots(); ax.plot([0, 1], [0, 1]); plt.show()").error_in_exec is None
    # a figure shown through the display machinery and closed in the cell (as a glued one is) fails it too
    saved = shell.run_cell(
        "import io; fig, ax = plt.subplots(); ax.plot([0, 1], [0.1, 0.9], 'o'); ax.set_ylim(0.3, 1); "
        "fig.savefig(io.BytesIO(), format='png'); plt.close(fig)"
    )
    assert isinstance(saved.error_in_exec, fc.FigureDefect) and "outside the view" in str(saved.error_in_exec)


def test_without_the_variable_nothing_is_checked(shell, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.backend_bases import FigureCanvasBase

    monkeypatch.delenv(fc.ENV_VAR, raising=False)
    before = FigureCanvasBase.print_figure
    fc.install(shell)
    assert FigureCanvasBase.print_figure is before
    assert not any(isinstance(t, fc._CheckAtCellEnd) for t in shell.ast_transformers)
    assert shell.run_cell(BAD_CELL).error_in_exec is None


# ----------------------------------------------------------------------------------- the chapters' figures, fixed
def test_min_k_detection_figure_keeps_an_auc_below_the_old_floor_in_view() -> None:
    from repro.mink import figures

    rows = []  # the smoke run's TruthfulQA PPL point sat at 0.25, under the axis the figure started at 0.3
    for method, aucs in {"PPL": (0.66, 0.25), "Min-K%": (0.53, 0.53), "Zlib": (0.6, 0.4), "Ref": (1.0, 1.0)}.items():
        for dataset, auc in zip(("boolq", "truthful_qa"), aucs):
            rows.append(
                {
                    "method": method,
                    "dataset": dataset,
                    "auc": auc,
                    "auc_low": max(auc - 0.3, 0),
                    "auc_high": min(auc + 0.3, 1),
                }
            )
    assert fc.problems(figures.detection_bars(pd.DataFrame(rows))) == []


def _direction_sweep(counts: dict[str, int]) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for (setting, in_dist), top in counts.items():
        for features in ("pretrained", "finetuned"):
            for m in [d for d in (1, 2, 4, 8, 16, 32, 64) if d < top] + [top]:
                for seed in range(3):
                    rows.append(
                        {
                            "setting": setting,
                            "in_dist": in_dist,
                            "features": features,
                            "directions": m,
                            "gain": rng.normal(-0.1, 0.03),
                            "seed": seed,
                        }
                    )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "counts",
    [
        {("image-near", "group A"): 4, ("image-near", "group B"): 4},  # smoke: 1 to 4 on a log axis
        {
            ("image-near", "group A"): 4,
            ("image-near", "group B"): 4,
            ("text-tasks", "60 BIG-bench tasks"): 59,
            ("text-domain", "Wikipedia + NYT + Reddit"): 2,
        },  # default: a title the old figure cut, labels of stacked rows running into each other
    ],
)
def test_rmd_sweeps_have_plain_log_ticks_and_whole_titles(counts) -> None:
    from repro.rmd import figures

    fig = figures.direction_sweep(_direction_sweep(counts))
    assert fc.problems(fig) == []
    titles = {ax.get_title().replace("\n", " ") for ax in fig.axes}
    assert {f"{s}: {d}" for s, d in counts} == titles
    pc = _direction_sweep(counts).rename(columns={"directions": "k", "gain": "auroc"})
    pc = pd.concat([pc.assign(score="MD"), pc.assign(score="RMD", auroc=pc["auroc"] + 0.1)])
    assert fc.problems(figures.pc_sweep(pc, page.method_colors(["MSP", "MD", "RMD"]))) == []


def test_crt_exposure_legend_names_s_dp_drawn_on_one_panel_only() -> None:
    from repro.crt import figures

    rows = [
        {"model": m, "trainer": t, "gamma": g, "exposure": 4 + g, "null_low": 2, "null_high": 9}
        for m in ("LSTM", "GPT-2")
        for t in figures.TRAINER_ORDER
        for g in (0.0, 0.1)
        if t != "S-DP" or m == "LSTM"
    ]
    panels = [("LSTM", "model == 'LSTM'"), ("GPT-2", "model == 'GPT-2'")]
    fig = figures.against_gamma(pd.DataFrame(rows), "exposure", panels, "max exposure (bits)", None)
    assert fc.problems(fig) == []
    legend = [t.get_text() for t in fig.axes[-1].get_legend().get_texts()]
    assert legend == [*figures.TRAINER_ORDER, figures.NULL_LABEL]  # the trainers, then the one grey null band


def test_conditional_lm_ladder_names_close_sets_legibly() -> None:
    from repro.clm_ood import figures

    jaccard = {"mlsum_es": 0.018, "mlsum_de": 0.019, "wikihow": 0.119, "amazon": 0.134, "wiki": 0.136, "nyt": 0.165}
    overlap = pd.DataFrame({"set": list(jaccard), "label": [s.upper() for s in jaccard], "jaccard_1": jaccard.values()})
    scores = ("input_md", "input_rmd", "output_md", "output_rmd", "perplexity")
    aurocs = pd.DataFrame(
        [{"set": s, "score": sc, "auroc": 0.7, "ci_low": 0.5, "ci_high": 0.9} for s in jaccard for sc in scores]
    )
    fig = figures.ladder_figure(aurocs, overlap, scores)
    assert fc.problems(fig) == []
    assert all(label.get_rotation() == 0 for label in fig.axes[0].get_yticklabels())
