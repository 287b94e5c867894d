"""Min-K% Prob chapter: contaminated corpora, detectors, continued pretraining."""
