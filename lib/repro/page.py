"""Conventions of the rendered page: nothing stray reaches it, figures are legible, one colour per method."""

from __future__ import annotations

from collections.abc import Sequence

from . import figure_checks

FIGURE_WIDTH = 7.5  # inches at which a figure fills the page's text column without shrinking its fonts


def quiet_cells() -> None:
    """Show only what a cell displays on purpose: no cell's last value (`Text(...)`, `<Axes>`) reaches the page."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.ast_node_interactivity = "none"


def plain_progress_bars() -> None:
    """Progress bars as text on stderr (dropped from the page) instead of empty widgets; under the runner they
    report to its status file instead and write nothing to the notebook (`repro.progress`)."""
    import os

    from . import progress

    if os.environ.get(progress.STATUS_VAR):
        progress.install()
        return
    import tqdm.std

    progress.use_tqdm(tqdm.std.tqdm)


def legible_figures() -> None:
    """Seaborn theme sized for the page: fonts readable at the text column's width, intervals visible."""
    import matplotlib as mpl
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind", font_scale=1.05)
    mpl.rcParams.update(
        {
            "figure.figsize": (FIGURE_WIDTH, 3.6),
            "figure.dpi": 110,
            "savefig.bbox": "tight",
            "legend.frameon": False,
            "axes.titlesize": "medium",
            "errorbar.capsize": 3,
        }
    )


def method_colors(methods: Sequence[str]) -> dict[str, tuple[float, float, float]]:
    """One fixed colour per method, in the order given, to keep across every figure of a chapter."""
    import seaborn as sns

    palette = sns.color_palette("colorblind", max(len(methods), 10))
    return {m: palette[i] for i, m in enumerate(methods)}


def set_up() -> None:
    """Apply every page convention; called by repro.start()."""
    quiet_cells()
    plain_progress_bars()
    legible_figures()
    figure_checks.install()  # under REPRO_FIGURE_CHECK=1 (the tests): a figure that does not read fails its cell


def say(markdown: str) -> None:
    """Show prose whose numbers come from this run's results, as Markdown on the page (plain text in a terminal)."""
    from IPython.display import Markdown, display

    display(Markdown(markdown))
