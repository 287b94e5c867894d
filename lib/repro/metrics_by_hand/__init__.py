"""The metrics chapter: its parameters and its claim register (the worked examples and two small checks)."""
