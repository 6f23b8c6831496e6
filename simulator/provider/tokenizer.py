"""The provider's own true token count: simple enough to count by hand (docs/provider.md).

It is deliberately not characters / 4, nor any real model's tokenizer, so an engine's
estimate never agrees with it by accident and calibration (CTX-08) has something to do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

__all__ = ["DIGITS_PER_TOKEN", "LETTERS_PER_TOKEN", "count", "cut", "tokens"]

LETTERS_PER_TOKEN = 4
DIGITS_PER_TOKEN = 3
_RUN = re.compile(r"[A-Za-z]+|[0-9]+| +|.", re.DOTALL)
# The same tokens in one pass of the regex engine: a run of letters (digits) splits into
# pieces of four (three) from its start, exactly as `_walk` splits it; spaces are skipped.
_PIECE = re.compile(r"[A-Za-z]{1,4}|[0-9]{1,3}|[^ ]", re.DOTALL)
# The simulated provider counts every message of every request again (a conversation's
# history is sent whole each call), so the tokens of a text are kept: at most 512 texts of
# at most 64 Ki characters each (a tool result's budget is 32 KiB), a few tens of MB at worst.
_CACHED_TEXTS = 512
_CACHED_CHARS = 64 * 1024
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


def tokens(text: str) -> tuple[str, ...]:
    """The tokens of `text`, as identities a prompt cache can compare (`_walk`'s, faster)."""
    return _tokens(text) if len(text) > _CACHED_CHARS else _kept_tokens(text)


def _tokens(text: str) -> tuple[str, ...]:
    pieces = _PIECE.findall(text)
    if text.isascii():
        return tuple(pieces)
    found: list[str] = []
    for piece in pieces:
        if piece.isascii() or _is_cjk(ord(piece)):
            found.append(piece)
        else:
            found += (piece + "\x00" + "1", piece + "\x00" + "2")
    return tuple(found)


_kept_tokens = lru_cache(maxsize=_CACHED_TEXTS)(_tokens)


def count(text: str) -> int:
    return len(tokens(text))


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
