"""A mock Hugging Face Hub for tests: tiny fixtures behind the same `load_dataset` and `from_pretrained` calls.

With REPRO_MOCK_HUB naming a folder, `repro.start` calls `install_from_env()`, which patches
`datasets.load_dataset` and every transformers `from_pretrained` so that the Hub ids the book loads resolve
to local fixtures, built once (deterministically, in seconds, nothing downloaded) into that folder:

- datasets with the real schemas: config names, split names, column names, ClassLabel names, image sizes;
  a few rows each, generated from a fixed word list and seeded noise;
- models with the real architectures (LLaMA, GPT-2, RoBERTa, BERT, ViT) at tiny sizes (width 32, two layers,
  two heads), randomly initialised, with tokenizers of the real classes trained on fixture text.

Every other id or path goes to the real function untouched. `PAPER_SHRINK` holds, per notebook, the `-p`
overrides that keep `--profile paper` (the same code paths, data sets and models) to a few seconds on a CPU.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import string
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

MOCK_HUB_VAR = "REPRO_MOCK_HUB"
LAYOUT = "v3"  # bump when a fixture changes: fixtures are built once per layout
DONE = ".complete"

# ---------------------------------------------------------------------------------------------------- fixture text

_WORDS = """
time year people way day man thing woman life child world school state family student group country problem hand
part place case week company system program question work government number night point home water room mother
area money story fact month lot right study book eye job word business issue side kind head house service friend
father power hour game line end member law car city community name president team minute idea kid body information
back parent face others level office door health person art war history party result change morning reason research
girl guy moment air teacher force education river garden window market paper music island bridge village letter
make take come think look want give use find tell ask seem feel try leave call keep begin show hear play run move
live believe hold bring happen write provide sit stand lose pay meet include continue learn lead understand watch
good new first last long great little own other old big high different small large next early young important few
public bad same able late hard major better economic strong possible whole free military true federal
"""
WORDS = tuple(_WORDS.split())
CONNECTIVES = ("and", "but", "so", "because", "while", "when", "after", "before", "although", "since")


def _seed(key: str) -> int:
    """A stable 32-bit seed for one fixture (CRC-32 of its name)."""
    return zlib.crc32(key.encode())


def _rng(key: str) -> np.random.Generator:
    """The random generator of one fixture."""
    return np.random.default_rng(_seed(key))


def sentence(rng: np.random.Generator, low: int = 6, high: int = 14) -> str:
    """One capitalised sentence of fixture words, ending in a full stop."""
    words = [str(w) for w in rng.choice(WORDS, size=int(rng.integers(low, high + 1)))]
    if len(words) > 6:
        words.insert(int(rng.integers(3, len(words) - 2)), str(rng.choice(CONNECTIVES)))
    return " ".join(words).capitalize() + "."


def paragraph(rng: np.random.Generator, sentences: int) -> str:
    """`sentences` fixture sentences."""
    return " ".join(sentence(rng) for _ in range(sentences))


def words_text(rng: np.random.Generator, n_words: int) -> str:
    """Sentences adding up to about `n_words` words."""
    out: list[str] = []
    while sum(len(s.split()) for s in out) < n_words:
        out.append(sentence(rng))
    return " ".join(out)


def tokenizer_corpus() -> list[str]:
    """The text the mock tokenizers are trained on: fixture prose, every digit after a space, punctuation."""
    rng = _rng("tokenizer-corpus")
    digits = " ".join(string.digits)
    return (
        [paragraph(rng, 4) for _ in range(300)]
        + [f"My ID is : {digits} . {digits}"] * 200
        + [" ".join(string.ascii_letters + string.punctuation)] * 20
    )


# ---------------------------------------------------------------------------------------------------- datasets

FASHION_NAMES = (
    "T - shirt / top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
CIFAR10_NAMES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
_CIFAR100_NAMES = """
apple aquarium_fish baby bear beaver bed bee beetle bicycle bottle bowl boy bridge bus butterfly camel can castle
caterpillar cattle chair chimpanzee clock cloud cockroach couch cra crocodile cup dinosaur dolphin elephant flatfish
forest fox girl hamster house kangaroo keyboard lamp lawn_mower leopard lion lizard lobster man maple_tree motorcycle
mountain mouse mushroom oak_tree orange orchid otter palm_tree pear pickup_truck pine_tree plain plate poppy
porcupine possum rabbit raccoon ray road rocket rose sea seal shark shrew skunk skyscraper snail snake spider
squirrel streetcar sunflower sweet_pepper table tank telephone television tiger tractor train trout tulip turtle
wardrobe whale willow_tree wolf woman worm
"""
CIFAR100_NAMES = tuple(_CIFAR100_NAMES.split())  # the Hub copy's names, "cra" (sic) included
_CIFAR100_COARSE = """
aquatic_mammals fish flowers food_containers fruit_and_vegetables household_electrical_devices household_furniture
insects large_carnivores large_man-made_outdoor_things large_natural_outdoor_scenes large_omnivores_and_herbivores
medium_mammals non-insect_invertebrates people reptiles small_mammals trees vehicles_1 vehicles_2
"""
CIFAR100_COARSE = tuple(_CIFAR100_COARSE.split())
_CLINC_NAMES = """
restaurant_reviews nutrition_info account_blocked oil_change_how time weather redeem_rewards interest_rate gas_type
accept_reservations smart_home user_name report_lost_card repeat whisper_mode what_are_your_hobbies order jump_start
schedule_meeting meeting_schedule freeze_account what_song meaning_of_life restaurant_reservation traffic make_call
text bill_balance improve_credit_score change_language no measurement_conversion timer flip_coin do_you_have_pets
balance tell_joke last_maintenance exchange_rate uber car_rental credit_limit oos shopping_list expiration_date
routing meal_suggestion tire_change todo_list card_declined rewards_balance change_accent vaccines reminder_update
food_last change_ai_name bill_due who_do_you_work_for share_location international_visa calendar translate carry_on
book_flight insurance_change todo_list_update timezone cancel_reservation transactions credit_score report_fraud
spending_history directions spelling insurance what_is_your_name reminder where_are_you_from distance payday
flight_status find_phone greeting alarm order_status confirm_reservation cook_time damaged_card reset_settings
pin_change replacement_card_duration new_card roll_dice income taxes date who_made_you pto_request tire_pressure
how_old_are_you rollover_401k pto_request_status how_busy application_status recipe calendar_update play_music yes
direct_deposit credit_limit_change gas pay_bill ingredients_list lost_luggage goodbye what_can_i_ask_you book_hotel
are_you_a_bot next_song change_speed plug_type maybe w2 oil_change_when thank_you shopping_list_update pto_balance
order_checks travel_alert fun_fact sync_device schedule_maintenance apr transfer ingredient_substitution calories
current_location international_fees calculator definition next_holiday update_playlist mpg min_payment
change_user_name restaurant_suggestion travel_notification cancel pto_used travel_suggestion change_volume
"""
CLINC_NAMES = tuple(_CLINC_NAMES.split())  # ClassLabel order of clinc/clinc_oos "plus": 150 intents, "oos" at 42
WIKIMIA_LENGTHS = (32, 64, 128, 256)
IMAGE_ROWS = {"train": 120, "test": 120}  # per split of the 10-class image sets: 12 images per class


def _image(rng: np.random.Generator, label: int, size: int, channels: int) -> Any:
    """A PIL image of the real size: seeded noise plus a bright band whose height depends on the label."""
    from PIL import Image

    pixels = rng.integers(0, 128, size=(size, size, channels), dtype=np.uint8)
    band = slice(label * size // 12, label * size // 12 + size // 6)
    pixels[band] = np.minimum(pixels[band].astype(int) + 120, 255).astype(np.uint8)
    return Image.fromarray(pixels[..., 0] if channels == 1 else pixels, mode="L" if channels == 1 else "RGB")


def _balanced_labels(rng: np.random.Generator, n_classes: int, n: int) -> list[int]:
    """`n` labels cycling through every class, shuffled."""
    return [int(v) for v in rng.permutation(np.arange(n) % n_classes)]


def _image_set(
    key: str, image_col: str, labels: dict[str, tuple[str, ...]], size: int, channels: int, rows: dict[str, int]
) -> Any:
    """A DatasetDict of images and ClassLabel columns (the first column in `labels` decides the image)."""
    from datasets import ClassLabel, Dataset, DatasetDict, Features, Image

    features = Features({image_col: Image(), **{c: ClassLabel(names=list(n)) for c, n in labels.items()}})
    first, names = next(iter(labels.items()))
    parts = {}
    for split, n in rows.items():
        rng = _rng(f"{key}/{split}")
        ys = _balanced_labels(rng, len(names), n)
        columns: dict[str, list] = {image_col: [_image(rng, y % 10, size, channels) for y in ys], first: ys}
        for col, other in list(labels.items())[1:]:
            columns[col] = [y % len(other) for y in ys]
        parts[split] = Dataset.from_dict(columns, features=features)
    return DatasetDict(parts)


def _text_set(
    key: str, features: dict[str, Any], rows: dict[str, int], row: Callable[[np.random.Generator, int], dict[str, Any]]
) -> Any:
    """A DatasetDict whose rows come from `row(rng, i)`."""
    from datasets import Dataset, DatasetDict, Features

    parts = {}
    for split, n in rows.items():
        rng = _rng(f"{key}/{split}")
        records = [row(rng, i) for i in range(n)]
        parts[split] = Dataset.from_list(records, features=Features(features))
    return DatasetDict(parts)


def _mnist() -> dict[str, Any]:
    """ylecun/mnist: 28x28 greyscale digits."""
    return {"mnist": _image_set("mnist", "image", {"label": tuple(map(str, range(10)))}, 28, 1, IMAGE_ROWS)}


def _fashion_mnist() -> dict[str, Any]:
    """zalando-datasets/fashion_mnist: 28x28 greyscale garments."""
    return {"fashion_mnist": _image_set("fashion_mnist", "image", {"label": FASHION_NAMES}, 28, 1, IMAGE_ROWS)}


def _cifar10() -> dict[str, Any]:
    """uoft-cs/cifar10: 32x32 RGB in column `img`."""
    return {"plain_text": _image_set("cifar10", "img", {"label": CIFAR10_NAMES}, 32, 3, IMAGE_ROWS)}


def _cifar100() -> dict[str, Any]:
    """uoft-cs/cifar100: 32x32 RGB, fine and coarse labels; two training images per fine class."""
    labels = {"fine_label": CIFAR100_NAMES, "coarse_label": CIFAR100_COARSE}
    return {"cifar100": _image_set("cifar100", "img", labels, 32, 3, {"train": 200, "test": 100})}


def _svhn() -> dict[str, Any]:
    """ufldl-stanford/svhn, config cropped_digits: 32x32 RGB house-number digits."""
    rows = {**IMAGE_ROWS, "extra": 20}
    return {"cropped_digits": _image_set("svhn", "image", {"label": tuple(map(str, range(10)))}, 32, 3, rows)}


def _clinc_oos() -> dict[str, Any]:
    """clinc/clinc_oos, config plus: short queries over 151 intents (every intent in every split)."""
    from datasets import ClassLabel, Value

    features = {"text": Value("string"), "intent": ClassLabel(names=list(CLINC_NAMES))}
    n = len(CLINC_NAMES)

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        intent = i % n if i < 2 * n else CLINC_NAMES.index("oos")
        return {"text": f"{CLINC_NAMES[intent].replace('_', ' ')} {sentence(rng, 3, 8).lower()}", "intent": intent}

    return {"plus": _text_set("clinc_oos", features, {"train": 2 * n, "validation": n, "test": n + 20}, row)}


def _squadshifts() -> dict[str, Any]:
    """ludwigschmidt/squadshifts: four domains as configs, one "test" split of SQuAD-style rows."""
    from datasets import List, Value

    features = {
        "id": Value("string"),
        "title": Value("string"),
        "context": Value("string"),
        "question": Value("string"),
        "answers": {"text": List(Value("string")), "answer_start": List(Value("int32"))},
    }

    def rows(domain: str) -> Any:
        def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
            context = paragraph(rng, 2)
            return {
                "id": f"{domain}-{i}",
                "title": f"{domain} {i // 5}",
                "context": context,
                "question": f"{domain} {i}: {sentence(rng, 4, 9).lower().rstrip('.')}?",
                "answers": {"text": [context.split()[0]], "answer_start": [0]},
            }

        return _text_set(f"squadshifts-{domain}", features, {"test": 80}, row)

    return {domain: rows(domain) for domain in ("new_wiki", "nyt", "reddit", "amazon")}


def _boolq() -> dict[str, Any]:
    """google/boolq: question, boolean answer, passage."""
    from datasets import Value

    features = {"question": Value("string"), "answer": Value("bool"), "passage": Value("string")}

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        return {
            "question": sentence(rng, 4, 8).lower().rstrip("."),
            "answer": bool(i % 2),
            "passage": paragraph(rng, 2),
        }

    return {"default": _text_set("boolq", features, {"train": 24, "validation": 8}, row)}


def _commonsense_qa() -> dict[str, Any]:
    """tau/commonsense_qa: question, five lettered choices, answerKey (empty in the test split, as on the Hub)."""
    from datasets import List, Value

    features = {
        "id": Value("string"),
        "question": Value("string"),
        "question_concept": Value("string"),
        "choices": {"label": List(Value("string")), "text": List(Value("string"))},
        "answerKey": Value("string"),
    }

    def row(rng: np.random.Generator, i: int, test: bool = False) -> dict[str, Any]:
        labels = list("ABCDE")
        return {
            "id": f"{_seed(str(rng.random())):08x}",
            "question": sentence(rng, 6, 10).rstrip(".") + "?",
            "question_concept": str(rng.choice(WORDS)),
            "choices": {"label": labels, "text": [str(w) for w in rng.choice(WORDS, 5, replace=False)]},
            "answerKey": "" if test else labels[i % 5],
        }

    sets = _text_set("commonsense_qa", features, {"train": 24, "validation": 8}, row)
    sets["test"] = _text_set("commonsense_qa", features, {"test": 8}, functools.partial(row, test=True))["test"]
    return {"default": sets}


def _imdb() -> dict[str, Any]:
    """stanfordnlp/imdb: reviews (with the <br /> breaks of the real ones) and neg/pos labels."""
    from datasets import ClassLabel, Value

    features = {"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])}

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        return {"text": f"{paragraph(rng, 3)}<br /><br />{paragraph(rng, 3)}", "label": i % 2}

    return {"plain_text": _text_set("imdb", features, {"train": 24, "test": 8, "unsupervised": 8}, row)}


def _truthful_qa() -> dict[str, Any]:
    """truthfulqa/truthful_qa, config generation: questions with their best and other answers."""
    from datasets import List, Value

    features = {
        "type": Value("string"),
        "category": Value("string"),
        "question": Value("string"),
        "best_answer": Value("string"),
        "correct_answers": List(Value("string")),
        "incorrect_answers": List(Value("string")),
        "source": Value("string"),
    }

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        best = sentence(rng, 5, 10)
        return {
            "type": "Adversarial" if i % 2 else "Non-Adversarial",
            "category": str(rng.choice(WORDS)).title(),
            "question": sentence(rng, 5, 9).rstrip(".") + "?",
            "best_answer": best,
            "correct_answers": [best, sentence(rng)],
            "incorrect_answers": [sentence(rng), sentence(rng)],
            "source": f"https://en.wikipedia.org/wiki/{rng.choice(WORDS)}",
        }

    return {"generation": _text_set("truthful_qa", features, {"validation": 24}, row)}


def _redpajama_sample() -> dict[str, Any]:
    """togethercomputer/RedPajama-Data-1T-Sample: web documents with a JSON `meta` string."""
    from datasets import Value

    features = {"text": Value("string"), "meta": Value("string")}

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        return {"text": words_text(rng, int(rng.integers(40, 120))), "meta": json.dumps({"source": "mock", "id": i})}

    return {"plain_text": _text_set("redpajama", features, {"train": 64}, row)}


PILE_SETS = ("Pile-CC", "Wikipedia (en)", "PubMed Abstracts", "StackExchange", "Github", "FreeLaw")


def _pile_uncopyrighted() -> dict[str, Any]:
    """monology/pile-uncopyrighted: documents with `meta.pile_set_name`, the domain; each domain leans on its own words."""
    from datasets import Value

    features = {"text": Value("string"), "meta": {"pile_set_name": Value("string")}}

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        j = i % len(PILE_SETS)
        own = WORDS[j * 7 : j * 7 + 7]
        text = " ".join(
            str(rng.choice(own)) if rng.random() < 0.3 else w
            for w in words_text(rng, int(rng.integers(40, 90))).split()
        )
        return {"text": text, "meta": {"pile_set_name": PILE_SETS[j]}}

    return {"default": _text_set("pile", features, {"train": 40 * len(PILE_SETS)}, row)}


def _news_august_2023() -> dict[str, Any]:
    """RealTimeData/News_August_2023: news articles (body in `maintext`)."""
    from datasets import Value

    features = {
        "title": Value("string"),
        "description": Value("string"),
        "maintext": Value("string"),
        "date_publish": Value("string"),
        "source_domain": Value("string"),
        "url": Value("string"),
    }

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        return {
            "title": sentence(rng, 4, 8).rstrip("."),
            "description": sentence(rng),
            "maintext": words_text(rng, int(rng.integers(40, 90))),
            "date_publish": f"2023-08-{1 + i % 28:02d}",
            "source_domain": "news.example.com",
            "url": f"https://news.example.com/{i}",
        }

    return {"default": _text_set("news_august_2023", features, {"train": 48}, row)}


def _wikimia() -> dict[str, Any]:
    """swj0419/WikiMIA: one split per text length, `input` and `label` (1 member, 0 non-member)."""
    from datasets import Value

    features = {"input": Value("string"), "label": Value("int64")}
    rows = {f"WikiMIA_length{n}": 8 for n in WIKIMIA_LENGTHS}

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        return {"input": words_text(rng, 24), "label": i % 2}

    return {"default": _text_set("wikimia", features, rows, row)}


def _multi_woz_v22() -> dict[str, Any]:
    """pfb30/multi_woz_v22, config v2.2: dialogues with services and turns (speaker USER/SYSTEM, utterance)."""
    from datasets import ClassLabel, List, Value

    features = {
        "dialogue_id": Value("string"),
        "services": List(Value("string")),
        "turns": {
            "turn_id": List(Value("string")),
            "speaker": List(ClassLabel(names=["USER", "SYSTEM"])),
            "utterance": List(Value("string")),
        },
    }

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        n = int(rng.integers(2, 6))
        return {
            "dialogue_id": f"MUL{i:04d}.json",
            "services": ["restaurant"],
            "turns": {
                "turn_id": [str(t) for t in range(n)],
                "speaker": [t % 2 for t in range(n)],
                "utterance": [sentence(rng) for _ in range(n)],
            },
        }

    return {"v2.2": _text_set("multi_woz_v22", features, {"train": 8, "validation": 4, "test": 4}, row)}


def _summaries(key: str, text: str, summary: str, rows: dict[str, int], id_col: str | None = "id") -> Any:
    """A summarization set: a multi-sentence text, a one-sentence summary drawn from it, an id."""
    from datasets import Value

    features = {text: Value("string"), summary: Value("string")} | ({id_col: Value("string")} if id_col else {})

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        body = paragraph(rng, int(rng.integers(3, 7)))
        return {text: body, summary: body.split(". ")[0].rstrip(".") + "."} | ({id_col: f"{key}-{i}"} if id_col else {})

    return _text_set(key, features, rows, row)


def _xsum() -> dict[str, Any]:
    """EdinburghNLP/xsum: BBC articles (`document`), one-sentence `summary`, `id`."""
    return {"default": _summaries("xsum", "document", "summary", {"train": 40, "validation": 8, "test": 24})}


def _cnn_dailymail() -> dict[str, Any]:
    """abisee/cnn_dailymail, config 3.0.0: `article`, `highlights`, `id`."""
    return {"3.0.0": _summaries("cnn_dailymail", "article", "highlights", {"train": 8, "validation": 8, "test": 24})}


def _reddit_tifu() -> dict[str, Any]:
    """ctr4si/reddit_tifu, config long: one `train` split; `documents`, `tldr`, `title` and vote counts, no id."""
    from datasets import Value

    features = {
        "ups": Value("float32"),
        "num_comments": Value("float32"),
        "upvote_ratio": Value("float32"),
        "score": Value("float32"),
        "documents": Value("string"),
        "tldr": Value("string"),
        "title": Value("string"),
    }

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        body = paragraph(rng, int(rng.integers(3, 6))).lower()
        votes = float(rng.integers(0, 500))
        tldr, title = sentence(rng).lower(), sentence(rng, 3, 6).lower()
        return {"ups": votes, "num_comments": 3.0, "upvote_ratio": 0.9, "score": votes} | {
            "documents": body,
            "tldr": tldr,
            "title": title,
        }

    return {"long": _text_set("reddit_tifu", features, {"train": 24}, row)}


def _samsum() -> dict[str, Any]:
    """Samsung/samsum: messenger-style `dialogue` lines, `summary`, `id`."""
    from datasets import Value

    features = {"id": Value("string"), "dialogue": Value("string"), "summary": Value("string")}

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        turns = [f"{('Anna', 'Tom')[t % 2]}: {sentence(rng, 3, 8)}" for t in range(int(rng.integers(3, 7)))]
        return {"id": f"1380{i:04d}", "dialogue": "\r\n".join(turns), "summary": sentence(rng)}

    return {"default": _text_set("samsum", features, {"train": 8, "validation": 8, "test": 24}, row)}


def _c4() -> dict[str, Any]:
    """allenai/c4, config en: web `text` with `timestamp` and `url` (streamed by the book)."""
    from datasets import Value

    features = {"text": Value("string"), "timestamp": Value("string"), "url": Value("string")}

    def row(rng: np.random.Generator, i: int) -> dict[str, Any]:
        return {"text": paragraph(rng, int(rng.integers(2, 6))), "timestamp": "2019-04-25T12:57:54Z"} | {
            "url": f"https://web.example.com/{i}"
        }

    return {"en": _text_set("c4", features, {"train": 8, "validation": 48}, row)}


# Hub id -> builder of {config: DatasetDict}; the first config is the one load_dataset takes without a name.
DATASETS: dict[str, Callable[[], dict[str, Any]]] = {
    "ylecun/mnist": _mnist,
    "zalando-datasets/fashion_mnist": _fashion_mnist,
    "uoft-cs/cifar10": _cifar10,
    "uoft-cs/cifar100": _cifar100,
    "ufldl-stanford/svhn": _svhn,
    "clinc/clinc_oos": _clinc_oos,
    "ludwigschmidt/squadshifts": _squadshifts,
    "google/boolq": _boolq,
    "tau/commonsense_qa": _commonsense_qa,
    "stanfordnlp/imdb": _imdb,
    "truthfulqa/truthful_qa": _truthful_qa,
    "togethercomputer/RedPajama-Data-1T-Sample": _redpajama_sample,
    "RealTimeData/News_August_2023": _news_august_2023,
    "monology/pile-uncopyrighted": _pile_uncopyrighted,
    "swj0419/WikiMIA": _wikimia,
    "pfb30/multi_woz_v22": _multi_woz_v22,
    "EdinburghNLP/xsum": _xsum,
    "abisee/cnn_dailymail": _cnn_dailymail,
    "ctr4si/reddit_tifu": _reddit_tifu,
    "Samsung/samsum": _samsum,
    "allenai/c4": _c4,
}

# ---------------------------------------------------------------------------------------------------- tokenizers

TINY = {"hidden": 32, "layers": 2, "heads": 2, "inner": 64}


def _trained_bpe(pre_tokenizer: Any, special: list[str], vocab_size: int, byte_level: bool) -> tuple[dict, list]:
    """(vocab, merges) of a BPE trained on tokenizer_corpus() behind `pre_tokenizer`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    alphabet = pre_tokenizers.ByteLevel.alphabet() if byte_level else sorted(set("".join(tokenizer_corpus())))
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special, initial_alphabet=alphabet, show_progress=False
    )
    tok.train_from_iterator(tokenizer_corpus(), trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return model["vocab"], merges


@functools.cache
def _byte_level_bpe(special: tuple[str, ...]) -> tuple[dict, list]:
    """GPT-2-style byte-level BPE (the space is Ġ); every ' d' digit piece is one token."""
    from tokenizers import pre_tokenizers

    vocab, merges = _trained_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False), list(special), 700, True)
    missing = [d for d in string.digits if f"Ġ{d}" not in vocab]
    if missing:
        raise RuntimeError(f"mock GPT-2 BPE lacks the single-token digits {missing}")
    return vocab, merges


@functools.cache
def _sentencepiece_bpe() -> tuple[dict, list]:
    """LLaMA-style BPE (the space is ▁) with <unk> <s> </s> and the 256 byte-fallback tokens first."""
    from tokenizers import pre_tokenizers

    special = ["<unk>", "<s>", "</s>"]
    metaspace = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    trained, merges = _trained_bpe(metaspace, special, 700, False)
    pieces = special + [f"<0x{b:02X}>" for b in range(256)]
    pieces += [t for t, _ in sorted(trained.items(), key=lambda kv: kv[1]) if t not in special]
    return {t: i for i, t in enumerate(pieces)}, merges


def gpt2_tokenizer() -> Any:
    """distilgpt2's tokenizer class (GPT2Tokenizer) with <|endoftext|> as bos, eos and unk."""
    from transformers import GPT2Tokenizer

    vocab, merges = _byte_level_bpe(("<|endoftext|>",))
    return GPT2Tokenizer(vocab=dict(vocab), merges=list(merges), model_max_length=1024)


def smollm2_tokenizer() -> Any:
    """SmolLM2's tokenizer class (GPT2Tokenizer) and special tokens (<|im_start|> bos, <|im_end|> eos and pad, and
    <repo_name>, which the CRT chapter's SmolVocab uses as padding)."""
    from transformers import GPT2Tokenizer

    vocab, merges = _byte_level_bpe(("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>"))
    return GPT2Tokenizer(
        vocab=dict(vocab),
        merges=list(merges),
        unk_token="<|endoftext|>",
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        model_max_length=8192,
    )


def llama_tokenizer() -> Any:
    """LLaMA's tokenizer class (LlamaTokenizer: Metaspace BPE with byte fallback), <s> bos, </s> eos, no pad."""
    from transformers import LlamaTokenizer

    vocab, merges = _sentencepiece_bpe()
    return LlamaTokenizer(
        vocab=dict(vocab), merges=list(merges), add_bos_token=True, add_eos_token=False, model_max_length=2048
    )


def roberta_tokenizer() -> Any:
    """roberta-base's tokenizer class (RobertaTokenizer): byte-level BPE, <s> <pad> </s> <unk> first, <mask> last."""
    from transformers import RobertaTokenizer

    vocab, merges = _byte_level_bpe(("<s>", "<pad>", "</s>", "<unk>"))
    return RobertaTokenizer(vocab={**vocab, "<mask>": len(vocab)}, merges=list(merges), model_max_length=512)


def bert_tokenizer() -> Any:
    """bert-base-uncased's tokenizer class (BertTokenizer, lower case): WordPiece over characters and fixture words."""
    from transformers import BertTokenizer

    chars = sorted(set("".join(tokenizer_corpus()).lower()) - {" "})
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars)]
    pieces += sorted(set(WORDS) | set(CONNECTIVES) - set(pieces))
    return BertTokenizer(vocab={t: i for i, t in enumerate(pieces)}, model_max_length=512)


# ---------------------------------------------------------------------------------------------------- models


def _llama(path: Path, tokenizer: Any, tie: bool) -> None:
    """A tiny LlamaForCausalLM over `tokenizer`."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=TINY["hidden"],
        intermediate_size=TINY["inner"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        num_key_value_heads=TINY["heads"],
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=tie,
    )
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def _smollm2(path: Path) -> None:
    """HuggingFaceTB/SmolLM2-135M-Instruct: LLaMA architecture, tied embeddings, GPT-2-style BPE."""
    _llama(path, smollm2_tokenizer(), tie=True)


def _llama_base(path: Path) -> None:
    """huggyllama/llama-7b and openlm-research/open_llama_3b: LLaMA architecture and tokenizer."""
    _llama(path, llama_tokenizer(), tie=False)


def _distilgpt2(path: Path) -> None:
    """distilgpt2: GPT2LMHeadModel with gelu_new and 1024 positions; one layer, as the CRT chapter scores 10^6
    canary candidates with every trained copy."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = gpt2_tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=1024,
        n_embd=TINY["hidden"],
        n_layer=1,
        n_head=TINY["heads"],
        activation_function="gelu_new",
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def _roberta(path: Path) -> None:
    """roberta-base: RobertaForMaskedLM (the Neighbor attack's word swapper)."""
    from transformers import RobertaConfig, RobertaForMaskedLM

    tokenizer = roberta_tokenizer()
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=TINY["hidden"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["inner"],
        max_position_embeddings=514,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    RobertaForMaskedLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def _bert(path: Path, masked_lm: bool) -> None:
    """A BERT encoder: BertForMaskedLM as bert-base-uncased ships, or a bare BertModel as all-MiniLM-L6-v2 does."""
    from transformers import BertConfig, BertForMaskedLM, BertModel

    tokenizer = bert_tokenizer()
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=TINY["hidden"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["inner"],
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
    )
    (BertForMaskedLM if masked_lm else BertModel)(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def _vit_in21k(path: Path) -> None:
    """google/vit-base-patch16-224-in21k: ViTModel on 224x224 inputs in 16x16 patches, its preprocessor config."""
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(
        image_size=224,
        patch_size=16,
        num_channels=3,
        hidden_size=TINY["hidden"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["inner"],
    )
    ViTModel(config).save_pretrained(path)
    (path / "preprocessor_config.json").write_text(
        json.dumps(
            {
                "do_normalize": True,
                "do_resize": True,
                "feature_extractor_type": "ViTFeatureExtractor",
                "image_mean": [0.5, 0.5, 0.5],
                "image_std": [0.5, 0.5, 0.5],
                "resample": 2,
                "size": 224,
            },
            indent=2,
        )
    )


def _pegasus(path: Path) -> None:
    """google/pegasus-xsum: PegasusForConditionalGeneration (pad 0 starts the decoder, EOS 1) behind a byte-level BPE
    with <pad> </s> <unk> first (the real SentencePiece model cannot be built offline)."""
    from transformers import GPT2Tokenizer, PegasusConfig, PegasusForConditionalGeneration

    vocab, merges = _byte_level_bpe(("<pad>", "</s>", "<unk>"))
    tokenizer = GPT2Tokenizer(
        vocab=dict(vocab),
        merges=list(merges),
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        bos_token="</s>",
        model_max_length=512,
    )
    config = PegasusConfig(
        vocab_size=len(tokenizer),
        d_model=TINY["hidden"],
        encoder_layers=TINY["layers"],
        decoder_layers=TINY["layers"],
        encoder_attention_heads=TINY["heads"],
        decoder_attention_heads=TINY["heads"],
        encoder_ffn_dim=TINY["inner"],
        decoder_ffn_dim=TINY["inner"],
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
        forced_eos_token_id=tokenizer.eos_token_id,
    )
    PegasusForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


# Hub id (and its aliases) -> builder of the saved model folder.
MODELS: dict[str, Callable[[Path], None]] = {
    "HuggingFaceTB/SmolLM2-135M-Instruct": _smollm2,
    "huggyllama/llama-7b": _llama_base,
    "openlm-research/open_llama_3b": _llama_base,
    "distilgpt2": _distilgpt2,
    "distilbert/distilgpt2": _distilgpt2,
    "roberta-base": _roberta,
    "FacebookAI/roberta-base": _roberta,
    "bert-base-uncased": functools.partial(_bert, masked_lm=True),
    "google-bert/bert-base-uncased": functools.partial(_bert, masked_lm=True),
    "sentence-transformers/all-MiniLM-L6-v2": functools.partial(_bert, masked_lm=False),
    "google/vit-base-patch16-224-in21k": _vit_in21k,
    "google/pegasus-xsum": _pegasus,
}

# ---------------------------------------------------------------------------------------------------- building


def hub_root(root: str | Path | None = None) -> Path:
    """The mock Hub folder: `root`, else $REPRO_MOCK_HUB."""
    where = root if root is not None else os.environ.get(MOCK_HUB_VAR)
    if not where:
        raise RuntimeError(f"no mock Hub folder: pass one or set {MOCK_HUB_VAR}")
    return Path(where)


def fixture_dir(kind: str, hub_id: str, root: str | Path | None = None) -> Path:
    """Where the fixture of one Hub id lives: <root>/<layout>/<datasets|models>/<owner--name>."""
    return hub_root(root) / LAYOUT / kind / hub_id.replace("/", "--")


@contextmanager
def _quiet() -> Iterator[None]:
    """No progress bars from datasets and transformers while fixtures are written."""
    from datasets.utils import logging as datasets_logging
    from transformers.utils import logging as transformers_logging

    shown = datasets_logging.is_progress_bar_enabled(), transformers_logging.is_progress_bar_enabled()
    datasets_logging.disable_progress_bar()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown[0]:
            datasets_logging.enable_progress_bar()
        if shown[1]:
            transformers_logging.enable_progress_bar()


@contextmanager
def _build_lock(root: Path) -> Iterator[None]:
    """Serialise fixture builds across processes (a test session and notebook kernels)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".build.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure(kind: str, hub_id: str, root: str | Path | None = None) -> Path:
    """The fixture folder of one Hub id ('datasets' or 'models'), built first if it is missing."""
    import torch

    from .atomic import atomic_dir

    builders: dict[str, Callable] = DATASETS if kind == "datasets" else MODELS
    if hub_id not in builders:
        raise KeyError(f"the mock Hub has no {kind[:-1]} {hub_id!r}")
    target = fixture_dir(kind, hub_id, root)
    if (target / DONE).exists():
        return target
    with _build_lock(hub_root(root)):
        if (target / DONE).exists():
            return target
        with atomic_dir(target) as tmp, _quiet():
            if kind == "datasets":
                configs = builders[hub_id]()
                for config, parts in configs.items():
                    parts.save_to_disk(str(tmp / config))
                (tmp / "configs.json").write_text(json.dumps(list(configs)))
            else:
                with torch.random.fork_rng():
                    torch.manual_seed(_seed(hub_id))
                    builders[hub_id](tmp)
            (tmp / DONE).write_text("")
    return target


def build_all(root: str | Path | None = None) -> Path:
    """Build every dataset and model fixture (idempotent); returns the mock Hub folder."""
    for hub_id in DATASETS:
        ensure("datasets", hub_id, root)
    for hub_id in MODELS:
        ensure("models", hub_id, root)
    return hub_root(root)


# ---------------------------------------------------------------------------------------------------- serving

_PATCHES: list[tuple[Any, str, Any]] = []  # (owner, attribute, original) of every patch in place
_SERVED: dict[str, Path] = {}  # "root": the mock Hub folder being served


def load_fixture(
    path: str,
    name: str | None = None,
    data_dir: str | None = None,
    data_files: Any = None,
    split: Any = None,
    streaming: bool = False,
    root: str | Path | None = None,
    **_: Any,
) -> Any:
    """What `datasets.load_dataset(path, name, split=..., streaming=...)` returns for a mock Hub dataset."""
    from datasets import IterableDatasetDict, load_from_disk

    if data_dir is not None or data_files is not None:
        raise ValueError(f"the mock Hub serves whole configs of {path}: data_dir and data_files are not supported")
    folder = ensure("datasets", path, root)
    configs = json.loads((folder / "configs.json").read_text())
    config = name or configs[0]
    if config not in configs:
        raise ValueError(f"BuilderConfig '{config}' not found. Available: {configs}")
    parts = load_from_disk(str(folder / config))
    if streaming:
        parts = IterableDatasetDict({k: v.to_iterable_dataset() for k, v in parts.items()})
    if split is None:
        return parts
    if str(split) not in parts:
        raise ValueError(f'Unknown split "{split}". Should be one of {list(parts)}.')
    return parts[str(split)]


def resolve_model(name: Any) -> Any:
    """A mock Hub model id as its fixture folder (while installed); any other id or path unchanged."""
    if _SERVED and isinstance(name, str) and name in MODELS and not Path(name).exists():
        return str(ensure("models", name, _SERVED["root"]))
    return name


def _mock_load_dataset(original: Callable) -> Callable:
    """`original` (datasets.load_dataset) with the mock Hub's ids answered from their fixtures."""

    @functools.wraps(original)
    def load_dataset(path: Any, *args: Any, **kwargs: Any) -> Any:
        if not (_SERVED and isinstance(path, str) and path in DATASETS):
            return original(path, *args, **kwargs)
        return load_fixture(path, *args, root=_SERVED["root"], **kwargs)

    return load_dataset


def _mock_from_pretrained(original: classmethod) -> classmethod:
    """A `from_pretrained` classmethod that first maps a mock Hub id (and a `config=` id) to its fixture folder."""
    func = original.__func__

    @functools.wraps(func)
    def from_pretrained(cls: type, pretrained_model_name_or_path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(kwargs.get("config"), str):
            kwargs["config"] = resolve_model(kwargs["config"])
        return func(cls, resolve_model(pretrained_model_name_or_path), *args, **kwargs)

    return classmethod(from_pretrained)


def _from_pretrained_owners() -> list[type]:
    """Every transformers class that defines its own `from_pretrained`: the Auto* classes and the base classes."""
    import transformers

    names = [n for n in dir(transformers) if n.startswith("Auto")]
    names += [
        "PreTrainedModel",
        "PreTrainedConfig",
        "PretrainedConfig",
        "PreTrainedTokenizerBase",
        "ImageProcessingMixin",
        "FeatureExtractionMixin",
        "ProcessorMixin",
        "GenerationConfig",
    ]
    from transformers.models.auto.auto_factory import _BaseAutoModelClass

    owners: list[type] = [_BaseAutoModelClass]
    for name in names:
        try:
            owner = getattr(transformers, name)
        except Exception:  # an Auto class whose optional backend is missing is not served
            continue
        if isinstance(owner, type) and isinstance(owner.__dict__.get("from_pretrained"), classmethod):
            owners.append(owner)
    return list(dict.fromkeys(owners))


def install(root: str | Path | None = None) -> Path:
    """Serve the mock Hub from `root` (default $REPRO_MOCK_HUB) through load_dataset and every from_pretrained."""
    import datasets
    import datasets.load

    _SERVED["root"] = hub_root(root)
    if _PATCHES:
        return _SERVED["root"]
    for owner in (datasets, datasets.load):
        _PATCHES.append((owner, "load_dataset", owner.load_dataset))
        owner.load_dataset = _mock_load_dataset(owner.load_dataset)
    for owner in _from_pretrained_owners():
        original = owner.__dict__["from_pretrained"]
        _PATCHES.append((owner, "from_pretrained", original))
        owner.from_pretrained = _mock_from_pretrained(original)
    return _SERVED["root"]


def uninstall() -> None:
    """Undo install(): the real load_dataset and from_pretrained again."""
    while _PATCHES:
        owner, attribute, original = _PATCHES.pop()
        setattr(owner, attribute, original)
    _SERVED.clear()


def installed() -> bool:
    """Whether the mock Hub is being served in this process."""
    return bool(_PATCHES)


def install_from_env() -> None:
    """Called by repro.start: install the mock Hub when $REPRO_MOCK_HUB names a folder, and say so."""
    if os.environ.get(MOCK_HUB_VAR):
        root = install()
        print(
            f"{MOCK_HUB_VAR} is set: Hub datasets and models come from tiny random fixtures in {root}; "
            "the numbers below test the code paths, not the papers."
        )


@contextmanager
def served(root: str | Path) -> Iterator[Path]:
    """The mock Hub served from `root` (built first) in this process for the duration of the block."""
    build_all(root)
    try:
        yield install(root)
    finally:
        uninstall()


# ---------------------------------------------------------------------------------------------------- paper runs

# -p overrides that run each notebook at --profile paper (same branches, data sets and models) in seconds on a CPU.
PAPER_SHRINK: dict[str, dict[str, Any]] = {
    "clm_ood": {
        "n_fit": 16,
        "n_background": 16,
        "n_test": 12,
        "n_ood": 8,
        "article_tokens": 48,
        "summary_tokens": 6,
        "ngram_orders": [1, 2],
        "n_boot": 50,
    },
    "data_selection": {
        "docs_per_domain": 30,
        "target_docs": 6,
        "eval_docs": 6,
        "select_sizes": [10, 20],
        "min_length": 10,
        "dsir_seeds": 2,
        "doremi_seeds": 2,
        "vocab_size": 256,
        "lm_dim": 16,
        "main_dim": 32,  # DoReMi's main models, wider than the proxy as the paper's are (its 2048 took about 60 s)
        "lm_layers": 1,
        "block_size": 16,
        "batch_size": 4,
        "dsir_steps": 3,
        "proxy_steps": 6,
        "doremi_steps": 6,
        "eval_every": 2,
    },
    "metrics_by_hand": {"toy_n": 200},
    "deepgini_apfd": {
        # four of the paper's eight pairs: each of its four datasets and each of its four architectures once
        "pairs": ["mnist:lenet1", "cifar10:vgg16", "fashion_mnist:resnet20", "svhn:lenet5"],
        "n_train": 100,
        # VGG16 is the mock's cost: after one training step its batch-norm statistics leave every output the same,
        # so no attack ever succeeds and each runs to its end. FGSM's minimal search predicts every image at each of
        # its 100 steps (28 s at 30 images, 13 s at 10), BIM 8 s, JSMA 18 s and C&W 9 s on one image.
        "n_test": 10,
        "epochs": 1,
        "jsma_images": 1,
        "cw_images": 1,
        "ablation_images": 5,
        "kmnc_k": [10],
        "sa_train": 50,
        "scaling_sizes": [100, 200],
        "cost_repeats": 1,
        "cost_rounds": 1,  # rounds of both forward passes over four architectures, per process
        "cost_processes": 2,
        "alone_repeats": 2,  # the paper's 100 rounds in each of 5 fresh processes (a process starts in about 5 s)
        "alone_processes": 2,
        "naive_n": 50,
        "retrain_percents": [3],
        "retrain_epochs": 1,
        "retrain_seeds": 2,
        "iterative_pairs": 0,  # the iterative protocol runs at smoke; here it retrained VGG16 and ResNet20 for 37 s
        "models_per_pair": 1,  # the further models' path runs at smoke (2 models per pair)
        "n_boot": 50,
    },
    "rmd_near_ood": {
        "n_seeds": 1,
        "n_per_class": 20,
        "n_test_per_class": 10,
        "feat_dim": 16,
        "cnn_epochs": 1,
        "ae_epochs": 1,
        "text_epochs": 1,
        "text_per_domain": 25,
        "ridges": [1e-4],
        "direction_counts": [1, 9],
        "pc_ks": [2, 8],
        "bench_dims": [16],
        "bench_classes": [10],
        "clp_members": 1,
        "clp_per_class": 10,
        "n_boot": 50,
    },
    "crt_canary_exposure": {
        "n_dialogues": 20,
        "n_test": 10,
        "n_val": 6,
        "dp_lrs": [1.0, 10.0],
        "gpt_dp_lrs": [5e-4, 1e-3],
        "canary_copies": 2,
        "gammas": [0.0, 0.5],
        "emb": 8,
        "hidden": 8,
        "epochs": 1,
        "gpt_epochs": 1,
        "gpt_gammas": [0.0, 0.5],
        "n_seeds": 1,
        "crt_epochs": 1,
        "crt_batch": 8,
        "n_null": 50,
        "arm_epochs": 1,
        "arm_test": 10,
        "arm_dialogues": 6,
        "n_mia": 20,
        "n_groups": 10,
    },
    "mink_contamination": {
        "seeds": 2,
        "n_members": 4,
        "review_words": 30,
        "background_tokens": 200,
        "burn_in_tokens": 128,
        "sizes_count": "background",  # sizes this small count the background (the contaminants alone exceed them)
        "block_size": 32,
        "batch_size": 2,
        "n_nonmembers": 6,
        "size_background": [64, 256],
        "indist_background": [64, 256],
        "indist_members": 4,
        "freq_background": 100,
        "n_neighbors": 2,
        "max_length": 64,
        "score_batch": 8,
    },
}


def cli_flags(stem: str) -> str:
    """PAPER_SHRINK[stem] as `-p NAME VALUE` flags for `python -m repro run`."""
    return " ".join(f"-p {k} '{json.dumps(v)}'" for k, v in PAPER_SHRINK[stem].items())


def main(argv: list[str] | None = None) -> int:
    """`python -m repro.mockhub [DIR]`: build the fixtures (DIR, else $REPRO_MOCK_HUB) and print the run commands."""
    args = sys.argv[1:] if argv is None else argv
    root = build_all(args[0] if args else None).resolve()
    for stem in PAPER_SHRINK:
        print(
            f"{MOCK_HUB_VAR}={root} REPRO_DATA={root / 'data'} REPRO_RUNS={root / 'runs'} "
            f"python -m repro run {stem} --profile paper {cli_flags(stem)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
