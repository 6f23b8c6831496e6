"""`arck check-tool` (H-06): the visibility analysis on hand-made answers, then end to end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import arck
from hypothesis import given, settings
from hypothesis import strategies as st

from arck.conformance import strategies as S
from arck.conformance.oracle import canonical_text, size
from arck.conformance.tooldesign import (
    Field,
    Sample,
    SampleReport,
    Visibility,
    analyse,
    check_budget,
    check_samples,
    load_sample,
    member_spans,
    pointer_parts,
    watched_fields,
)
from arck.simulator.errors import UsageError
from arck.simulator.factory import build_target
from arck.simulator.target import Target

FEW = settings(max_examples=40, deadline=None)
FILLER = [{"sku": f"SKU-{i:04d}", "note": "lorem ipsum " * 6} for i in range(40)]
# Canonical text sorts keys: "a_items" < "page" < "z_items", so /page sits in the middle.
SAMPLE = {"a_items": FILLER, "page": {"next_cursor": "c-9f2a", "status": "ok"}, "z_items": FILLER}


def _text(value: Any) -> str:
    return canonical_text(value)


def _cut(value: Any, head: int, tail: int, preserved: dict[str, Any] | None = None,
         budget: int = 1024) -> dict[str, Any]:
    """A context_preview as a BUD-21 target makes it, with the cuts chosen by hand."""
    text = _text(value)
    result: dict[str, Any] = {"preview": {"head": text[:head], "tail": text[len(text) - tail:]},
                              "truncation": {"original_bytes": size(value)}}
    if preserved:
        result["preserved_fields"] = preserved
    return {"max_result_context_bytes": budget, "original_bytes": size(value),
            "retained_bytes": size(result), "truncated": True, "result": result}


def _whole(value: Any) -> dict[str, Any]:
    return {"max_result_context_bytes": 16384, "original_bytes": size(value),
            "retained_bytes": size(value), "truncated": False, "result": value}


def _judge(value: Any, preview: dict[str, Any], named: tuple[str, ...] = ()) -> dict[str, str]:
    report = analyse(Sample("s.json", value), watched_fields(value, named), preview, 16384)
    return {v.field.pointer: v.state for v in report.fields}


def _one(report: SampleReport, pointer: str) -> Visibility:
    (found,) = [v for v in report.fields if v.field.pointer == pointer]
    return found


def _span(value: Any, *steps: str | int) -> tuple[int, int]:
    return member_spans(value, [steps])[steps]


# --- the analysis, on hand-made answers ---------------------------------------------------


def test_preserved_under_a_pointer_counts_the_entry_bytes() -> None:
    preview = _cut(SAMPLE, 100, 100, {"/page/next_cursor": "c-9f2a"})
    report = analyse(Sample("s", SAMPLE), watched_fields(SAMPLE), preview, 1024)
    cursor = _one(report, "/page/next_cursor")
    assert cursor.state == "preserved"
    assert cursor.bytes == len('"/page/next_cursor":"c-9f2a"')
    assert cursor.location == "/page/next_cursor"
    assert _one(report, "/page/status").state == "lost"  # not preserved, in the middle


def test_preserved_under_a_dotted_path() -> None:
    preview = _cut(SAMPLE, 100, 100, {"page.next_cursor": "c-9f2a", "page.status": "ok"})
    report = analyse(Sample("s", SAMPLE), watched_fields(SAMPLE), preview, 1024)
    assert {v.field.pointer: v.state for v in report.fields} == {
        "/page/next_cursor": "preserved", "/page/status": "preserved"}
    assert _one(report, "/page/status").location == "page.status"


def test_a_preserved_value_that_differs_is_lost() -> None:
    preview = _cut(SAMPLE, 100, 100, {"/page/next_cursor": '"c-9f2a"', "/page/status": "ok"})
    report = analyse(Sample("s", SAMPLE), watched_fields(SAMPLE), preview, 1024)
    cursor = _one(report, "/page/next_cursor")
    assert cursor.state == "lost"
    assert "not the original value" in cursor.note
    assert _one(report, "/page/status").state == "preserved"


def test_fields_in_the_head_and_in_the_tail() -> None:
    value = {"id": "first-1", "items": FILLER, "next_cursor": "last-9"}
    text = _text(value)
    states = _judge(value, _cut(value, _span(value, "id")[1], len(text) - _span(
        value, "next_cursor")[0]))
    assert states == {"/id": "in_head", "/next_cursor": "in_tail"}
    report = analyse(Sample("s", value), watched_fields(value), _cut(
        value, _span(value, "id")[1], len(text) - _span(value, "next_cursor")[0]), 1024)
    # in a JSON string each of the member's four quotes takes two bytes (BUD-03)
    assert _one(report, "/id").bytes == len('\\"id\\":\\"first-1\\"')
    assert _one(report, "/next_cursor").bytes == len('"next_cursor":"last-9"') + 4


def test_a_member_cut_in_the_middle_is_lost() -> None:
    value = {"id": "first-1", "items": FILLER, "next_cursor": "last-9"}
    text = _text(value)
    head_end, tail_start = _span(value, "id")[1] - 1, _span(value, "next_cursor")[0] + 1
    preview = _cut(value, head_end, len(text) - tail_start)
    assert preview["result"]["preview"]["head"] == '{"id":"first-1'  # all but a quote
    assert _judge(value, preview) == {"/id": "lost", "/next_cursor": "lost"}


def test_a_repeated_member_is_judged_by_its_own_place() -> None:
    """Text search would find `"status":"ok"` of the first item in the head for every item."""
    items = [{"status": "ok", "pad": "x" * 50} for _ in range(5)]
    value = {"items": items}
    preview = _cut(value, 100, 100)
    assert '"status":"ok"' in preview["result"]["preview"]["head"]
    states = _judge(value, preview)
    assert states["/items/0/status"] == "in_head"
    assert states["/items/2/status"] == "lost"
    assert states["/items/4/status"] == "in_tail"


IMAGE = {"type": "image", "id": "img-7", "data": "iVBORw0KGgo" * 40}
MULTIMODAL = {"content": [{"type": "text", "text": "lorem ipsum " * 200}, IMAGE],
              "status": "done"}


def _multimodal_preview(attachments: list[Any]) -> dict[str, Any]:
    """A projection in some layout of the target's choosing: the text cut, blocks aside."""
    text = _text({"content": [{"type": "text", "text": "lorem ipsum " * 200}],
                  "status": "done"})
    result = {"preview": {"head": text[:300], "tail": text[-300:]}, "kept": attachments}
    return {"max_result_context_bytes": 1024, "original_bytes": size(MULTIMODAL),
            "retained_bytes": size(result), "truncated": True, "result": result}


def test_fields_of_a_block_kept_whole_are_attached() -> None:
    report = analyse(Sample("m", MULTIMODAL), watched_fields(MULTIMODAL),
                     _multimodal_preview([IMAGE]), 1024)
    assert _one(report, "/content/1/id").state == "attached"
    assert _one(report, "/content/1/type").state == "attached"
    assert _one(report, "/content/1/id").bytes == 0  # outside the text budget (BUD-19)
    assert _one(report, "/status").state == "in_tail"  # the text part, found by search
    assert _one(report, "/content/0/type").state == "in_tail"  # keys sort: "text" < "type"
    assert any("multimodal" in note for note in report.notes)


def test_fields_of_a_block_altered_or_dropped_are_lost() -> None:
    altered = {**IMAGE, "data": IMAGE["data"][:-1]}
    for kept in ([altered], []):
        report = analyse(Sample("m", MULTIMODAL), watched_fields(MULTIMODAL),
                         _multimodal_preview(kept), 1024)
        assert _one(report, "/content/1/id").state == "lost"


def test_a_head_that_is_no_prefix_falls_back_to_text_search() -> None:
    value = {"id": "x-1", "items": FILLER}
    preview = _cut(value, 40, 40)
    preview["result"]["preview"]["head"] = " " + _text(value)[:40]  # not a prefix
    report = analyse(Sample("s", value), watched_fields(value), preview, 1024)
    assert _one(report, "/id").state == "in_head"
    assert any("not a prefix" in note for note in report.notes)


def test_not_truncated_is_kept_whole_and_checked() -> None:
    value = {"id": 7, "data": {"status": "done"}}
    assert _judge(value, _whole(value)) == {"/id": "kept_whole", "/data/status": "kept_whole"}
    lying = {**_whole(value), "result": {"id": 7}}
    assert _judge(value, lying) == {"/id": "kept_whole", "/data/status": "lost"}


def test_a_named_pointer_missing_from_a_sample() -> None:
    value = {"id": 7, "a/b": {"x~y": 3}}
    fields = watched_fields(value, ("/a~1b/x~0y", "/data/cursor"))
    states = {f.pointer: f.steps for f in fields}
    assert states == {"/id": ("id",), "/a~1b/x~0y": ("a/b", "x~y"), "/data/cursor": None}
    report = analyse(Sample("s", value), fields, _whole(value), 16384)
    assert [(v.field.pointer, v.state) for v in report.fields] == [
        ("/a~1b/x~0y", "kept_whole"), ("/id", "kept_whole"), ("/data/cursor", "missing")]


def test_default_fields_are_status_like_scalars_at_any_depth() -> None:
    value = {"status": {"code": 3}, "a": [{"b": {"c": {"d": {"cursor": None}}}}], "ID": 1}
    pointers = sorted(f.pointer for f in watched_fields(value))
    assert pointers == ["/a/0/b/c/d/cursor", "/status/code"]  # an object is no scalar
    assert watched_fields(value, defaults=False) == []


def test_invented_preserved_entries_are_noted() -> None:
    preview = _cut(SAMPLE, 100, 100, {"/status": "truncated"})
    report = analyse(Sample("s", SAMPLE), watched_fields(SAMPLE), preview, 1024)
    assert any("['/status'] names no place in the sample" in note for note in report.notes)


def test_the_answer_budget_wins_and_shares_use_it() -> None:
    report = analyse(Sample("s", SAMPLE), watched_fields(SAMPLE),
                     _cut(SAMPLE, 10, 10, {"/page/status": "ok"}, budget=2048), 16384)
    assert report.budget == 2048
    assert _one(report, "/page/status").bytes == len('"/page/status":"ok"')


@given(S.json_values(max_leaves=12))
@FEW
def test_member_spans_match_the_canonical_text(value: Any) -> None:
    fields = watched_fields(value) + [
        Field(p, steps, v) for p, steps, v in _all_members(value)]
    text = _text(value)
    spans = member_spans(value, [f.steps for f in fields if f.steps is not None])
    for f in fields:
        assert f.steps is not None
        start, end = spans[f.steps]
        assert text[start:end] == f.member


def _all_members(value: Any, steps: tuple[str | int, ...] = ()) -> Iterator[
        tuple[str, tuple[str | int, ...], Any]]:
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, child in items:
        yield "", (*steps, key), child
        yield from _all_members(child, (*steps, key))


@st.composite
def _deep_cursor_cases(draw: st.DrawFn) -> tuple[Any, dict[str, Any], str]:
    """A unique cursor at depth 4-6 among big records, cut and preserved at random."""
    cursor = "cur~" + draw(st.text("abcdef0123456789", min_size=4, max_size=12))
    before = draw(st.integers(0, 30))
    records = [{"n": i, "text": "record " * draw(st.integers(1, 20))} for i in range(40)]
    node: Any = {"cursor": cursor}
    for key in draw(st.lists(st.sampled_from(("page", "links", "meta")), min_size=3,
                             max_size=5)):
        node = {key: node}
    value = {"records": [*records[:before], node, *records[before:]]}
    text = _text(value)
    head, tail = draw(st.integers(0, len(text) // 2)), draw(st.integers(0, len(text) // 2))
    path = _path_to(value, "cursor")
    pointer = "".join(f"/{s}" for s in path)
    kept = draw(st.sampled_from((None, pointer, ".".join(map(str, path)), "wrong")))
    preserved = {} if kept is None else {pointer: "other"} if kept == "wrong" else {kept: cursor}
    return value, _cut(value, head, tail, preserved), cursor


def _path_to(value: Any, key: str) -> list[str | int]:
    if isinstance(value, dict):
        if key in value:
            return [key]
        for k, v in value.items():
            if rest := _path_to(v, key):
                return [k, *rest]
    if isinstance(value, list):
        for i, v in enumerate(value):
            if rest := _path_to(v, key):
                return [i, *rest]
    return []


@given(_deep_cursor_cases())
@FEW
def test_a_deep_cursor_is_judged_as_text_search_sees_it(case: Any) -> None:
    """The cursor's member is unique, so plain text search is an independent judge."""
    value, preview, cursor = case
    report = analyse(Sample("s", value), watched_fields(value), preview, 1024)
    (seen,) = [v for v in report.fields if v.field.key == "cursor"]
    member = json.dumps({"cursor": cursor}, ensure_ascii=False, separators=(",", ":"))[1:-1]
    box = preview["result"]["preview"]
    kept = cursor in preview["result"].get("preserved_fields", {}).values()
    expected = ("preserved" if kept else "in_head" if member in box["head"]
                else "in_tail" if member in box["tail"] else "lost")
    assert seen.state == expected


# --- inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "why"), [
    (b"{nope", "not a strict JSON value"),
    (b'{"a": NaN}', "NaN is not JSON"),
    (b'{"a": 1, "a": 2}', "duplicate object key"),
    (b'"\\ud800"', "lone surrogate"),
    (b"\xff", "not a strict JSON value"),
])
def test_bad_samples_are_usage_errors(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "sample.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=why) as raised:
        load_sample(path)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize(("budget", "ok"), [(None, True), (1023, False), (1024, True),
                                            (32768, True), (32769, False), (0, False)])
def test_budget_bounds(budget: int | None, ok: bool) -> None:
    if ok:
        check_budget(budget)
    else:
        with pytest.raises(UsageError, match="--budget"):
            check_budget(budget)


@pytest.mark.parametrize("pointer", ["data.next_cursor", "/a~2b"])
def test_bad_pointers(pointer: str) -> None:
    with pytest.raises(UsageError, match="--field"):
        pointer_parts(pointer)


# --- through the reference, in process ----------------------------------------------------


@pytest.fixture(scope="module")
def reference() -> Iterator[Target]:
    target = build_target("reference")
    yield target
    target.close()


@st.composite
def _big_records(draw: st.DrawFn) -> tuple[Any, int]:
    budget = draw(st.sampled_from((1024, 2048, 4096)))
    records = [{"n": i, "text": draw(st.sampled_from(("ab", "中文", "😀 "))) * 40}
               for i in range(budget // 60)]
    at = draw(st.integers(0, len(records)))
    deep = {"l1": {"l2": {"l3": {"cursor": "c" * draw(st.integers(1, 40))}}}}
    shallow = {"status": draw(st.sampled_from(("ok", "partial")))}
    return {"records": [*records[:at], deep, *records[at:]], "meta": shallow}, budget


@given(_big_records())
@settings(max_examples=15, deadline=None)
def test_the_reference_keeps_shallow_status_and_drops_deep_cursors_in_the_middle(
        reference: Target, case: Any) -> None:
    value, budget = case
    (report,) = check_samples(reference, [Sample("s", value)], budget,
                              [watched_fields(value)])
    states = {v.field.pointer: v for v in report.fields}
    assert states["/meta/status"].state == "preserved"  # depth 2: a BUD-22 candidate
    deep = next(v for p, v in states.items() if p.endswith("/cursor"))
    assert deep.state != "preserved"  # depth 5: never a candidate
    assert report.truncated


# --- end to end ---------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, value: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value), "utf-8")
    return path


def _deep_in_the_middle() -> Any:
    records = [{"sku": f"SKU-{i:05d}", "text": "lorem ipsum dolor " * 5} for i in range(1000)]
    deep = {"paging": {"links": {"next": {"cursor": "deep-cur-77"}}}}
    value = {"a_records": records[:500], "m": deep, "z_records": records[500:]}
    assert size(value) > 100_000
    return value


def test_shallow_fields_are_preserved_exit_0(tmp_path: Path) -> None:
    sample = _write(tmp_path, "page.json", SAMPLE)
    report = tmp_path / "out" / "check.json"
    report.parent.mkdir()
    done = arck("check-tool", str(sample), "--budget", "1024", "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VISIBLE" in done.stdout
    assert "/page/next_cursor" in done.stdout
    data = json.loads(report.read_text("utf-8"))
    fields = {f["pointer"]: f for f in data["samples"][0]["fields"]}
    assert fields["/page/next_cursor"]["state"] == "preserved"
    assert fields["/page/status"]["state"] == "preserved"
    assert fields["/page/next_cursor"]["bytes"] == len('"/page/next_cursor":"c-9f2a"')
    assert data["samples"][0]["truncated"] is True
    assert data["samples"][0]["budget"] == 1024
    assert data["target"]["kind"] == "reference"
    assert data["exit_code"] == 0


def test_a_deep_cursor_in_the_middle_is_lost_exit_1(tmp_path: Path) -> None:
    sample = _write(tmp_path, "deep.json", _deep_in_the_middle())
    done = arck("check-tool", str(sample), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(done.stdout)
    (only,) = data["samples"][0]["fields"]
    assert only["pointer"] == "/m/paging/links/next/cursor"
    assert only["state"] == "lost"
    assert data["verdict"] == "lost"
    assert data["samples"][0]["original_bytes"] == size(_deep_in_the_middle())
    assert data["samples"][0]["budget"] == 16384  # the default, left out of the tool


def test_the_reference_keeps_a_multimodal_blocks_fields_attached(tmp_path: Path) -> None:
    sample = _write(tmp_path, "multimodal.json", MULTIMODAL)
    done = arck("check-tool", str(sample), "--budget", "1024", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    states = {f["pointer"]: f["state"] for f in data["samples"][0]["fields"]}
    assert data["samples"][0]["truncated"] is True
    assert states["/content/1/id"] == "attached"
    assert states["/status"] in ("preserved", "in_tail")


def _listing() -> Any:
    items = [{"id": f"item-{i:04d}", "title": "lorem ipsum dolor " * 4} for i in range(400)]
    return {"items": items, "next_cursor": "cur-401", "status": "ok"}


def test_list_item_fields_are_reported_but_do_not_gate(tmp_path: Path) -> None:
    sample = _write(tmp_path, "listing.json", _listing())
    done = arck("check-tool", str(sample), "--json", "--budget", "1024")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    fields = {f["pointer"]: f for f in data["samples"][0]["fields"]}
    assert fields["/next_cursor"]["state"] != "lost"
    assert fields["/next_cursor"]["gates"] is True
    middle = fields["/items/200/id"]
    assert (middle["state"], middle["gates"]) == ("lost", False)
    assert data["lost_gating"] == 0
    assert "list-item field" in data["message"]
    # naming an item field makes it count
    named = arck("check-tool", str(sample), "--json", "--budget", "1024",
                 "--field", "/items/200/id")
    assert named.returncode == 1, named.stdout + named.stderr
    assert json.loads(named.stdout)["lost_gating"] == 1


def test_a_small_result_is_kept_whole_exit_0(tmp_path: Path) -> None:
    sample = _write(tmp_path, "small.json", {"id": "ord-1", "status": "shipped"})
    done = arck("check-tool", str(sample), "--field", "/id")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kept_whole" in done.stdout
    assert "VISIBLE: all 2 watched fields" in done.stdout


@pytest.mark.parametrize(("mutant", "note"), [
    ("no-preserved", "cut out with the middle"),
    ("preserved-altered", "not the original value"),
])
def test_a_mutant_that_loses_preserved_fields_changes_the_verdict(
        tmp_path: Path, mutant: str, note: str) -> None:
    sample = _write(tmp_path, "page.json", SAMPLE)
    done = arck("check-tool", str(sample), "--budget", "1024", "--json",
                "--target", f"mutant:{mutant}")
    assert done.returncode == 1, done.stdout + done.stderr
    fields = json.loads(done.stdout)["samples"][0]["fields"]
    assert {f["state"] for f in fields} == {"lost"}
    assert all(note in f["note"] for f in fields)


def test_a_mutant_preserving_too_deep_hides_the_loss(tmp_path: Path) -> None:
    sample = _write(tmp_path, "deep.json", _deep_in_the_middle())
    done = arck("check-tool", str(sample), "--target", "mutant:preserved-too-deep", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["samples"][0]["fields"][0]["state"] == "preserved"


def test_bad_inputs_exit_2_naming_the_file_or_flag(tmp_path: Path) -> None:
    good = _write(tmp_path, "good.json", SAMPLE)
    (tmp_path / "bad.json").write_text("{nope", "utf-8")
    cases = [
        (("check-tool", str(tmp_path / "bad.json")), "bad.json"),
        (("check-tool", str(tmp_path / "missing.json")), "missing.json"),
        (("check-tool", str(good), "--budget", "100"), "--budget 100"),
        (("check-tool", str(good), "--field", "/no/such"), "--field '/no/such'"),
    ]
    for args, named in cases:
        done = arck(*args)
        assert done.returncode == 2, done.stdout + done.stderr
        assert named in done.stderr
        assert "Traceback" not in done.stdout + done.stderr


def test_an_unreachable_target_or_a_refused_dry_run_exits_2(tmp_path: Path) -> None:
    good = _write(tmp_path, "good.json", SAMPLE)
    done = arck("check-tool", str(good), "--target", "http://127.0.0.1:9")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unreachable" in done.stderr
    (tmp_path / "nested.json").write_text("[" * 600 + "]" * 600, "utf-8")
    done = arck("check-tool", str(tmp_path / "nested.json"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "did not answer 2xx" in done.stderr
    assert "→ 400" in done.stderr
