"""CRT's privacy accounting: DP-SGD ε with the autodp accountant and the Bayesian confidentiality amplification
(Zhao, Li & Wang, NAACL 2022)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np


def confidentiality_epsilon(epsilon_dp: float | np.ndarray, gamma: float | np.ndarray) -> float | np.ndarray:
    """ε_conf = log(1 + γ (e^{ε_dp} − 1)), with ε_dp taken at δ/γ."""
    return np.log1p(np.asarray(gamma) * np.expm1(epsilon_dp))


def _dpsgd_mechanism(sigma: float, q: float, steps: int):
    """autodp mechanism of DP-SGD: `steps` compositions of the Poisson-subsampled (rate q) Gaussian mechanism (σ),
    with `params` holding σ so that autodp's calibrators can tune it."""
    from autodp.autodp_core import Mechanism
    from autodp.mechanism_zoo import GaussianMechanism
    from autodp.transformer_zoo import AmplificationBySampling, Composition

    sampled = AmplificationBySampling(PoissonSampling=True)(GaussianMechanism(sigma=sigma), q, improved_bound_flag=True)
    mech = Mechanism()
    mech.name, mech.params = "DP-SGD", {"sigma": sigma, "prob": q, "steps": steps}
    mech.set_all_representation(Composition()([sampled], [steps]))
    return mech


def autodp_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """ε of Poisson-subsampled Gaussian DP-SGD (noise σ, rate q, `steps`) at δ, by autodp's RDP accountant."""
    with _brent_quiet():
        return float(_dpsgd_mechanism(sigma, q, steps).get_approxDP(delta))


def calibrate_sigma(epsilon: float, q: float, steps: int, delta: float) -> float:
    """The noise σ at which DP-SGD (q, steps) reaches `epsilon` at δ, by autodp's (ε, δ) calibrator over σ ∈ [0.3, 100]
    (the same mechanism as `autodp_epsilon`)."""
    from autodp.calibrator_zoo import eps_delta_calibrator

    with _brent_quiet():
        mech = eps_delta_calibrator()(lambda sigma: _dpsgd_mechanism(sigma, q, steps), epsilon, delta, [0.3, 100.0])
    return float(mech.params["sigma"])


@contextmanager
def _brent_quiet() -> Iterator[None]:
    """autodp's RDP-to-(ε, δ) conversion brackets a scipy Brent search whose step divides 0 by 0 on some inputs and
    recovers (the authors' notebook prints the same warning): silenced, so that a page shows no stray output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        yield


def amplification(epsilon_prime: float, gammas: Sequence[float], q: float, steps: int, delta: float) -> list[dict]:
    """Fig. 6 rows: DP-SGD calibrated to ε′ at δ, then ε_dp at δ/γ and ε_conf for each γ."""
    sigma = calibrate_sigma(epsilon_prime, q, steps, delta)
    rows = []
    for g in gammas:
        eps_dp = autodp_epsilon(sigma, q, steps, delta / g)
        rows.append(
            {
                "epsilon_prime": epsilon_prime,
                "sigma": sigma,
                "gamma": g,
                "epsilon_dp": eps_dp,
                "epsilon_conf": float(confidentiality_epsilon(eps_dp, g)),
                "naive_epsilon_conf": float(confidentiality_epsilon(epsilon_prime, g)),
            }
        )
    return rows
