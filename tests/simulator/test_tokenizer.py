"""The provider's own token count, as docs/provider.md spells it out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arck.simulator.provider import prompt, tokenizer

WORKED = "Hello, world! 12345 東京 😀"


def test_the_documented_example() -> None:
    assert tokenizer.tokens(WORKED)[:10] == (
        "Hell", "o", ",", "worl", "d", "!", "123", "45", "東", "京",
    )
    assert tokenizer.count(WORKED) == 12
    assert len(WORKED) // 4 == 6  # a chars/4 estimate says half as much


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("conformance", 3),  # conf orma nce
        ("a b  c", 3),  # spaces are free
        ("a\nb\tc", 5),  # other ASCII whitespace: one each
        ("1234567", 3),  # 123 456 7
        ("x1y", 3),  # letters and digits are separate runs
        ("{}", 2),
        ("日本語", 3),
        ("한국어", 3),
        ("カタカナ", 4),
        ("café", 3),  # caf + é (2)
        ("\u00a0", 2),  # non-ASCII whitespace is just non-ASCII
        ("👍🏽", 4),  # two code points, two tokens each
        ("", 0),
    ],
)
def test_rules(text: str, expected: int) -> None:
    assert tokenizer.count(text) == expected


def test_the_documented_request() -> None:
    messages = [
        {"role": "system", "content": "Be brief. [arck-script:demo]"},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert sum(len(s) for s in prompt.segments(messages, [])) == 27
    tool_answer = {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}
    # 3 overhead + "18" "C" + {"tool_call_id":"call_1"} (15)
    assert len(prompt.segments([tool_answer], [])[1]) == 20


def test_cutting_inside_a_two_token_character_drops_it() -> None:
    assert tokenizer.cut("ab😀c", 2) == "ab"
    assert tokenizer.cut("ab😀c", 3) == "ab😀"
    assert tokenizer.cut("hello world", 3) == "hello worl"
    assert tokenizer.cut("hello", 9) == "hello"


@given(st.text(), st.text())
def test_a_space_separates_counts(left: str, right: str) -> None:
    assert tokenizer.count(left + " " + right) == tokenizer.count(left) + tokenizer.count(right)


@given(st.text(), st.integers(min_value=0, max_value=40))
def test_a_cut_keeps_the_first_tokens(text: str, limit: int) -> None:
    kept = tokenizer.cut(text, limit)
    assert text.startswith(kept)
    whole, part = tokenizer.tokens(text), tokenizer.tokens(kept)
    assert part == whole[: len(part)]
    assert min(limit, len(whole)) - 1 <= len(part) <= limit


@given(st.text() | st.text(alphabet="abcXYZ0123 \n東한カ😀é\u00a0", max_size=60))
def test_the_fast_tokens_are_the_walks(text: str) -> None:
    """`tokens` (one regex pass, cached) must equal the walk `cut` relies on."""
    assert tokenizer.tokens(text) == tuple(identity for identity, _ in tokenizer._walk(text))
