"""CRT chapter: CustomerSim, redaction, accounting, language models, trainers, canaries, attacks."""
