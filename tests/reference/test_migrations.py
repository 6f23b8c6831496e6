"""The store migration of token budgets (DEF-07, reference/migrations.py): once per store, to the
16,384-byte default, recorded; nothing but the tool sets touched; and the same path driven from
outside, `arck serve --db FILE` on a file written back to revision 0."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from runkit import FULL
from servekit import Served, free_port

from arck.reference import migrations
from arck.reference.app import create_app
from arck.reference.engine import Engine
from arck.reference.store import Store

SCHEMA = {"type": "object"}


def _tool(name: str, **budget: Any) -> dict[str, Any]:
    return {"name": name, "description": "d", "binding_id": "bnd-000001", "input_schema": SCHEMA,
            "output_schema": SCHEMA, **budget}


def _legacy_row(store: Store, tools: list[dict[str, Any]]) -> str:
    """A tool set as a store of revision 0 holds it (written as it was, bypassing the model)."""
    with store.transaction() as db:
        return store.insert(db, "tool_sets", "ts", ("tenant", "name", "tools"),
                            ("t1", "old", json.dumps(tools)))


def _tools(store: Store, tool_set_id: str) -> list[dict[str, Any]]:
    return list(json.loads(store.read("SELECT tools FROM tool_sets WHERE id = ?",
                                      (tool_set_id,))[0][0]))


def test_a_store_of_revision_0_migrates_once_to_the_default() -> None:
    store = Store()
    old = _legacy_row(store, [
        _tool("a", max_result_tokens=1000),  # tokens x 4 would be 4,000
        _tool("b", max_result_tokens=8000, max_result_bytes=65536),
        _tool("c"),  # no budget: the old default, in tokens
        _tool("d", max_result_bytes=1_000_000),
    ])
    assert migrations.revision(store) == 0
    assert migrations.migrate(store) == [old]
    tools = _tools(store, old)
    assert [t["max_result_context_bytes"] for t in tools] == [16_384] * 4
    assert not [k for t in tools for k in t if k in migrations.LEGACY_KEYS]
    assert [t["name"] for t in tools] == ["a", "b", "c", "d"]
    assert migrations.revision(store) == 1
    assert store.read("SELECT * FROM store_revisions") == [(1, "byte-budgets", 1)]
    assert migrations.migrate(store) is None  # a second start: nothing
    assert _tools(store, old) == tools
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        store.read("UPDATE tool_sets SET name = 'changed'")  # the trigger is back


def test_tool_sets_of_today_and_the_rest_of_the_store_are_untouched() -> None:
    engine = Engine()
    app = create_app(engine)  # installs every table, then migrates the (empty) store
    store = engine.store
    assert migrations.revision(store) == 1
    current = store.add_tool_set("t1", "new", [])  # no tools: nothing to migrate either
    old = _legacy_row(store, [_tool("a", max_result_tokens=300)])
    with store.transaction() as db:
        db.execute("INSERT INTO history (session_id, kind, item) VALUES ('s', 'execution', ?)",
                   ('{"content":"{\\"preview\\":{}}","role":"tool"}',))
        db.execute("INSERT INTO receipts (call_id, receipt_id, body, projection) VALUES "
                   "('c', 'r', '{\"result\":1}', '{\"preview\":{}}')")
    tables = ("history", "receipts", "tool_calls", "sessions", "agent_versions", "channels")
    before = {t: store.read(f"SELECT * FROM {t}") for t in tables}
    store.read("DELETE FROM store_revisions")  # as `downgrade` leaves it
    assert migrations.migrate(store) == [old]
    assert {t: store.read(f"SELECT * FROM {t}") for t in tables} == before
    assert store.tool_set("t1", current.tool_set_id) == current
    assert TestClient(app).get(f"/v1/tool-sets/{old}", headers=FULL).json()["tools"][0][
        "max_result_context_bytes"] == 16_384


_VALUES = st.one_of(st.integers(-10, 10**9), st.booleans(), st.none(), st.text(max_size=8),
                    st.floats(allow_nan=False))


@given(st.dictionaries(st.sampled_from(migrations.LEGACY_KEYS), _VALUES, min_size=1),
       st.dictionaries(st.text(max_size=6).filter(
           lambda k: k not in (*migrations.LEGACY_KEYS, "max_result_context_bytes")),
           _VALUES, max_size=3))
@settings(max_examples=60)
def test_any_token_setting_becomes_the_default_never_a_conversion(
    legacy: dict[str, Any], other: dict[str, Any]
) -> None:
    tool = {**other, **legacy}
    migrated = migrations.migrated_tool(tool)
    assert migrated == {**other, "max_result_context_bytes": 16_384}
    assert migrations.migrated_tool(migrated) is None  # idempotent: already revision 1


def test_downgrade_writes_revision_0_back_and_refuses_what_it_cannot() -> None:
    store = Store()
    kept = store.add_tool_set("t1", "kept", [])
    with store.transaction() as db:
        written = store.insert(db, "tool_sets", "ts", ("tenant", "name", "tools"),
                               ("t1", "n", json.dumps([_tool("a", max_result_context_bytes=2048)])))
    migrations.migrate(store)
    assert migrations.downgrade(store, [written], 777) == [written]
    assert _tools(store, written) == [_tool("a", max_result_tokens=777)]
    assert migrations.revision(store) == 0
    assert migrations.migrate(store) == [written]
    assert store.tool_set("t1", kept.tool_set_id) == kept
    with pytest.raises(ValueError, match="ts-999999"):
        migrations.downgrade(store, ["ts-999999"], 10)
    with pytest.raises(ValueError, match="positive"):
        migrations.downgrade(store, None, 0)


def _module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arck.reference.migrations", *args],
                          capture_output=True, text=True, check=False, timeout=60)


def _publish(url: str) -> tuple[str, str]:
    """A tool set of 2,048 bytes and a version using it, over HTTP: their ids."""
    def made(response: httpx.Response, key: str) -> str:
        assert response.status_code == 201, response.text
        return str(response.json()[key])

    binding = made(httpx.post(f"{url}/v1/bindings", json={"name": "b"}, headers=FULL),
                   "binding_id")
    tool = {**_tool("t", max_result_context_bytes=2048), "binding_id": binding}
    tool_set = made(httpx.post(f"{url}/v1/tool-sets", json={"name": "n", "tools": [tool]},
                               headers=FULL), "tool_set_id")
    version = made(httpx.post(f"{url}/v1/agents/a/versions", headers=FULL,
                              json={"tool_set_id": tool_set, "system_prompt": "p"}),
                   "agent_version")
    return tool_set, version


def _budgets(url: str, tool_set: str, version: str) -> tuple[int, int]:
    """The budget the tool set reads back with, and the one a dry-run previews at."""
    read = httpx.get(f"{url}/v1/tool-sets/{tool_set}", headers=FULL).json()
    dry = httpx.post(f"{url}/v1/tools/dry-run", headers=FULL, json={
        "agent_version": version, "tool_name": "t", "arguments": {},
        "mock_receipts": [{"receipt_id": "r", "kind": "completed", "result": "x" * 5000}]})
    return (read["tools"][0]["max_result_context_bytes"],
            dry.json()["context_preview"]["max_result_context_bytes"])


def test_arck_serve_migrates_a_file_written_back_to_revision_0(tmp_path: Path) -> None:
    database, log = str(tmp_path / "store.sqlite3"), tmp_path / "serve.log"
    served = Served(["--db", database], free_port(), log)
    try:
        tool_set, version = _publish(served.url)
        assert _budgets(served.url, tool_set, version) == (2048, 2048)
    finally:
        served.stop()
    down = _module("downgrade", "--db", database, "--tokens", "1000")
    assert down.returncode == 0, down.stderr
    assert f"1 tool set(s) written back with max_result_tokens = 1000: {tool_set}" in down.stdout
    assert _module("revision", "--db", database).stdout.strip() == "0"
    for start in range(2):  # the upgrade, then a second start that changes nothing
        served = Served(["--db", database], free_port(), log)
        try:
            assert _budgets(served.url, tool_set, version) == (16_384, 16_384), start
        finally:
            served.stop()
        assert _module("revision", "--db", database).stdout.strip() == "1"


def test_the_module_refuses_a_missing_file_and_an_unknown_tool_set(tmp_path: Path) -> None:
    missing = _module("revision", "--db", str(tmp_path / "none.sqlite3"))
    assert missing.returncode == 2
    assert "not a usable SQLite database" in missing.stderr
    database = str(tmp_path / "store.sqlite3")
    Store(database).close()
    unknown = _module("downgrade", "--db", database, "--tokens", "5", "ts-000042")
    assert unknown.returncode == 2
    assert "no tool set ts-000042" in unknown.stderr
