"""Replayable scenarios (docs/scenarios.md): model, loader, runner, verdict, trace, seeded."""
