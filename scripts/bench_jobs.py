"""A report, not a test: the same notebooks built cold one after the other on every core (`--jobs 1`, REPRO_THREADS
= the CPU count) against side by side, each on its share of the cores (`--jobs N`), total wall time measured in one
run. Each arm gets a fresh data folder holding only what `make data` makes (the BIG-bench files, the converted
SmolLM2) and a runs folder of its own, so every model is trained and every generation made in both arms. The metrics
chapter is timed before, between and after the arms as a gauge of the machine's speed while they ran.

    .venv/bin/python scripts/bench_jobs.py clm_ood data_selection --jobs 2 --out /tmp/bench_jobs

Prints a markdown table and writes it, with the raw seconds, to <out>/bench_jobs.json."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from repro import jobs
from repro.paths import data_dir

MADE_BY_MAKE_DATA = ("bigbench", "models/smollm2-135m-instruct")


def fresh_data(where: Path) -> Path:
    """A data folder holding links to what `make data` makes, and nothing a notebook caches."""
    where.mkdir(parents=True)
    for part in MADE_BY_MAKE_DATA:
        (where / part).parent.mkdir(parents=True, exist_ok=True)
        (where / part).symlink_to(data_dir() / part)
    return where


def gauge(runs: Path) -> float:
    """Seconds of one forced default run of the metrics chapter (a few seconds of mixed work): the machine's speed."""
    start = time.monotonic()
    command = [sys.executable, "-m", "repro", "run", "metrics_by_hand", "--profile", "default", "--force"]
    subprocess.run(command, env={**os.environ, "REPRO_RUNS": str(runs)}, check=True, capture_output=True)
    return time.monotonic() - start


def arm(stems: list[str], n_jobs: int, out: Path, profile: str) -> dict[str, float]:
    """Cold runs of `stems`, `n_jobs` at a time: each notebook's seconds from the arm's start to its end, and
    the arm's total."""
    env = {"REPRO_DATA": str(fresh_data(out / f"data-jobs{n_jobs}")), "REPRO_RUNS": str(out / f"runs-jobs{n_jobs}")}
    command = [sys.executable, "-m", "repro", "run", "--profile", profile]
    start, ended = time.monotonic(), {}
    with (out / f"jobs{n_jobs}.log").open("w") as log:
        for stem, failure in jobs.run_side_by_side(stems, lambda s: [*command, s], n_jobs, env=env, out=log):
            if failure is not None:
                raise SystemExit(f"jobs {n_jobs}: {failure}")
            ended[stem] = time.monotonic() - start
    return {**ended, "total": time.monotonic() - start}


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {round(seconds % 60):02d} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, required=True, help="a folder that does not exist yet")
    args = parser.parse_args()
    args.out.mkdir(parents=True)
    cpus = len(os.sched_getaffinity(0))
    gauges = [gauge(args.out / "gauge")]
    side = arm(args.notebooks, args.jobs, args.out, args.profile)
    gauges.append(gauge(args.out / "gauge"))
    alone = arm(args.notebooks, 1, args.out, args.profile)
    gauges.append(gauge(args.out / "gauge"))
    rows = [f"| {stem} | {minutes(alone[stem])} | {minutes(side[stem])} |" for stem in [*args.notebooks, "total"]]
    table = "\n".join(
        [
            f"| ends at (from the arm's start) | jobs 1 × {cpus} threads | jobs {args.jobs} × {cpus // args.jobs} "
            "thread(s) |",
            "|---|---|---|",
            *rows,
            f"\nside by side / one after the other: {side['total'] / alone['total']:.2f}; "
            f"metrics_by_hand gauge before, between, after: {', '.join(f'{g:.0f} s' for g in gauges)}",
        ]
    )
    print(table)
    (args.out / "bench_jobs.json").write_text(
        json.dumps({"cpus": cpus, "jobs": args.jobs, "alone": alone, "side": side, "gauges": gauges, "table": table})
    )


if __name__ == "__main__":
    main()
