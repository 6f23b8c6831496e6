"""Runs of the reference engine: channels, wallets, sessions, workers (docs/runs.md)."""
