"""The oracle against hand-checked values (sizes, clusters, escapes, locations)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from arck.conformance.oracle import (
    EscapeIndex,
    canonical_bytes,
    canonical_text,
    canonically_equal,
    escape_spans,
    escaped_size,
    find_value,
    inside_escape_at,
    introduced_replacement_chars,
    is_multimodal,
    nesting_depth,
    non_text_blocks,
    pointer,
    resolve_location,
    size,
    split_cluster_at,
    unicode_problems,
)

FAMILY = "👨\u200d👩\u200d👧\u200d👦"


# --- sizes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("中", 5),
        ("😀", 6),
        ("", 2),
        ({"a": 1}, 7),
        ([1, 2], 5),
        (None, 4),
        (FAMILY, 27),
        ('"', 4),
        ("\\", 4),
        ("\n", 4),
        ("\x00", 8),
        ("\x7f", 3),
        ("\u2028", 5),
        ({"b": 1, "a": [True, None]}, 23),
    ],
)
def test_size_hand_checked(value: Any, expected: int) -> None:
    assert size(value) == expected


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("\x00", 6),
        ("\x1f", 6),
        ('"', 2),
        ("\\", 2),
        ("\t", 2),
        ("é", 2),
        ("中", 3),
        ("😀", 4),
        (FAMILY, 25),
        ("</script>", 9),
        ("\ufffd", 3),
    ],
)
def test_escaped_size(s: str, expected: int) -> None:
    assert escaped_size(s) == expected


def test_family_is_seven_code_points_eleven_utf16_units() -> None:
    assert len(FAMILY) == 7
    assert len(FAMILY.encode("utf-16-le")) // 2 == 11


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e16, "1e+16"),
        (1e-7, "1e-07"),
        (1e-5, "1e-05"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (5e-324, "5e-324"),
        (10**40, "1" + "0" * 40),
        ({"b": 1, "a": 2}, '{"a":2,"b":1}'),
        (["中", "\u2028"], '["中","\u2028"]'),
    ],
)
def test_canonical_text_traps(value: Any, text: str) -> None:
    assert canonical_text(value) == text
    assert canonical_bytes(value) == text.encode("utf-8")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"a": [math.nan]}])
def test_non_finite_floats_have_no_canonical_form(value: Any) -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical_text(value)


def test_lone_surrogate_has_no_canonical_bytes() -> None:
    assert canonical_text("\ud800") == '"\ud800"'
    with pytest.raises(UnicodeEncodeError):
        canonical_bytes({"k": "\ud800"})


def test_canonically_equal() -> None:
    assert canonically_equal({"a": 1, "b": [2]}, {"b": [2], "a": 1})
    assert not canonically_equal(1, 1.0)
    assert not canonically_equal(1, True)
    assert not canonically_equal(0.0, -0.0)
    assert not canonically_equal(math.nan, math.nan)
    assert canonically_equal("\ud800", "\ud800")


def test_nesting_depth_is_iterative() -> None:
    deep: Any = 0
    for _ in range(5000):
        deep = [deep]
    assert nesting_depth(deep) == 5000
    assert nesting_depth(0) == 0
    assert nesting_depth({"a": [], "b": {"c": 1}}) == 2


# --- Unicode validity -------------------------------------------------------------------


def test_unicode_problems_names_paths() -> None:
    value = {"ok": "é😀", "k\ud800": ["x", "y\udfff"], "a/~": "\ud83d"}
    problems = unicode_problems(value)
    assert len(problems) == 3
    assert problems[0].startswith("'/k\\ud800': key")
    assert problems[1].startswith("'/k\\ud800/1': string")
    assert "U+DFFF at index 1" in problems[1]
    assert problems[2].startswith("'/a~1~0': string")
    assert unicode_problems({"fine": ["中", FAMILY, "\ufffd"]}) == []
    assert unicode_problems("\udc00") == ["'': string has lone surrogate U+DC00 at index 0"]


def test_unicode_problems_deep() -> None:
    deep: Any = "\ud800"
    for _ in range(3000):
        deep = [deep]
    assert unicode_problems(deep) == [
        f"{'/0' * 3000!r}: string has lone surrogate U+D800 at index 0"
    ]


def test_introduced_replacement_chars() -> None:
    assert introduced_replacement_chars("abc", "a\ufffd")
    assert not introduced_replacement_chars("a\ufffdb", "a\ufffd")
    assert introduced_replacement_chars("a\ufffdb", "\ufffd\ufffd")


def test_pointer_escaping() -> None:
    assert pointer(["a/b", "m~n", 0]) == "/a~1b/m~0n/0"
    assert pointer([]) == ""


# --- grapheme clusters ------------------------------------------------------------------

# snippet -> the internal indices where a cut splits a cluster stable across versions
CLUSTER_CASES = {
    "ab": [],
    FAMILY: [1, 2, 3, 4, 5, 6],  # ZWJ (GB9) and pictograph after ZWJ (GB11)
    "🇫🇷🇯🇵": [1, 3],  # regional-indicator pairs; 2 is between flags
    "🇫🇷🇯": [1],  # odd run: the last RI stands alone
    "1\ufe0f\u20e3": [1, 2],  # keycap
    "#\ufe0f\u20e3": [1, 2],
    "👍🏽": [1],  # skin-tone modifier
    "❤\ufe0f": [1],
    "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f": [1, 2, 3, 4, 5, 6],
    "👩🏽\u200d💻": [1, 2, 3],
    "e\u0301\u0308": [1, 2],
    "\u1100\u1161\u11a8": [1, 2],  # L V T
    "\uac00\u11a8": [1],  # LV T
    "\uac01\u11a8": [1],  # LVT T
    "\uac00\u1161": [1],  # LV V
    "\uac01\u1161": [],  # LVT V: two clusters
    "\u1100\uac00": [1],  # L LV
    "\u11a8\u1100": [],  # T L
    "한국어": [],  # precomposed syllables are one cluster each
    "中文字符": [],
    "क्षि": [1],  # virama (Mn); the conjunct (GB9c) and the Mc vowel sign are not flagged
    "กำ": [],  # SARA AM is a SpacingMark: not flagged
    "\r\n": [1],
    "\n\u0301": [],  # nothing extends a control (GB4)
    "\ufeff\u0301": [],
    "a\u200d😀": [1],  # the ZWJ extends "a", but 😀 starts a new cluster (GB11 needs ExtPict)
    "😀\u200d\u0301": [1, 2],
    "😀\u0301\u200d😀": [1, 2, 3],  # ExtPict Extend* ZWJ × ExtPict
    "a🏽": [1],
    '"\u0301': [1],  # a quote is a base like any other in the canonical text
}


@pytest.mark.parametrize(("text", "expected"), list(CLUSTER_CASES.items()))
def test_split_cluster_at(text: str, expected: list[int]) -> None:
    flagged = [i for i in range(len(text) + 1) if split_cluster_at(text, i)]
    assert flagged == expected


def test_split_cluster_at_reasons() -> None:
    assert split_cluster_at("🇫🇷", 1) == "splits a regional-indicator pair (GB12/GB13)"
    assert split_cluster_at("\u1100\u1161", 1) == "splits a Hangul syllable (GB6-GB8)"
    assert split_cluster_at(FAMILY, 2) == "splits an emoji ZWJ sequence (GB11)"
    assert split_cluster_at("e\u0301", 1) == "U+0301 extends the cluster before it (GB9)"
    assert split_cluster_at("e\u0301", 0) is None
    assert split_cluster_at("e\u0301", 2) is None


def test_split_cluster_in_canonical_text() -> None:
    text = canonical_text({"a": "x" + FAMILY})
    start = text.index(FAMILY)
    flagged = [i for i in range(len(text)) if split_cluster_at(text, i)]
    assert flagged == [start + k for k in range(1, 7)]


# --- escapes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "spans", "inside"),
    [
        ("a\nb", [(2, 4)], [3]),  # "a\nb"
        ("\\n", [(1, 3)], [2]),  # "\\n": escaped backslash, then a plain n
        ("\\\\n", [(1, 3), (3, 5)], [2, 4]),
        ("\\\n", [(1, 3), (3, 5)], [2, 4]),
        ("\x00", [(1, 7)], [2, 3, 4, 5, 6]),
        ('"\\u0041', [(1, 3), (3, 5)], [2, 4]),  # the text u0041 is plain after \\
        ("中\t", [(2, 4)], [3]),
        ("plain", [], []),
    ],
)
def test_escapes(raw: str, spans: list[tuple[int, int]], inside: list[int]) -> None:
    text = canonical_text(raw)
    assert escape_spans(text) == spans
    assert [i for i in range(len(text) + 1) if inside_escape_at(text, i)] == inside


def test_escape_index_large_text() -> None:
    text = canonical_text(['\x00\\"é' * 100_000, "x" * 500_000])
    index = EscapeIndex(text)
    assert len(index.starts) == 300_000
    assert not index.inside(2)
    assert index.inside(3)
    assert not index.inside(8)
    assert index.inside(9)
    assert not index.inside(len(text) - 1)


# --- locations and values ---------------------------------------------------------------

DOC = {
    "data": {"next_cursor": "c1", "items": [{"id": 7}, {"id": 8}]},
    "a/b": 1,
    "m~n": 2,
    "": 3,
    "01": 4,
    "x.y": {"z": 5},
    "list": [10, 11],
}


@pytest.mark.parametrize(
    ("location", "found", "value"),
    [
        ("", True, DOC),
        ("/data/next_cursor", True, "c1"),
        ("/data/items/1/id", True, 8),
        ("/a~1b", True, 1),
        ("/m~0n", True, 2),
        ("/", True, 3),
        ("/01", True, 4),
        ("/list/-", False, None),
        ("/list/01", False, None),
        ("/list/2", False, None),
        ("/list/0/x", False, None),
        ("/m~2n", False, None),
        ("/nope", False, None),
        ("data.next_cursor", True, "c1"),
        ("data.items.0.id", True, 7),
        ("list.1", True, 11),
        ("list.01", False, None),
        ("list.-1", False, None),
        ("x.y.z", True, 5),
        ("data.items.2", False, None),
        ("data.next_cursor.x", False, None),
    ],
)
def test_resolve_location(location: str, found: bool, value: Any) -> None:
    assert resolve_location(DOC, location) == (found, value)


def test_find_value() -> None:
    block = {"type": "image", "source": {"data": "QUJD", "media_type": "image/png"}}
    tree = {"attachments": [json.loads(json.dumps(block))], "preview": {"head": "x"}}
    assert find_value(tree, block)
    assert find_value(tree, "x")
    assert not find_value(tree, {"type": "image"})
    assert not find_value({"a": 1.0}, 1)
    assert not find_value({"a": True}, 1)
    assert find_value({"a": 1}, 1)


def test_multimodal() -> None:
    image = {"type": "image", "source": {"data": "QUJD"}}
    audio = {"type": "audio", "source": {"data": "QUJE"}}
    result = {"content": [{"type": "text", "text": "hi"}, image, audio], "id": 1}
    assert is_multimodal(result)
    assert non_text_blocks(result) == [image, audio]
    assert not is_multimodal({"content": [{"type": "text", "text": "hi"}]})
    assert not is_multimodal({"content": [image, {"text": "no type"}]})
    assert not is_multimodal({"content": [image, {"type": 3}]})
    assert not is_multimodal({"content": []})
    assert not is_multimodal([image])
    assert non_text_blocks({"content": "x"}) == []
