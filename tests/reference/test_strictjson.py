"""Strict JSON bodies (PRO-01): what is refused, where, and that nothing else ever escapes."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from arck.reference.strictjson import StrictJSONError, loads_strict

CORPUS = Path(__file__).resolve().parents[2] / "conformance/data/JSONTestSuite/test_parsing"
# RFC 8259 only says names SHOULD be unique, so JSONTestSuite accepts duplicate keys;
# PRO-01 refuses them.
REFUSED_BY_PROFILE = {"y_object_duplicated_key.json", "y_object_duplicated_key_and_value.json"}

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def refusal(body: bytes) -> StrictJSONError:
    with pytest.raises(StrictJSONError) as info:
        loads_strict(body)
    return info.value


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param(b'{"a": NaN}', "/a", id="nan"),
        pytest.param(b"[1, Infinity]", "/1", id="infinity"),
        pytest.param(b"[-Infinity]", "/0", id="minus-infinity"),
        pytest.param(b'{"x": [1e400]}', "/x/0", id="overflow"),
        pytest.param(b'{"x": -1E+400}', "/x", id="negative-overflow"),
        pytest.param(b'["\\ud800"]', "/0", id="escaped-lone-surrogate"),
        pytest.param(b'{"\\udc00": 1}', "/\udc00", id="lone-surrogate-key"),
        pytest.param(b'["\xed\xa0\x80"]', "", id="raw-surrogate-bytes"),
        pytest.param(b'["\xff"]', "", id="invalid-utf8"),
        pytest.param(b"\xef\xbb\xbf{}", "", id="bom"),
        pytest.param(b'{"a": {"b": 1, "b": 2}}', "/a/b", id="duplicate-key"),
        pytest.param(b'{"a/~": {"k": 1, "k": 1}}', "/a~1~0/k", id="duplicate-key-escaped"),
        pytest.param(b"[" + b"1" * 4301 + b"]", "/0", id="4301-digits"),
        pytest.param(b"[-" + b"9" * 5000 + b"]", "/0", id="5000-digits-negative"),
        pytest.param(b"[" * 513 + b"]" * 513, "/0" * 512, id="depth-513"),
        pytest.param(b"[" * 100_000, "", id="depth-100000-unclosed"),
        pytest.param(b"", "", id="empty"),
        pytest.param(b"{'a': 1}", "", id="single-quotes"),
        pytest.param(b"[1,]", "", id="trailing-comma"),
    ],
)
def test_refused_with_path(body: bytes, path: str) -> None:
    assert refusal(body).path.encode("utf-8", "surrogatepass") == path.encode(
        "utf-8", "surrogatepass"
    )


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 512 + b"]" * 512,
        b"[" + b"9" * 4300 + b"]",
        b'"\\ud83d\\ude00"',
        b'{"a": 1e-400, "b": -0.0, "c": 1.7976931348623157e308}',
        b' \t\r\n{"\xe4\xb8\xad": "\xf0\x9f\x98\x80"}\n',
    ],
)
def test_accepted(body: bytes) -> None:
    assert loads_strict(body) == json.loads(body)


def test_first_problem_in_document_order() -> None:
    assert refusal(b'{"a": [1, NaN], "b": {"c": 1, "c": 2}}').path == "/a/1"
    assert refusal(b'[{"c": 1, "c": 2}, "\\ud800"]').path == "/0/c"


@settings(max_examples=200)
@given(st.binary())
@example(b"\xed\xa0\x80")
@example(b"[" * 2000)
@example(b'{"a":1,"a":1}')
@example(b"-")
@example(b"1" * 5000)
@example(b"1." + b"0" * 5000 + b"e99999")
def test_bytes_never_escape_as_another_error(body: bytes) -> None:
    with contextlib.suppress(StrictJSONError):
        loads_strict(body)


JSONISH = st.text(alphabet='{}[],:"\\ 0123456789.eE+-tfnrulsaINfiy\ud800\udc00x', max_size=40)


@settings(max_examples=200)
@given(st.one_of(JSONISH.map(lambda s: s.encode("utf-8", "surrogatepass")), st.binary()))
def test_jsonish_text_never_escapes(body: bytes) -> None:
    with contextlib.suppress(StrictJSONError):
        loads_strict(body)


@settings(max_examples=100)
@given(JSON_VALUES)
def test_valid_json_round_trips(value: Any) -> None:
    body = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        assert isinstance(refusal(body), StrictJSONError)  # text() may draw lone surrogates
        return
    assert loads_strict(body) == value


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*.json"))


def test_corpus_present() -> None:
    assert len(corpus_files()) > 300


@pytest.mark.parametrize("case", corpus_files(), ids=lambda p: p.name)
def test_json_test_suite(case: Path) -> None:
    body = case.read_bytes()
    try:
        loads_strict(body)
        accepted = True
    except StrictJSONError:
        accepted = False
    if case.name in REFUSED_BY_PROFILE or case.name.startswith("n_"):
        assert not accepted, f"{case.name} must be refused"
    elif case.name.startswith("y_"):
        assert accepted, f"{case.name} must parse"


def test_max_depth_is_a_parameter() -> None:
    assert loads_strict(b"[" * 520 + b"]" * 520, max_depth=520) == json.loads("[" * 520 + "]" * 520)
    assert refusal_at_depth(521, 520) == "/0" * 520


def refusal_at_depth(depth: int, max_depth: int) -> str:
    with pytest.raises(StrictJSONError) as info:
        loads_strict(b"[" * depth + b"]" * depth, max_depth=max_depth)
    return info.value.path
