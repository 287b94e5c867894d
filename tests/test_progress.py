"""Progress while a notebook runs: bars report to the runner's status file, the monitor shows notebook, section, bar
and elapsed time (a line per new stage and at least one per `every` seconds in a log), nothing reaches the page."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import nbformat
import pytest

from repro import progress
from repro.runner import run


def status(path: Path) -> dict:
    return json.loads(path.read_text())


def test_bars_report_to_the_status_file_and_write_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    path = tmp_path / "status.json"
    monkeypatch.setenv(progress.STATUS_VAR, str(path))
    monkeypatch.setattr(progress, "WRITE_EVERY", 0.0)
    outer = progress.ReportingTqdm(total=4, desc="seeds", mininterval=0)
    inner = progress.ReportingTqdm(range(3), desc="epochs", mininterval=0)
    for _ in inner:
        pass  # iterating to the end closes the bar
    outer.update(3)
    assert status(path)["bars"] == [{"id": id(outer), "desc": "seeds", "n": 3, "total": 4}]
    outer.close()
    assert status(path)["bars"] == []
    assert capsys.readouterr() == ("", "")  # a bar's text never reaches the notebook's streams


def test_disabled_bars_are_not_reported(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "status.json"
    monkeypatch.setenv(progress.STATUS_VAR, str(path))
    bar = progress.ReportingTqdm(total=2, desc="hidden", disable=True)
    bar.update(1)
    bar.close()
    assert not path.exists()


def test_long_steps_open_bars_in_a_runner_kernel_or_a_terminal_only(tmp_path: Path, monkeypatch) -> None:
    class Stream(io.StringIO):
        def __init__(self, tty: bool) -> None:
            super().__init__()
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    monkeypatch.delenv(progress.STATUS_VAR, raising=False)
    monkeypatch.setattr("sys.stderr", Stream(False))
    assert not progress.shown()  # a plain notebook kernel: every update would be saved
    monkeypatch.setattr("sys.stderr", Stream(True))
    assert progress.shown()
    monkeypatch.setattr("sys.stderr", Stream(False))
    monkeypatch.setenv(progress.STATUS_VAR, str(tmp_path / "status.json"))
    assert progress.shown()  # the runner's kernel: the bar reports to the status file


def notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("## 2. Training\n\nText."),
        nbformat.v4.new_code_cell("train()"),
        nbformat.v4.new_code_cell("score()"),
    ]
    return nb


def test_sections_map_each_code_cell_to_the_heading_above_it() -> None:
    found = progress.sections(notebook())
    assert found[progress.cell_key("x = 1")] == (1, "")
    assert found[progress.cell_key("train()")] == (2, "2. Training")
    assert found[progress.cell_key("score()\n")] == (3, "2. Training")  # whitespace does not change the key


def test_monitor_logs_each_new_stage_and_a_heartbeat(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "status.json"
    monkeypatch.setattr(progress, "MIN_GAP", 0.0)
    monkeypatch.setenv(progress.EVERY_VAR, "0.3")
    out = io.StringIO()
    monitor = progress.Monitor("chapter", notebook(), path, stream=out)
    path.write_text(json.dumps({"cell": progress.cell_key("train()"), "bars": []}))
    monitor.show()
    monitor.show()  # same stage, before the heartbeat: no new line
    path.write_text(
        json.dumps({"cell": progress.cell_key("train()"), "bars": [{"desc": "epochs", "n": 5, "total": 10}]})
    )
    monitor.show()  # a bar opened: a new stage
    time.sleep(0.35)
    monitor.show()  # nothing changed, but the heartbeat is due
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("chapter · cell 2/3 · 2. Training · elapsed 0:0")
    assert "epochs 5/10 · [##########..........]" in lines[1] and lines[2].startswith(lines[1][:40])


def test_monitor_rewrites_one_line_in_a_terminal(tmp_path: Path) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    monitor = progress.Monitor("chapter", notebook(), tmp_path / "missing.json", stream=out)
    monitor.show()
    monitor.show()
    monitor.stop()  # never started: stop only clears the line
    text = out.getvalue()
    assert "\n" not in text and text.count("\r") == 4 and "chapter · starting" in text


@pytest.mark.usefixtures("isolated_runs")
def test_a_run_logs_its_sections_and_keeps_bars_off_the_page(capsys, monkeypatch, isolated_runs: Path) -> None:
    monkeypatch.setenv(progress.EVERY_VAR, "1")
    monkeypatch.setattr(progress, "MIN_GAP", 0.0)
    result = run("metrics_by_hand", "smoke", {"toy_n": 40, "n_sentences": 2}, force=True)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("metrics_by_hand · ")]
    # the monitor polls once a second: the long section (loading and running the LM, ~10 s) is always seen, and
    # with nothing else changing it is logged again each second (the heartbeat)
    long = [line for line in lines if "· 5. Min-K% Prob on a few sentences · elapsed" in line]
    assert len(long) >= 2 and len(set(long)) >= 2, lines
    assert result["tables"]["min_k_sentences"] and not list(isolated_runs.glob(".scratch/*.progress.json"))
    executed = nbformat.read(isolated_runs / "smoke" / "metrics_by_hand.ipynb", as_version=4)
    streams = [o for c in executed.cells for o in c.get("outputs", []) if o["output_type"] == "stream"]
    assert streams == []  # no bar, no "IProgress not found" warning in the saved notebook
