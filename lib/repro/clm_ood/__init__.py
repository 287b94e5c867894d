"""Ren et al. (ICLR 2023): OOD detection and selective generation for conditional language models."""
