"""Coverage criteria, CTM/CAM orders, softmax scores and surprise adequacy on hand-computed cases.

The tiny network: one dense ReLU layer with 2 inputs and 3 neurons, h = relu(x W),
W = [[1, -1, 0.5], [0, 1, 0.5]].
Training inputs (0,0), (2,0), (0,2) give activations (0,0,0), (2,0,1), (0,2,1):
low = (0,0,0), high = (2,2,1), std = (0.9428, 0.9428, 0.4714).
Test inputs (1,0), (2.8,0), (0,1.8) give (1,0,0.5), (2.8,0,1.4), (0,1.8,0.9);
rescaled to the training range: (0.5,0,0.5), (1.4,0,1.4), (0,0.9,0.9).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import sparse

from repro.deepgini import coverage as cv
from repro.deepgini import experiment, nets, prioritizers, surprise

W = np.array([[1.0, -1.0, 0.5], [0.0, 1.0, 0.5]])
TRAIN = np.maximum(np.array([[0, 0], [2, 0], [0, 2]], dtype=float) @ W, 0)
TEST = np.maximum(np.array([[1, 0], [2.8, 0], [0, 1.8]]) @ W, 0)
LAYER = np.zeros(3, dtype=int)


def covered(items: sparse.csr_matrix) -> list[set[int]]:
    """The set of items each test covers."""
    return [set(items.indices[items.indptr[i] : items.indptr[i + 1]].tolist()) for i in range(items.shape[0])]


@pytest.fixture
def stats() -> cv.NeuronStats:
    return cv.fit_stats(TRAIN, LAYER)


def test_tiny_network_activations_and_stats(stats) -> None:
    assert TEST == pytest.approx(np.array([[1, 0, 0.5], [2.8, 0, 1.4], [0, 1.8, 0.9]]))
    assert stats.low.tolist() == [0, 0, 0] and stats.high.tolist() == [2, 2, 1]
    assert stats.std == pytest.approx([np.sqrt(8 / 9), np.sqrt(8 / 9), np.sqrt(2 / 9)])
    assert cv.scaled(TEST, stats) == pytest.approx(np.array([[0.5, 0, 0.5], [1.4, 0, 1.4], [0, 0.9, 0.9]]))


def test_nac(stats) -> None:
    assert covered(cv.nac_items(TEST, stats, 0.0)) == [{0, 2}, {0, 2}, {1, 2}]
    assert covered(cv.nac_items(TEST, stats, 0.75)) == [set(), {0, 2}, {1, 2}]


def test_nac_with_the_artifacts_sigmoid(stats) -> None:
    # sigmoid > 0 always: NAC(0) covers every neuron; sigmoid(a) > 0.75 iff a > ln 3 = 1.0986
    assert covered(cv.nac_items(TEST, stats, 0.0, "sigmoid")) == [{0, 1, 2}] * 3
    # (1, 0, 0.5): none; (2.8, 0, 1.4): neurons 0 and 2; (0, 1.8, 0.9): neuron 1
    assert covered(cv.nac_items(TEST, stats, 0.75, "sigmoid")) == [set(), {0, 2}, {1}]


def test_kmnc_has_k_minus_1_sections_and_two_out_of_range_bins(stats) -> None:
    # the artifact's KMNC(4): edges linspace(low, high, 4) are 0, 2/3, 4/3, 2 (neurons 0, 1) and 0, 1/3, 2/3, 1
    # (neuron 2); bin = number of edges <= a: 0 below the training min, 1..3 inside, 4 at or above the training max.
    # item = neuron * 5 + bin
    items = cv.kmnc_items(TEST, stats, 4)
    assert items.shape == (3, 15)
    # test 0 (1, 0, 0.5): bins 2, 1, 2; test 1 (2.8, 0, 1.4): bins 4, 1, 4; test 2 (0, 1.8, 0.9): bins 1, 3, 3
    assert covered(items) == [{2, 6, 12}, {4, 6, 14}, {1, 8, 13}]
    # below the minimum -> bin 0; exactly the training maximum -> the upper out-of-range bin 4
    assert covered(cv.kmnc_items(np.array([[-1.0, 2.0, 1.0]]), stats, 4)) == [{0, 9, 14}]
    # a constant neuron (low = high = 3): bin 0 below 3, bin k at or above it
    flat = cv.fit_stats(np.array([[3.0], [3.0]]), np.zeros(1, dtype=int))
    assert covered(cv.kmnc_items(np.array([[2.0], [3.0], [4.0]]), flat, 4)) == [{0}, {4}, {4}]


def test_nbc_and_snac(stats) -> None:
    # upper corners are items 0..2, lower corners 3..5; test 1 exceeds high on neurons 0 and 2
    assert covered(cv.nbc_items(TEST, stats, 0.0)) == [set(), {0, 2}, set()]
    assert covered(cv.snac_items(TEST, stats, 0.0)) == [set(), {0, 2}, set()]
    # 2.8 > 2 + 0.5*0.943 = 2.47 and 1.4 > 1 + 0.5*0.471 = 1.24, but not + 1 std (2.94, 1.47)
    assert covered(cv.snac_items(TEST, stats, 0.5)) == [set(), {0, 2}, set()]
    assert covered(cv.snac_items(TEST, stats, 1.0)) == [set(), set(), set()]
    below = np.array([[-1.0, 0.5, 0.5], [0.5, -0.2, 0.5]])
    assert covered(cv.nbc_items(below, stats, 0.0)) == [{3}, {4}]
    assert covered(cv.nbc_items(below, stats, 1.0)) == [{3}, set()]  # -0.2 > 0 - 0.943


def test_tknc() -> None:
    assert covered(cv.tknc_items(TEST, LAYER, 1)) == [{0}, {0}, {1}]
    assert covered(cv.tknc_items(TEST, LAYER, 2)) == [{0, 2}, {0, 2}, {1, 2}]
    # two layers: top-1 in each of {0, 1} and {2}
    assert covered(cv.tknc_items(TEST, np.array([0, 0, 1]), 1)) == [{0, 2}, {0, 2}, {1, 2}]


def test_surprise_buckets_with_negative_values() -> None:
    # edges linspace(-3, 2, 6) = -3, -2, -1, 0, 1, 2: item = number of edges <= v (np.digitize);
    # -4 is below the lower bound (item 0), 2 and 5 are at or above the upper bound (item 6)
    items = cv.bucket_items(np.array([-4.0, -3.0, -1.0, 0.5, 2.0, 5.0]), 6, -3.0, 2.0)
    assert items.shape == (6, 7)
    assert covered(items) == [{0}, {1}, {3}, {4}, {6}, {6}]


def test_surprise_buckets_at_the_call_site_use_the_artifact_range() -> None:
    # lower = the set's minimum, upper 100 (LSC) or 2 (DSC), 1000 edges, so the step is (upper - lower) / 999
    lsa_values, dsa_values = np.array([-50.0, -20.0, 100.0, 150.0]), np.array([0.1, 0.5, 2.0, 3.0])
    s = experiment.Subject(np.zeros((4, 2)), np.zeros((4, 3)), cv.fit_stats(TRAIN, LAYER), lsa_values, dsa_values, {})
    lsc = experiment.items_for("LSC", 0.0, s)
    # -20: edges up to -50 + 199 * 150/999 = -20.12 are <= -20, edge 200 is -19.97
    assert lsc.shape == (4, 1001) and covered(lsc) == [{1}, {200}, {1000}, {1000}]
    # 0.5: edge 210 is 0.1 + 210 * 1.9/999 = 0.4994, edge 211 is 0.5013
    assert covered(experiment.items_for("DSC", 0.0, s)) == [{1}, {211}, {1000}, {1000}]


def test_ctm_sorts_by_own_coverage(stats) -> None:
    order = cv.ctm_order(cv.nac_items(TEST, stats, 0.75), seed=0)
    assert set(order[:2].tolist()) == {1, 2} and order[2] == 0


def test_cam_picks_additional_coverage(stats) -> None:
    items = cv.nac_items(TEST, stats, 0.0)  # {0,2}, {0,2}, {1,2}: all start with gain 2
    for seed in range(10):
        order = cv.cam_order(items, seed)
        assert sorted(order.tolist()) == [0, 1, 2]
        # the first two picks always cover all three neurons: a repeat of {0,2} never comes second
        assert set().union(*(covered(items)[i] for i in order[:2])) == {0, 1, 2}
    firsts = {int(cv.cam_order(items, seed)[0]) for seed in range(20)}
    assert len(firsts) > 1, "the start is a seeded random choice among tied tests, not always the first file row"


# 5 tests, 4 items: t0 {0}, t1 {0,1,2}, t2 {1}, t3 {2,3}, t4 {1,2}. Gains 1, 3, 1, 2, 2: CAM picks t1 (gain 3),
# then t3 (the only one with a new item, 3) and reaches full coverage; t0, t2 and t4 are leftovers.
LEFTOVER_ITEMS = sparse.csr_matrix(np.array([[1, 0, 0, 0], [1, 1, 1, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 1, 1, 0]]))
LEFTOVER_WRONG = np.array([True, False, True, False, False])  # t0 and t2 misclassified, t4 correct


@pytest.mark.parametrize("cam", [cv.cam_order, cv.cam_order_naive])
def test_cam_leftovers_ctm_mode(cam) -> None:
    # leftovers by own coverage: t4 (2 items) before t0 and t2 (1 item each, seeded tie)
    orders = {tuple(cam(LEFTOVER_ITEMS, seed).tolist()) for seed in range(20)}
    assert orders == {(1, 3, 4, 0, 2), (1, 3, 4, 2, 0)}


@pytest.mark.parametrize("cam", [cv.cam_order, cv.cam_order_naive])
def test_cam_leftovers_artifact_mode_is_worst_first(cam) -> None:
    # the artifact's stable sort keeps its worst-first order: correct leftovers (t4), then misclassified (t0, t2),
    # each by test index, whatever the seed
    for seed in range(5):
        assert cam(LEFTOVER_ITEMS, seed, "artifact", LEFTOVER_WRONG).tolist() == [1, 3, 4, 0, 2]
    assert cam(LEFTOVER_ITEMS, 0, "artifact", ~LEFTOVER_WRONG).tolist() == [1, 3, 0, 2, 4]
    with pytest.raises(ValueError, match="misclassified"):
        cam(LEFTOVER_ITEMS, 0, "artifact")


@pytest.mark.parametrize("seed", range(15))
def test_cam_incremental_equals_naive_rescan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    dense = rng.random((60, 25)) < rng.uniform(0.02, 0.3)
    items = sparse.csr_matrix(dense.astype(np.int8))
    fast, slow = cv.cam_order(items, seed), cv.cam_order_naive(items, seed)
    assert fast.tolist() == slow.tolist()
    assert sorted(fast.tolist()) == list(range(60))
    wrong = rng.random(60) < 0.3
    fast, slow = cv.cam_order(items, seed, "artifact", wrong), cv.cam_order_naive(items, seed, "artifact", wrong)
    assert fast.tolist() == slow.tolist()


def test_softmax_scores_by_hand() -> None:
    p = np.array([[0.3, 0.5, 0.2], [0.1, 0.1, 0.8], [0.5, 0.5, 0.0]])
    assert prioritizers.max_softmax(p) == pytest.approx([0.5, 0.2, 0.5])
    assert prioritizers.margin(p) == pytest.approx([0.8, 0.3, 1.0])
    assert prioritizers.entropy(p) == pytest.approx([1.0297, 0.6390, np.log(2)], abs=1e-4)
    assert prioritizers.softmax_order("DeepGini", p, 0).tolist() == [0, 2, 1]  # 0.62, 0.34, 0.5
    assert prioritizers.softmax_order("margin", p, 0).tolist() == [2, 0, 1]


def test_seeded_order_breaks_ties_randomly_but_reproducibly() -> None:
    ties = np.zeros(50)
    assert prioritizers.seeded_order(ties, 3).tolist() == prioritizers.seeded_order(ties, 3).tolist()
    assert prioritizers.seeded_order(ties, 3).tolist() != list(range(50))
    assert prioritizers.seeded_order(np.array([1.0, 3.0, 2.0]), 0).tolist() == [1, 2, 0]


def test_dsa_by_hand() -> None:
    train = np.array([[0.0], [1.0], [3.0]])
    pred = np.array([0, 0, 1])
    # x = 0.2, predicted 0: nearest same-class trace 0 (distance 0.2); from it, nearest class-1 trace is 3 away
    assert surprise.dsa(train, pred, np.array([[0.2]]), np.array([0])) == pytest.approx([0.2 / 3])


def test_lsa_grows_with_distance_from_training_traces() -> None:
    rng = np.random.default_rng(0)
    train = rng.normal(size=(400, 2))
    pred = np.zeros(400, dtype=int)
    values = surprise.lsa(train, pred, np.array([[0.0, 0.0], [2.0, 2.0], [5.0, 5.0]]), np.zeros(3, dtype=int))
    assert values[0] < values[1] < values[2]


def test_conv_neurons_are_spatial_means_of_feature_maps() -> None:
    model = nets.build("lenet5", (1, 28, 28), 10, seed=0).eval()
    x = np.random.default_rng(0).random((3, 1, 28, 28)).astype(np.float32)
    acts, layer = nets.neuron_activations(model, x)
    assert acts.shape == (3, 6 + 16 + 120 + 84) and np.bincount(layer).tolist() == [6, 16, 120, 84]
    with torch.no_grad():
        maps = model.blocks[0](torch.as_tensor(x).to(nets.device())).cpu()
    assert acts[:, :6] == pytest.approx(maps.mean(dim=(2, 3)).double().numpy(), abs=1e-6)


def test_the_artifact_layer_set_adds_pre_pool_maps_and_the_softmax() -> None:
    """LeNet-1 tracks 42 units as the artifact's Keras model exposes them (4 + 4 + 12 + 12 + 10), ours 16."""
    x = np.random.default_rng(1).random((5, 1, 28, 28)).astype(np.float32)
    lenet1 = nets.build("lenet1", (1, 28, 28), 10, seed=0).eval()
    acts, layer = nets.neuron_activations(lenet1, x, layers="artifact")
    assert np.bincount(layer).tolist() == [4, 4, 12, 12, 10]
    ours, _ = nets.neuron_activations(lenet1, x)
    assert ours.shape[1] == 16
    assert acts[:, 4:8] == pytest.approx(ours[:, :4]) and acts[:, 20:32] == pytest.approx(ours[:, 4:])  # post-pool
    with torch.no_grad():
        pre = lenet1.blocks[0][:-1](torch.as_tensor(x).to(nets.device())).cpu().mean(dim=(2, 3)).double().numpy()
    assert acts[:, :4] == pytest.approx(pre, abs=1e-6)
    assert acts[:, -10:] == pytest.approx(nets.predict_proba(lenet1, x), abs=1e-6)
    assert acts[:, -10:].sum(1) == pytest.approx(np.ones(5))
    _, layer5 = nets.neuron_activations(nets.build("lenet5", (1, 28, 28), 10, seed=0).eval(), x, layers="artifact")
    assert np.bincount(layer5).tolist() == [6, 6, 16, 16, 120, 84, 10]
    with pytest.raises(ValueError, match="layers must be one of"):
        nets.neuron_activations(lenet1, x, layers="keras")


@pytest.mark.parametrize("shape", [(16, 4, 28, 28), (8, 12, 15, 13), (4, 3, 7, 6)])
@pytest.mark.trains
def test_the_fast_max_pool_equals_torch_max_pool_in_values_and_gradients(shape) -> None:
    """MaxPool2 against nn.MaxPool2d(2): the same outputs without gradients (its two elementwise maxima; odd sizes
    floored), before and after a ReLU, and with gradients the same outputs and input gradients (torch's kernel)."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0), requires_grad=True)
    for f in (lambda t: t, torch.relu):
        ref = torch.nn.MaxPool2d(2)(f(x))
        (g_ref,) = torch.autograd.grad((ref * torch.arange(ref.numel()).view_as(ref)).sum(), x)
        out = nets.MaxPool2()(f(x))
        (g_out,) = torch.autograd.grad((out * torch.arange(out.numel()).view_as(out)).sum(), x)
        assert torch.equal(ref, out) and torch.equal(g_ref, g_out)
        with torch.no_grad():
            assert torch.equal(nets.MaxPool2()(f(x)), ref)


@pytest.mark.parametrize("arch", ["lenet1", "lenet5"])
@pytest.mark.trains
def test_models_are_built_channels_last_and_compute_what_the_default_layout_computes(arch) -> None:
    """nets.build lays every conv weight out channels last (nets.LAYOUT), the cached weights' key names the layout,
    and the model's logits and input gradients agree with the same weights in torch's default layout to rounding."""
    model = nets.build(arch, (1, 28, 28), 10, 0)
    plain = nets.MODELS[arch](1, 28, 10)
    plain.load_state_dict(model.state_dict())
    convs = [m.weight for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert convs and all(w.is_contiguous(memory_format=torch.channels_last) for w in convs)
    assert not convs[-1].is_contiguous()  # several input maps: channels last is not torch's default layout
    assert nets._untrained(arch, np.zeros((2, 1, 28, 28)), 10, 1, 0, "artifact")[1]["layout"] == "torch.channels_last"
    x = torch.rand(32, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    grads = []
    for net in (model, plain):
        xi = x.clone().requires_grad_(True)
        logits = net(xi)
        (g,) = torch.autograd.grad(torch.nn.functional.cross_entropy(logits, torch.arange(32) % 10), xi)
        grads.append((logits.detach(), g))
    (logits, g), (logits_plain, g_plain) = grads
    scale = g_plain.abs().max()
    assert scale > 0  # the gradients compared are not all zero
    assert torch.allclose(logits, logits_plain, atol=1e-5) and torch.allclose(g, g_plain, rtol=1e-4, atol=1e-4 * scale)


def test_lsa_keeps_a_density_when_a_class_has_linearly_dependent_units() -> None:
    """A unit that sums two others makes the class's covariance singular although every unit varies: LSA drops one
    unit and equals LSA on the independent units alone (any three of them span the same space with a transform of
    determinant 1, and the KDE's bandwidth follows the data's covariance)."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=(300, 3))
    train = np.column_stack([base, base[:, 0] + base[:, 1]])
    pred = np.zeros(300, dtype=int)
    test = rng.normal(size=(5, 3))
    # The premise: four units that vary, a covariance of rank 3. Whether SciPy's Cholesky then fails or passes on
    # rounding noise depends on the BLAS kernel the CPU picks (it failed on earlier CI machines and passed on an
    # AVX2-only EPYC, 2026-11-27), and LSA must not depend on which.
    assert np.linalg.matrix_rank(np.cov(train.T)) == 3 and (train.var(axis=0) > 0.5).all()
    values = surprise.lsa(train, pred, np.column_stack([test, test[:, 0] + test[:, 1]]), np.zeros(5, dtype=int))
    assert values == pytest.approx(surprise.lsa(base, pred, test, np.zeros(5, dtype=int)), rel=1e-9)


@pytest.mark.parametrize("arch", ["lenet1", "lenet5", "resnet20"])
def test_the_forward_pass_gives_the_logits_of_trace_without_its_summaries(arch) -> None:
    shape = (1, 28, 28) if arch.startswith("lenet") else (3, 32, 32)
    model = nets.build(arch, shape, 10, seed=0).eval()
    x = torch.as_tensor(np.random.default_rng(2).random((4, *shape)), dtype=torch.float32)
    with torch.no_grad():
        assert torch.equal(model(x), model.trace(x)[0])


@pytest.mark.parametrize("arch", ["lenet1", "lenet5"])
def test_one_forward_pass_gives_the_softmax_and_both_layer_sets_bit_for_bit(arch: str) -> None:
    """nets.outputs computes in one pass what predict_proba and neuron_activations (both layer sets) compute in
    three: the same values to the bit (so every entry keyed by those arrays is found again), over several batches."""
    x = np.random.default_rng(2).random((2_500, 1, 28, 28)).astype(np.float32)
    model = nets.build(arch, (1, 28, 28), 10, seed=0).eval()
    probs, ours, layer, theirs, their_layer = nets.outputs(model, x)
    assert np.array_equal(probs, nets.predict_proba(model, x))
    assert all(np.array_equal(a, b) for a, b in zip((ours, layer), nets.neuron_activations(model, x)))
    assert all(np.array_equal(a, b) for a, b in zip((theirs, their_layer),
                                                    nets.neuron_activations(model, x, layers="artifact")))  # fmt: skip


def test_seeded_order_is_lexsort_by_score_then_tie_break() -> None:
    """One stable sort over the tie-break order gives lexsort's two-key order exactly: distinct scores, many ties,
    all ties, infinities."""
    rng = np.random.default_rng(0)
    cases = [
        rng.random(3_000),
        rng.integers(0, 5, 3_000).astype(float),
        np.zeros(10),
        np.array([np.inf, -np.inf, 1, 1, 0]),
    ]
    for scores in cases:
        for seed in (0, 1, 7):
            tiebreak = np.random.default_rng(seed).permutation(scores.size)
            assert np.array_equal(prioritizers.seeded_order(scores, seed), np.lexsort((tiebreak, -scores)))
