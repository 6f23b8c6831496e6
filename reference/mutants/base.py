"""What every mutant is built from: the reference app around one replaced seam.

`build_app` hands in the wiring a target needs (the clock, the model provider's transport);
factories never see it, so a mutant of budgets and one of runs are built the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from fastapi import FastAPI

from arck.reference.app import create_app
from arck.reference.engine import Engine
from arck.reference.projection import Projector

__all__ = ["serve", "wired"]

_WIRING: ContextVar[dict[str, Any]] = ContextVar("arck_mutant_wiring")


@contextmanager
def wired(wiring: dict[str, Any]) -> Iterator[None]:
    """`create_app` keyword arguments for every app `serve` builds inside the block."""
    token = _WIRING.set(wiring)
    try:
        yield
    finally:
        _WIRING.reset(token)


def serve(
    engine: Engine | None = None, projector: Projector | None = None, **seams: Any
) -> FastAPI:
    """The reference app around `engine` (default: the reference engine with `projector`);
    `seams` replace runtime classes (`workers_class`, `runtime_class`)."""
    wiring = dict(_WIRING.get({}))
    # A restart (RUN-02) hands the first build's engine back: the same store, a new app.
    restarted = wiring.pop("engine", None)
    if restarted is not None:
        engine = restarted
    engine = engine if engine is not None else Engine(projector=projector)
    return create_app(engine, **wiring, **seams)
