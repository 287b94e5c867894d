"""Relative Mahalanobis Distance chapter: feature nets, OOD scores and analyses."""
