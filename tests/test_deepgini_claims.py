"""The DeepGini register against the artifact's apfd.xlsx: the best coverage baseline per pair, and the rule's
statistic on the paper's numbers."""

from __future__ import annotations

import pytest

from repro.deepgini import claims as dgc
from repro.deepgini.experiment import SPEC
from repro.params import resolve


def test_the_highest_coverage_apfd_is_kmnc_on_mnist_lenet1_and_lsc_on_svhn_vgg16() -> None:
    """apfd.xlsx: KMNC(1000)-CAM 0.835 on MNIST LeNet-1's original set (the reference notes' 0.64 was wrong), LSC-CAM
    0.536 on SVHN VGG-16's mixed set."""
    assert dgc.PAPER_COVERAGE_HIGHEST == (0.835, 0.536)
    assert dgc.PAPER_COVERAGE_BEST["mnist", "lenet1"][0] == (0.835, "KMNC(1000)-CAM")
    assert dgc.PAPER_COVERAGE_BEST["svhn", "vgg16"][1] == (0.536, "LSC-CAM")
    # the Fashion LeNet-1 values quoted elsewhere in the register agree with the per-pair best
    fashion = dgc.PAPER_FASHION_LENET1
    assert dgc.PAPER_COVERAGE_BEST["fashion_mnist", "lenet1"][0][0] == max(
        v[0] for m, v in fashion.items() if m != "DeepGini"
    )


@pytest.mark.parametrize(("test_set", "smallest"), [(0, 0.146), (1, 0.414)])
def test_the_papers_smallest_margin_is_mnist_lenet1(test_set: int, smallest: float) -> None:
    margins = dgc.paper_margins(test_set)
    assert min(margins, key=margins.get) == ("mnist", "lenet1")
    assert margins["mnist", "lenet1"] == pytest.approx(
        dgc.PAPER_DEEPGINI["mnist", "lenet1"][test_set] - dgc.PAPER_COVERAGE_BEST["mnist", "lenet1"][test_set][0]
    )
    assert margins["mnist", "lenet1"] == pytest.approx(smallest)
    # the lowest DeepGini minus the highest coverage on any pair (the register's old estimate) is not the rule's
    # statistic: on the original set it is negative although DeepGini wins on every pair
    lowest = min(v[test_set] for v in dgc.PAPER_DEEPGINI.values())
    assert (lowest - dgc.PAPER_COVERAGE_HIGHEST[test_set] < 0) == (test_set == 0)


@pytest.mark.parametrize("profile", ["smoke", "default", "paper"])
def test_beats_coverage_rows_carry_the_smallest_margin_and_hold_on_it(profile: str) -> None:
    claims = dgc.claims(resolve({"profile": profile}, SPEC))
    for i, test_set in enumerate(dgc.SETS):
        rows = {k: c for k, c in claims.items() if k.split("|")[:2] == ["beats_coverage", test_set]}
        # default splits its pairs by training-set size (Fashion-MNIST 60,000; the MNIST sample 4,000): one row each
        assert len(rows) == (2 if profile == "default" else 1) and all(
            c.on_paper_numbers() == "held" for c in rows.values()
        )
        if profile == "default":
            fashion = rows[f"beats_coverage|{test_set}|fashion_mnist:lenet1+fashion_mnist:lenet5"]
            assert fashion.paper_estimate == pytest.approx((0.895 - 0.577, 0.956 - 0.505)[i])  # apfd.xlsx
            assert "60,000 training images" in fashion.claim
        c = rows.get(f"beats_coverage|{test_set}") or rows[f"beats_coverage|{test_set}|mnist:lenet1+mnist:lenet5"]
        assert c.paper_estimate == (0.146, 0.414)[i] and c.on_paper_numbers() == "held"
        assert (
            c.paper_values[
                "best coverage mnist lenet1 (KMNC(1000)-CAM)" if i == 0 else "best coverage mnist lenet1 (LSC-CAM)"
            ]
            == (0.835, 0.504)[i]
        )


def test_the_artifacts_cam_rows_sit_below_its_random_and_the_page_says_so() -> None:
    """retrain.xlsx, CIFAR-10 ResNet-20 at 10 %: every CAM variant 0.916-0.918, below the artifact's random 0.926
    (its CSVs); seven CTM variants 0.933-0.935 (NBC(1)-CTM best), NAC(0.75)-CTM 0.899; DeepGini 0.978."""
    from repro.deepgini import experiment as dg

    outcome, sheet = dgc.artifact_retraining(dgc.RETRAIN_TABLE_PAIR)
    cam = [v for m, v in outcome.items() if m.endswith("-CAM")]
    assert sheet == ("cifar10", "resnet20") and len(cam) == 13
    assert (min(cam), max(cam)) == (0.9163, 0.9177) and max(cam) < dgc.ARTIFACT_RETRAINING["cifar ResNet-20"][10][1]
    assert max((v, m) for m, v in outcome.items() if m.endswith("-CTM")) == (0.9348, "NBC(1)-CTM")
    words = dg.artifact_cam_words()
    assert "all 13 CAM variants lie between 0.916 and 0.918, below the artifact's random (0.926" in words
    assert "7 of the 8 CTM variants" in words and "NAC(0.75)-CTM 0.899" in words and "DeepGini at 0.978" in words
    assert all(f"`{line}`" in words for line in dgc.ARTIFACT_CAM_ORDER_CODE)
