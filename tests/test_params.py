"""repro.params: profiles, overrides and one-line validation errors."""

from __future__ import annotations

import pytest

from repro.params import Param, ParameterError, resolve

SPEC = {
    "n": Param(int, 100, smoke=10, low=1, high=1000, help="size"),
    "lr": Param(float, 1e-4, paper=1e-5, low=0.0),
    "mode": Param(str, "local", paper="hub", choices=("local", "hub")),
    "ks": Param(list, [5, 10], items=int, low=1, high=100),
    "flag": Param(bool, False),
}


def ns(**values):
    """A namespace as the parameters cell leaves it: profile plus None for 'the profile's value'."""
    base = {"profile": "default", **{k: None for k in SPEC}, "In": [], "_": None}
    return {**base, **values}


def test_profiles_give_their_values() -> None:
    assert resolve(ns(), SPEC) == {
        "profile": "default",
        "n": 100,
        "lr": 1e-4,
        "mode": "local",
        "ks": [5, 10],
        "flag": False,
    }
    smoke = resolve(ns(profile="smoke"), SPEC)
    assert smoke["n"] == 10 and smoke["lr"] == 1e-4
    paper = resolve(ns(profile="paper"), SPEC)
    assert paper["mode"] == "hub" and paper["lr"] == 1e-5 and paper["n"] == 100


def test_explicit_value_beats_profile_and_int_widens_to_float() -> None:
    got = resolve(ns(profile="smoke", n=500, lr=1), SPEC)
    assert got["n"] == 500 and got["lr"] == 1.0 and isinstance(got["lr"], float)


@pytest.mark.parametrize(
    "values, match",
    [
        ({"n": 0}, r"parameter 'n': 0 is out of range, expected int in \[1, 1000\]"),
        ({"n": "ten"}, r"parameter 'n': got 'ten' \(str\), expected int"),
        ({"n": 2.5}, r"parameter 'n'"),
        ({"flag": 1}, r"parameter 'flag'"),
        ({"n": True}, r"parameter 'n'"),
        ({"mode": "ftp"}, r"parameter 'mode': got 'ftp', expected one of 'local', 'hub'"),
        ({"ks": [5, 0]}, r"parameter 'ks'"),
        ({"ks": []}, r"parameter 'ks'"),
        ({"profile": "huge"}, r"parameter 'profile': got 'huge', expected one of smoke, default, paper"),
        ({"bogus": 3}, r"unknown parameter 'bogus': allowed are profile, n, lr, mode, ks, flag"),
    ],
)
def test_bad_values_give_one_line_errors(values, match) -> None:
    with pytest.raises(ParameterError, match=match) as err:
        resolve(ns(**values), SPEC)
    assert "\n" not in str(err.value)


def test_modules_functions_and_private_names_are_not_parameters() -> None:
    import math

    assert resolve(ns(math=math, helper=lambda: 0, _hidden=1, Param=Param), SPEC)["n"] == 100


@pytest.mark.parametrize(
    "values, match",
    [
        ({"lr": float("nan")}, r"parameter 'lr': got nan, expected a finite number"),
        ({"lr": float("inf")}, r"parameter 'lr': got inf, expected a finite number"),
        ({"n": float("-inf")}, r"parameter 'n': got -inf, expected a finite number"),
        ({"ks": [5, float("nan")]}, r"parameter 'ks': got nan, expected a finite number"),
        ({"lr": 10**400}, r"parameter 'lr': 1000.* is out of range"),
    ],
)
def test_nan_infinity_and_overflow_are_refused_in_one_line(values, match) -> None:
    with pytest.raises(ParameterError, match=match) as err:
        resolve(ns(**values), SPEC)
    assert "\n" not in str(err.value)


def test_item_choices_check_every_list_item() -> None:
    spec = {"attacks": Param(list, ["FGSM", "BIM"], items=str, item_choices=("FGSM", "BIM", "JSMA"))}
    assert resolve({"profile": "default", "attacks": ["JSMA"]}, spec)["attacks"] == ["JSMA"]
    with pytest.raises(
        ParameterError,
        match=r"parameter 'attacks': got item 'NOPE', expected list of str, each one of "
        r"'FGSM', 'BIM', 'JSMA'",
    ):
        resolve({"profile": "default", "attacks": ["BIM", "NOPE"]}, spec)


def test_cross_parameter_checks_run_in_start_before_anything_else() -> None:
    import repro

    spec = {"lo": Param(int, 1), "hi": Param(int, 2)}

    def ordered(p: dict) -> str | None:
        """lo must stay below hi."""
        return "parameter 'hi': must exceed lo" if p["hi"] <= p["lo"] else None

    def raising(p: dict) -> None:
        """Raise instead of returning."""
        if p["lo"] < 0:
            raise ParameterError("parameter 'lo': negative")

    with pytest.raises(ParameterError, match=r"^parameter 'hi': must exceed lo$"):
        repro.start({"profile": "default", "lo": 5, "hi": None}, checks=[ordered, raising], **spec)
    with pytest.raises(ParameterError, match=r"^parameter 'lo': negative$"):
        repro.start({"profile": "default", "lo": -1, "hi": None}, checks=[ordered, raising], **spec)


@pytest.mark.parametrize("seed", [2**32, 2**40])
def test_start_refuses_seeds_numpy_cannot_take_even_without_a_high_bound(seed: int) -> None:
    import repro

    with pytest.raises(ParameterError, match=r"parameter 'seed': \d+ is out of range, expected int in \[0, 4294967295"):
        repro.start({"profile": "default", "seed": seed}, seed=Param(int, 0, low=0))


@pytest.fixture
def no_hub_flags(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment with neither offline flags, nor a mock Hub, nor prepare-only."""
    from repro import notebook

    for var in (*notebook.OFFLINE_VARS, notebook.MOCK_HUB_VAR, notebook.PREPARE_ONLY_VAR):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_paper_fails_fast_when_the_hub_is_offline_or_unreachable(no_hub_flags: pytest.MonkeyPatch) -> None:
    import socket
    import time

    import huggingface_hub.constants

    from repro import notebook

    notebook.require_hub("default")  # other profiles never look
    no_hub_flags.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ParameterError,
        match=r"profile 'paper' needs the Hugging Face Hub .*HF_HUB_OFFLINE=1.*"
        r"use --profile default",
    ):
        notebook.require_hub("paper")
    no_hub_flags.delenv("HF_HUB_OFFLINE")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    no_hub_flags.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{closed_port}")
    began = time.perf_counter()
    with pytest.raises(ParameterError, match=r"127\.0\.0\.1 cannot be reached here: use --profile default") as err:
        notebook.require_hub("paper")
    assert time.perf_counter() - began < 5 and "\n" not in str(err.value)


def test_paper_hub_check_is_skipped_for_prepare_only_a_mock_hub_and_a_reachable_hub(no_hub_flags) -> None:
    import socket

    import huggingface_hub.constants

    from repro import notebook

    no_hub_flags.setenv("HF_HUB_OFFLINE", "1")
    no_hub_flags.setenv(notebook.PREPARE_ONLY_VAR, "1")
    notebook.require_hub("paper")
    no_hub_flags.delenv(notebook.PREPARE_ONLY_VAR)
    no_hub_flags.setenv(notebook.MOCK_HUB_VAR, "1")
    notebook.require_hub("paper")
    no_hub_flags.delenv(notebook.MOCK_HUB_VAR)
    no_hub_flags.delenv("HF_HUB_OFFLINE")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        no_hub_flags.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        notebook.require_hub("paper")
