"""What every mutant is built from: the reference app around one replaced seam."""

from __future__ import annotations

from fastapi import FastAPI

from arck.reference.app import create_app
from arck.reference.engine import Engine
from arck.reference.projection import Projector

__all__ = ["serve"]


def serve(engine: Engine | None = None, projector: Projector | None = None) -> FastAPI:
    """The reference app around `engine` (default: the reference engine with `projector`)."""
    return create_app(engine if engine is not None else Engine(projector=projector))
