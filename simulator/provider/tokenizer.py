"""The provider's own true token count: simple enough to count by hand (docs/provider.md).

It is deliberately not characters / 4, nor any real model's tokenizer, so an engine's
estimate never agrees with it by accident and calibration (CTX-08) has something to do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["DIGITS_PER_TOKEN", "LETTERS_PER_TOKEN", "count", "cut", "tokens"]

LETTERS_PER_TOKEN = 4
DIGITS_PER_TOKEN = 3
_RUN = re.compile(r"[A-Za-z]+|[0-9]+| +|.", re.DOTALL)
# Code points that cost one token each; every other non-ASCII code point costs two.
_CJK = (
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B and later
)


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)


def _walk(text: str) -> Iterator[tuple[str, int]]:
    """Each token's identity and the offset where the text may be cut after it."""
    for match in _RUN.finditer(text):
        run, start = match.group(), match.start()
        if run[0] == " ":
            continue  # spaces are free
        if run[0].isascii() and (run[0].isalpha() or run[0].isdigit()):
            size = LETTERS_PER_TOKEN if run[0].isalpha() else DIGITS_PER_TOKEN
            for offset in range(0, len(run), size):
                piece = run[offset : offset + size]
                yield piece, start + offset + len(piece)
        elif run.isascii() or _is_cjk(ord(run)):
            yield run, start + 1
        else:
            # Two tokens; cutting between them drops the whole code point.
            yield run + "\x00" + "1", start
            yield run + "\x00" + "2", start + 1


def tokens(text: str) -> list[str]:
    """The tokens of `text`, as identities a prompt cache can compare."""
    return [identity for identity, _ in _walk(text)]


def count(text: str) -> int:
    return sum(1 for _ in _walk(text))


def cut(text: str, limit: int) -> str:
    """The longest prefix of `text` whose tokens are the first `limit` of its tokens."""
    end = 0
    for index, (_, after) in enumerate(_walk(text)):
        if index == limit:
            break
        end = after
    else:
        return text
    return text[:end]
