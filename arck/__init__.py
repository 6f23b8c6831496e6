"""arck — Agent Runtime Conformance Kit.

The code folders (reference, simulator, conformance, reports) live at the repository's top level
and are imported only through this namespace (see ARCHITECTURE.md).
"""

from __future__ import annotations

__version__ = "0.1.0"
PROTOCOL_REVISION = "2026-12"

__all__ = ["PROTOCOL_REVISION", "__version__"]
