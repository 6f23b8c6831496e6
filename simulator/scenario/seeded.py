"""Every choice a scenario run makes that is not in its file, drawn from `--seed`.

Each purpose has its own generator (`random.Random` seeded with a string, which hashes it
with SHA-512: the same in every process, whatever PYTHONHASHSEED), so adding an action never
changes what another draws.
"""

from __future__ import annotations

import random
import string
from typing import Any

__all__ = ["generated_result", "letters", "script_name", "token"]

RESULT_FRAME = len('{"data":""}')  # 11 bytes around the letters of a generated result
_LETTERS = bytes(ord(string.ascii_lowercase[b % 26]) for b in range(256))


def _rng(seed: int, purpose: str) -> random.Random:
    return random.Random(f"arck-scenario:{seed}:{purpose}")


def letters(seed: int, purpose: str, count: int) -> str:
    return _rng(seed, purpose).randbytes(count).translate(_LETTERS).decode("ascii")


def token(seed: int, scenario: str) -> str:
    """Six lowercase letters that tell one run's names from another seed's."""
    return letters(seed, f"names:{scenario}", 6)


def script_name(seed: int, scenario: str) -> str:
    """The provider script's name: `sc` and six letters (always 2 provider tokens and
    8 bytes, so hand-computed token counts do not depend on the seed)."""
    return "sc" + token(seed, scenario)


def generated_result(seed: int, purpose: str, size_bytes: int) -> dict[str, Any]:
    """`{"data": "<letters>"}` whose canonical JSON is exactly `size_bytes` bytes."""
    return {"data": letters(seed, f"result:{purpose}", size_bytes - RESULT_FRAME)}
