"""Offline data and models: real files from the package registries, loaded without the Hub."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from repro import data, pretrained


def test_fashion_mnist_is_the_real_dataset() -> None:
    x, y = data.fashion_mnist("test")
    assert x.shape == (10_000, 28, 28) and x.dtype == np.uint8
    assert np.bincount(y).tolist() == [1000] * 10
    xtr, ytr = data.fashion_mnist("train")
    assert xtr.shape == (60_000, 28, 28) and np.bincount(ytr).tolist() == [6000] * 10


def test_read_idx_roundtrip(tmp_path) -> None:
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    path = tmp_path / "a-idx3-ubyte.gz"
    header = b"\x00\x00\x08\x03" + b"".join(d.to_bytes(4, "big") for d in arr.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(header + arr.tobytes())
    np.testing.assert_array_equal(data.read_idx(path), arr)


def test_bad_split_and_source_are_refused() -> None:
    with pytest.raises(ValueError, match="split"):
        data.fashion_mnist("valid")
    with pytest.raises(ValueError, match="source"):
        data.fashion_mnist("test", source="ftp")


def test_missing_model_package_names_the_fix() -> None:
    with pytest.raises(data.MissingDataError, match="make data"):
        pretrained.package_dir("no_such_model_package", "a model")


def test_smollm2_loads_offline_and_prefers_real_text() -> None:
    model, tok = pretrained.load_causal_lm("local")
    assert model.config.model_type == "llama" and model.num_parameters() > 100e6
    real, scrambled = pretrained.token_stats(
        model,
        tok,
        [
            "The cat sat on the mat and looked out of the window.",
            "window the of out looked and mat the on sat cat The.",
        ],
    )
    assert real.logprob.mean() > scrambled.logprob.mean() + 1.0
    assert len(real.logprob) == len(real.mu) == len(real.sigma) > 5


def test_token_stats_batching_masks_padding() -> None:
    model, tok = pretrained.load_causal_lm("local")
    texts = ["Short one.", "A much longer sentence that needs padding in a batch with the short one."]
    batched = pretrained.token_stats(model, tok, texts, batch_size=2)
    single = [pretrained.token_stats(model, tok, [t], batch_size=1)[0] for t in texts]
    for b, s in zip(batched, single):
        np.testing.assert_allclose(b.logprob, s.logprob, atol=1e-4)


def test_minilm_model_files_ship_in_the_package() -> None:
    path = pretrained.minilm_path("local")
    assert (path / "model.safetensors").stat().st_size > 80e6


def test_auto_source_offline_without_the_package_names_make_data(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(data, "FASHION_MNIST_DIR", tmp_path / "absent")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(data.MissingDataError, match="make data"):
        data.fashion_mnist("test")


def test_english_prose_keeps_prose_and_drops_other_scripts_brackets_and_digit_strings() -> None:
    from repro import data

    prose = ["Which of these sentences is sarcastic?", "The cat, who was hungry, ate the fish (quickly)."]
    assert data.is_english_prose(prose)
    assert not data.is_english_prose(["جمله زیر را ترجمه کنید", "این یک آزمون است"])  # Persian
    assert not data.is_english_prose(["( [ { } ] ) ( ( )", "[ [ ] ] { ( ) }"])  # Dyck brackets
    assert not data.is_english_prose(["12 + 45 = ", "903 * 7 = ", "17 - 4 ="])  # digit strings
    ascii_share, words = data.prose_shares(["Q: 12 + 4 = ?"])  # six tokens, one of them a word
    assert ascii_share == 1.0 and words == 1 / 6


def test_bigbench_tasks_are_english_prose() -> None:
    from repro import data

    try:
        tasks = data.bigbench_tasks(65)
    except data.MissingDataError:
        pytest.skip("run `make data` first")
    assert all(data.is_english_prose(t["inputs"]) for t in tasks.values())
    dropped = {"dyck_languages", "entailed_polarity_hindi", "parsinlu_qa", "modified_arithmetic", "cs_algorithms"}
    assert not dropped & set(tasks) and {"social_iqa", "causal_judgment"} <= set(tasks)


def test_length_batches_cover_every_index_once_in_batches_of_similar_length() -> None:
    import numpy as np

    from repro import training

    lengths = np.random.default_rng(0).integers(1, 500, size=1000)
    batches = training.length_batches(lengths, 32, np.random.default_rng(1), pool=10)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(1000)) and max(len(b) for b in batches) == 32
    spread = np.mean([np.ptp(lengths[b]) for b in batches])
    shuffled = np.random.default_rng(2).permutation(1000)
    plain = np.mean([np.ptp(lengths[shuffled[s : s + 32]]) for s in range(0, 1000, 32)])
    assert spread < plain / 5  # a batch pads to its longest input: similar lengths pad little
