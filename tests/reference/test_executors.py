"""The executor protocol of the reference engine (docs/executors.md): registration, credential
kinds, online, scope, claims with one winner and a lease, grants, receipts in the judgement
order, late receipts after a run cancel, detach, business cancel and tenant isolation."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import Any

import httpx
import runkit
from runkit import App, answer, event_list, executor, of, one_app, post, run, settled

from arck.reference.app import create_app
from arck.simulator.provider import Step, ToolCall

OTHER = {"Authorization": "Bearer arck-dev-other"}


async def waiting(client: httpx.AsyncClient, clock: Any, calls: int = 1,
                  arguments: dict[str, Any] | str | None = None,
                  subject: str | None = None, script: str = "s",
                  provider: Any = None) -> tuple[str, list[dict[str, Any]], str]:
    """A run waiting for `calls` lookups: (run_id, its tool calls, session_id)."""
    assert provider is not None
    plan = [ToolCall(name="lookup", arguments={"n": i} if arguments is None else arguments)
            for i in range(calls)]
    provider.add_script(script, [Step(tool_calls=plan), Step(text="Done.")])
    version = await runkit.version(client, script)
    wallet = await runkit.wallet(client)
    body = {"agent_version": version, "wallet_id": wallet}
    if subject is not None:
        body["subject"] = subject
    session = await post(client, "/v1/sessions", body)
    r = await run(client, session["session_id"], "Go")
    assert (await settled(client, clock, r["run_id"]))["state"] == "waiting_tools"
    return r["run_id"], await tool_calls(client, r["run_id"]), session["session_id"]


async def tool_calls(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await client.get(f"/v1/runs/{run_id}/tool-calls")).json()[
        "tool_calls"]
    return found


async def binding_of(client: httpx.AsyncClient, run_id: str) -> str:
    r = (await client.get(f"/v1/runs/{run_id}")).json()
    s = (await client.get(f"/v1/sessions/{r['session_id']}")).json()
    v = (await client.get(f"/v1/agent-versions/{s['agent_version']}")).json()
    return str((await client.get(f"/v1/tool-sets/{v['tool_set_id']}")).json()["tools"][0][
        "binding_id"])


async def register(client: httpx.AsyncClient, bindings: list[str], *, online: bool = True,
                   permissions: list[str] | None = None,
                   headers: dict[str, str] | None = None) -> dict[str, str]:
    body: dict[str, Any] = {"name": "ex", "bindings": bindings}
    if permissions is not None:
        body["permissions"] = permissions
    registered = await post(client, "/v1/executors", body, headers=headers)
    auth = {"Authorization": f"Bearer {registered['token']}"}
    if online:
        await post(client, "/v1/executor/heartbeat", {}, 200, auth)
    return auth


def error(response: httpx.Response, status: int, path: str | None = None,
          code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()["error"]
    if path is not None:
        assert body["path"] == path, body
    if code is not None:
        assert body["code"] == code, body
    return body


async def claim(client: httpx.AsyncClient, call_id: str, auth: dict[str, str]) -> str:
    return str((await post(client, f"/v1/tool-calls/{call_id}/claims", {}, 201, auth))[
        "claim_id"])


async def receipt(client: httpx.AsyncClient, call_id: str, auth: dict[str, str],
                  body: dict[str, Any]) -> httpx.Response:
    return await client.post(f"/v1/tool-calls/{call_id}/receipts", json=body, headers=auth)


async def accepted(client: httpx.AsyncClient, call_id: str,
                   auth: dict[str, str]) -> str:
    claim_id = await claim(client, call_id, auth)
    response = await receipt(client, call_id, auth, {"receipt_id": "acc", "claim_id": claim_id,
                                                     "kind": "accepted"})
    assert response.status_code == 200, response.text
    return claim_id


async def items(client: httpx.AsyncClient, session_id: str, kind: str) -> list[Any]:
    return list((await client.get(f"/v1/sessions/{session_id}/{kind}")).json()["items"])


# -- registration and credentials ---------------------------------------------------------------


def test_registration_validates_and_names_the_path() -> None:
    async def test(world: App) -> None:
        client, _, clock, _ = world
        b1 = (await post(client, "/v1/bindings", {"name": "a"}))["binding_id"]
        b2 = (await post(client, "/v1/bindings", {"name": "b"}))["binding_id"]
        bad = [({"name": "", "bindings": [b1]}, 422, "/name"),
               ({"name": "x" * 201, "bindings": [b1]}, 422, "/name"),
               ({"name": "e", "bindings": []}, 422, "/bindings"),
               ({"name": "e", "bindings": [b1, "bnd-999999"]}, 404, "/bindings/1"),
               ({"name": "", "bindings": ["bnd-999999"]}, 404, "/bindings/0"),  # 404 first
               ({"name": "e", "bindings": [b1, b2, b1]}, 422, "/bindings/2"),
               ({"name": "e", "bindings": [b1], "permissions": []}, 422, "/permissions"),
               ({"name": "e", "bindings": [b1], "permissions": ["tools:execute"]}, 422,
                "/permissions"),
               ({"name": "e", "bindings": [b1], "permissions": ["runtime:read"]}, 422,
                "/permissions/0"),
               ({"name": "e", "bindings": [b1], "extra": 1}, 422, "/extra")]
        for body, status, path in bad:
            error(await client.post("/v1/executors", json=body), status, path)
        other = await client.post("/v1/executors", json={"name": "e", "bindings": [b1]},
                                  headers=OTHER)
        error(other, 404, "/bindings/0")  # another tenant's binding is unknown
        error(await client.post("/v1/executors", json={"name": "e", "bindings": [b1]},
                                headers={"Authorization": "Bearer arck-dev-readonly"}), 403)
        made = await post(client, "/v1/executors", {"name": "e", "bindings": [b2, b1]})
        assert made["permissions"] == ["executor:connect", "tools:execute"]
        assert made["bindings"] == [b2, b1]
        assert re.fullmatch(rf"arck-exe-{made['executor_id']}-[0-9a-f]{{24}}", made["token"])
        assert made["executor_id"] == "exe-000001"
        seen = (await client.get(f"/v1/executors/{made['executor_id']}")).json()
        assert seen == {"executor_id": "exe-000001", "name": "e", "bindings": [b2, b1],
                        "permissions": ["executor:connect", "tools:execute"],
                        "online_until": None}  # registering is not a heartbeat
        error(await client.get("/v1/executors/exe-000001", headers=OTHER), 404)
        auth = {"Authorization": f"Bearer {made['token']}"}
        beat = await post(client, "/v1/executor/heartbeat", {}, 200, auth)
        assert beat == {"executor_id": "exe-000001", "online_until": clock.now() + 60}
        seen = (await client.get("/v1/executors/exe-000001")).json()
        assert seen["online_until"] == clock.now() + 60

    one_app(test)


def test_credential_kinds_both_ways() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [call], session_id = await waiting(client, clock, provider=provider)
        binding = await binding_of(client, run_id)
        connect = await register(client, [binding], permissions=["executor:connect"])
        full = await register(client, [binding])
        cid = call["call_id"]
        # A service credential, whatever it holds, is refused on every executor endpoint.
        for method, path in (("POST", "/v1/executor/heartbeat"),
                             ("GET", "/v1/executor/candidates"),
                             ("GET", f"/v1/executor/calls/{cid}"),
                             ("POST", f"/v1/tool-calls/{cid}/claims"),
                             ("POST", f"/v1/tool-calls/{cid}/receipts"),
                             ("POST", f"/v1/tool-calls/{cid}/detach")):
            body = error(await client.request(method, path, json={}), 403, "Authorization")
            assert body["message"] == "an executor credential is needed"
            error(await client.request(method, path, json={},
                                       headers={"Authorization": "Bearer nope"}), 401)
        # An executor credential is refused on every other endpoint but health.
        assert (await client.get("/v1/health", headers=full)).status_code == 200
        for method, path in (("GET", f"/v1/runs/{run_id}"),
                             ("GET", f"/v1/sessions/{session_id}/history"),
                             ("POST", "/v1/bindings"),
                             ("POST", f"/v1/tool-calls/{cid}/cancel"),
                             ("GET", "/v1/executors/exe-000001"),
                             ("POST", "/v1/tools/dry-run")):
            body = error(await client.request(method, path, json={}, headers=full), 403,
                         "Authorization")
            assert body["message"] == "executor credentials serve only the executor API"
        # Connecting is not executing (EXE-04): heartbeat and candidates, no claim or receipt.
        listed = (await client.get("/v1/executor/candidates", headers=connect)).json()
        assert [c["call_id"] for c in listed["candidates"]] == [cid]
        error(await client.post(f"/v1/tool-calls/{cid}/claims", json={}, headers=connect), 403)
        error(await receipt(client, cid, connect, {}), 403)
        error(await client.post(f"/v1/tool-calls/{cid}/detach", json={}, headers=connect), 403)
        # A token derived under another secret, or for an executor the store lacks: 401.
        token = full["Authorization"].removeprefix("Bearer ")
        forged = token[:-1] + ("0" if token[-1] != "0" else "1")
        for bad in (forged, token.replace("exe-000002", "exe-000009")):
            error(await client.get("/v1/executor/candidates",
                                   headers={"Authorization": f"Bearer {bad}"}), 401)
        assert (await tool_calls(client, run_id))[0]["state"] == "dispatchable"
        await claim(client, cid, full)  # still claimable by a proper executor

    one_app(test)


def test_executor_secret_derives_the_tokens() -> None:
    async def main() -> None:
        tokens = []
        for secret in ("one", "two"):
            app = create_app(executor_secret=secret)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                         base_url="http://r.test", headers=runkit.FULL) as c:
                b = (await post(c, "/v1/bindings", {"name": "a"}))["binding_id"]
                tokens.append((await post(c, "/v1/executors", {"name": "e", "bindings": [b]}))[
                    "token"])
            await app.state.runtime.aclose()
        assert tokens[0] != tokens[1]
        assert all(t.startswith("arck-exe-exe-000001-") for t in tokens)

    asyncio.run(main())


# -- online, scope, candidates, claims -----------------------------------------------------------


def test_online_for_60_seconds_after_a_heartbeat() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [call], _ = await waiting(client, clock, provider=provider)
        auth = await register(client, [await binding_of(client, run_id)], online=False)
        path = f"/v1/tool-calls/{call['call_id']}/claims"
        error(await client.post(path, json={}, headers=auth), 409, code="executor_offline")
        await post(client, "/v1/executor/heartbeat", {}, 200, auth)
        await clock.sleep(61)
        error(await client.post(path, json={}, headers=auth), 409, code="executor_offline")
        await post(client, "/v1/executor/heartbeat", {}, 200, auth)
        await clock.sleep(59)
        await post(client, path, {}, 201, auth)

    one_app(test)


def test_scope_refuses_naming_no_argument() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        secret = "ARG-SECRET-42"
        run_id, [call], _ = await waiting(client, clock, arguments={"q": secret},
                                          provider=provider)
        elsewhere = (await post(client, "/v1/bindings", {"name": "elsewhere"}))["binding_id"]
        outside = await register(client, [elsewhere])
        cid = call["call_id"]
        refused = await client.post(f"/v1/tool-calls/{cid}/claims", json={}, headers=outside)
        error(refused, 403, "call_id")
        assert secret not in refused.text
        error(await receipt(client, cid, outside, {"receipt_id": "r", "claim_id": "cl-000001",
                                                   "kind": "accepted"}), 403)
        listed = await client.get("/v1/executor/candidates", headers=outside)
        assert listed.json() == {"candidates": []}
        error(await client.get(f"/v1/executor/calls/{cid}", headers=outside), 404)
        inside = await register(client, [elsewhere, await binding_of(client, run_id)])
        listed = await client.get("/v1/executor/candidates", headers=inside)
        assert listed.json() == {"candidates": [{
            "call_id": cid, "binding_id": await binding_of(client, run_id),
            "tool_name": "lookup", "cancel_requested": False}]}
        assert secret not in listed.text
        assert "grant" not in listed.text
        error(await client.post("/v1/tool-calls/tc-999999/claims", json={}, headers=inside),
              404, "call_id")
        error(await client.post(f"/v1/tool-calls/{cid}/claims", json={"x": 1},
                                headers=inside), 422, "/x")

    one_app(test)


def test_exactly_one_of_concurrent_claims_wins() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, calls, _ = await waiting(client, clock, calls=3, provider=provider)
        binding = await binding_of(client, run_id)
        executors = [await register(client, [binding]) for _ in range(4)]
        for call in calls:
            answers = await asyncio.gather(*(
                client.post(f"/v1/tool-calls/{call['call_id']}/claims", json={}, headers=a)
                for a in executors))
            assert sorted(a.status_code for a in answers) == [201, 409, 409, 409]
        assert [c["state"] for c in await tool_calls(client, run_id)] == ["claimed"] * 3
        listed = await client.get("/v1/executor/candidates", headers=executors[0])
        assert listed.json() == {"candidates": []}
        events = of(await event_list(client, run_id), "tool_call.claimed")
        assert len(events) == 3

    one_app(test)


def test_a_claim_not_accepted_within_its_lease_lapses() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [call], _ = await waiting(client, clock, provider=provider)
        binding = await binding_of(client, run_id)
        first, second = await register(client, [binding]), await register(client, [binding])
        cid = call["call_id"]
        answered = await post(client, f"/v1/tool-calls/{cid}/claims", {}, 201, first)
        assert answered["lease_until"] == clock.now() + 30
        old = answered["claim_id"]
        error(await client.post(f"/v1/tool-calls/{cid}/claims", json={}, headers=second), 409)
        view = (await client.get(f"/v1/executor/calls/{cid}", headers=first)).json()
        assert view == {"call_id": cid, "state": "claimed", "claim_id": old,
                        "cancel_requested": False, "run_ended": False}
        await clock.sleep(30)
        assert (await tool_calls(client, run_id))[0]["state"] == "dispatchable"
        listed = (await client.get("/v1/executor/candidates", headers=second)).json()
        assert [c["call_id"] for c in listed["candidates"]] == [cid]
        view = (await client.get(f"/v1/executor/calls/{cid}", headers=first)).json()
        assert (view["state"], view["claim_id"]) == ("dispatchable", None)
        late = {"receipt_id": "a1", "claim_id": old, "kind": "accepted"}
        error(await receipt(client, cid, first, late), 409, "/claim_id")  # EXE-17
        await post(client, "/v1/executor/heartbeat", {}, 200, second)
        new = await claim(client, cid, second)
        assert new != old
        events = await event_list(client, run_id)
        [lapsed] = [e for e in events if e["type"] == "tool_call.claim_lapsed"]
        assert lapsed["data"] == {"call_id": cid, "claim_id": old,
                                  "lapsed_at": answered["lease_until"]}
        assert events.index(lapsed) < max(i for i, e in enumerate(events)
                                          if e["type"] == "tool_call.claimed")
        error(await receipt(client, cid, first, late), 409, "/claim_id")
        error(await receipt(client, cid, first, {**late, "claim_id": new}), 409, "/claim_id")
        ok = await receipt(client, cid, second, {**late, "claim_id": new})
        assert ok.json()["state"] == "accepted"
        await clock.sleep(40)  # accepted: no lease any more
        assert (await tool_calls(client, run_id))[0]["state"] == "accepted"
        error(await client.get(f"/v1/executor/calls/{cid}",
                               headers=await register(client, [binding])), 404)

    one_app(test)


def test_the_grant_names_subject_agent_versions_and_digest() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        arguments = {"q": "é ü", "n": 1, "a": [1, 2]}
        run_id, [call], session_id = await waiting(client, clock, arguments=arguments,
                                                   subject="user:42", provider=provider)
        binding = await binding_of(client, run_id)
        auth = await register(client, [binding])
        grant = (await post(client, f"/v1/tool-calls/{call['call_id']}/claims", {}, 201,
                            auth))["grant"]
        s = (await client.get(f"/v1/sessions/{session_id}")).json()
        assert s["subject"] == "user:42"
        v = (await client.get(f"/v1/agent-versions/{s['agent_version']}")).json()
        canonical = json.dumps(arguments, ensure_ascii=False, sort_keys=True,
                               separators=(",", ":"))
        assert grant == {
            "subject": {"tenant": "t1", "id": "user:42"}, "agent_id": runkit.AGENT,
            "agent_version": s["agent_version"], "tool_set_id": v["tool_set_id"],
            "tool_name": "lookup", "binding_id": binding, "run_id": run_id,
            "call_id": call["call_id"], "arguments": arguments,
            "arguments_digest": "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()}
        # Default subject; arguments that do not parse are given as the raw string.
        run2, [call2], session2 = await waiting(client, clock, arguments="not json {",
                                                script="t", provider=provider)
        auth2 = await register(client, [await binding_of(client, run2)])
        grant2 = (await post(client, f"/v1/tool-calls/{call2['call_id']}/claims", {}, 201,
                             auth2))["grant"]
        assert grant2["subject"] == {"tenant": "t1", "id": f"session:{session2}"}
        assert grant2["arguments"] == "not json {"
        digest = hashlib.sha256(json.dumps("not json {").encode()).hexdigest()
        assert grant2["arguments_digest"] == f"sha256:{digest}"
        error(await client.post("/v1/sessions", json={
            "agent_version": s["agent_version"], "wallet_id": s["wallet_id"], "subject": ""}),
            422, "/subject")

    one_app(test)


# -- receipts ------------------------------------------------------------------------------------


def test_receipts_in_the_judgement_order() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [c1, c2], session_id = await waiting(client, clock, calls=2, provider=provider)
        binding = await binding_of(client, run_id)
        auth, other = await register(client, [binding]), await register(client, [binding])
        cid = c1["call_id"]
        claim_id = await claim(client, cid, auth)
        base = {"claim_id": claim_id}
        # Kind and state: nothing but accepted before acceptance.
        for body in ({"receipt_id": "p0", "kind": "progress", "sequence": 1},
                     {"receipt_id": "f0", "kind": "completed", "result": 1}):
            error(await receipt(client, cid, auth, {**base, **body}), 409, "/kind")
        # Members by kind (422, naming the member).
        for body, path in (({"receipt_id": "x", "kind": "accepted", "result": 1}, "/result"),
                           ({"receipt_id": "x", "kind": "completed"}, "/result"),
                           ({"receipt_id": "x", "kind": "failed"}, "/error"),
                           ({"receipt_id": "x", "kind": "progress"}, "/sequence"),
                           ({"receipt_id": "x", "kind": "progress", "sequence": 0}, "/sequence"),
                           ({"receipt_id": "x", "kind": "progress", "sequence": 2**53 + 1},
                            "/sequence"),
                           ({"receipt_id": "x", "kind": "completed", "sequence": 1}, "/sequence"),
                           ({"receipt_id": "", "kind": "accepted"}, "/receipt_id"),
                           ({"receipt_id": "x", "kind": "done"}, "/kind"),
                           ({"receipt_id": "x", "kind": "failed",
                             "error": {"code": "e"}}, "/error/message")):
            error(await receipt(client, cid, auth, {**base, **body}), 422, path)
        deep: Any = 1
        for _ in range(513):
            deep = [deep]
        error(await receipt(client, cid, auth, {**base, "receipt_id": "d", "kind": "completed",
                                                "result": deep}), 422)
        # A foreign claim: 409 whatever the kind.
        error(await receipt(client, cid, other, {**base, "receipt_id": "a", "kind": "accepted"}),
              409, "/claim_id")
        first = await receipt(client, cid, auth, {**base, "receipt_id": "a", "kind": "accepted"})
        assert first.json() == {"call_id": cid, "receipt_id": "a", "replayed": False,
                                "state": "accepted", "run_ended": False, "applied": True}
        again = await receipt(client, cid, auth, {**base, "receipt_id": "a", "kind": "accepted"})
        assert again.json() == {**first.json(), "replayed": True}
        error(await receipt(client, cid, auth, {**base, "receipt_id": "a2", "kind": "accepted"}),
              409, "/kind")
        # Progress: sequences strictly increasing.
        for n, body in enumerate(({"sequence": 1, "data": {"pct": 10}}, {"sequence": 5})):
            ok = await receipt(client, cid, auth, {**base, "receipt_id": f"p{n + 1}",
                                                   "kind": "progress", **body})
            assert ok.json()["state"] == "accepted"
        for seq in (5, 4):
            error(await receipt(client, cid, auth, {**base, "receipt_id": f"p-{seq}",
                                                    "kind": "progress", "sequence": seq}),
                  409, "/sequence")
        progress = of(await event_list(client, run_id), "tool_call.progress")
        assert progress == [{"call_id": cid, "receipt_id": "p1", "sequence": 1,
                             "data": {"pct": 10}},
                            {"call_id": cid, "receipt_id": "p2", "sequence": 5}]
        # Replay beats everything: the same body answers the first answer.
        replayed = await receipt(client, cid, auth, {**base, "receipt_id": "p1",
                                                     "kind": "progress", "sequence": 1,
                                                     "data": {"pct": 10}})
        assert replayed.json()["replayed"] is True
        error(await receipt(client, cid, auth, {**base, "receipt_id": "p1", "kind": "progress",
                                                "sequence": 9}), 409, "/receipt_id")
        # The final; a second final (another receipt_id) is 409 while the run still waits.
        final = {**base, "receipt_id": "f1", "kind": "completed", "result": {"ok": True}}
        done = await receipt(client, cid, auth, final)
        assert done.json() == {"call_id": cid, "receipt_id": "f1", "replayed": False,
                               "state": "completed", "run_ended": False, "applied": True}
        error(await receipt(client, cid, auth, {**final, "receipt_id": "f2"}), 409, "/kind")
        error(await receipt(client, cid, auth, {**final, "result": {"ok": False}}), 409,
              "/receipt_id")  # nothing overwritten
        error(await receipt(client, cid, auth, {**base, "receipt_id": "p9", "kind": "progress",
                                                "sequence": 9}), 409, "/kind")
        assert (await receipt(client, cid, auth, final)).json() == {**done.json(),
                                                                   "replayed": True}
        formal = await items(client, session_id, "history")
        assert [i for i in formal if i["type"] == "receipt"] == [
            {"type": "receipt", "call_id": cid, "receipt_id": "f1", "kind": "completed",
             "result": {"ok": True}}]
        assert (await client.get(f"/v1/runs/{run_id}")).json()["state"] == "waiting_tools"
        await answer(client, c2, {"ok": 2}, receipt_id="g1")
        assert (await settled(client, clock, run_id))["end_reason"] == "completed"
        # Replay still answers the first answer after the run has ended (EXE-08).
        assert (await receipt(client, cid, auth, final)).json() == {**done.json(),
                                                                   "replayed": True}

    one_app(test)


def test_failed_and_cancelled_enter_history() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [c1, c2], session_id = await waiting(client, clock, calls=2, provider=provider)
        failure = {"code": "not_found", "message": "m" * 3000}
        await answer(client, c1, None, "failed", "f1", error=failure)
        await answer(client, c2, None, "cancelled", "c1", reason="user asked")
        assert [c["state"] for c in await tool_calls(client, run_id)] == ["failed", "cancelled"]
        assert (await settled(client, clock, run_id))["end_reason"] == "completed"
        tools = [json.loads(m["content"]) for m in await items(client, session_id,
                                                                "execution-history")
                 if m["role"] == "tool"]
        assert tools[0]["truncation"]["original_bytes"] > 1024  # projected to the budget
        assert tools[1] == {"cancelled": True, "reason": "user asked"}
        stored = of(await event_list(client, run_id), "receipt.stored")
        assert [(s["kind"], s["truncated"]) for s in stored] == [("failed", True),
                                                                 ("cancelled", False)]
        formal = [i for i in await items(client, session_id, "history") if i["type"] == "receipt"]
        assert formal[0]["error"] == failure

    one_app(test)


def test_run_cancel_cancels_no_business_task() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [c1, c2], session_id = await waiting(client, clock, calls=2, provider=provider)
        auth = await executor(client, c1)
        claim_1 = await accepted(client, c1["call_id"], auth)
        claim_2 = await claim(client, c2["call_id"], auth)
        before = (await items(client, session_id, "history"),
                  await items(client, session_id, "execution-history"),
                  await event_list(client, run_id))
        await post(client, f"/v1/runs/{run_id}/cancel", {}, 200)
        assert [c["state"] for c in await tool_calls(client, run_id)] == ["accepted", "claimed"]
        late = {"receipt_id": "late", "claim_id": claim_1, "kind": "completed",
                "result": {"ok": 1}}
        stored = await receipt(client, c1["call_id"], auth, late)
        assert stored.json() == {"call_id": c1["call_id"], "receipt_id": "late",
                                 "replayed": False, "state": "accepted", "run_ended": True,
                                 "applied": False}
        assert (await receipt(client, c1["call_id"], auth, late)).json()["replayed"] is True
        progress = {"receipt_id": "pg", "claim_id": claim_1, "kind": "progress", "sequence": 1}
        assert (await receipt(client, c1["call_id"], auth, progress)).json()["applied"] is False
        refused = {"receipt_id": "acc", "claim_id": claim_2, "kind": "accepted"}
        error(await receipt(client, c2["call_id"], auth, refused), 409)  # nothing may start
        error(await client.post(f"/v1/tool-calls/{c2['call_id']}/claims", json={},
                                headers=await register(client, [await binding_of(client,
                                                                                 run_id)])),
              409)
        view = (await client.get(f"/v1/executor/calls/{c1['call_id']}", headers=auth)).json()
        assert (view["state"], view["run_ended"]) == ("accepted", True)
        after = (await items(client, session_id, "history"),
                 await items(client, session_id, "execution-history"),
                 await event_list(client, run_id))
        assert after[0] == before[0]
        # The late receipts enter nothing; the cancel closed both open calls as unknown.
        closed = after[1][len(before[1]):]
        assert after[1][:len(before[1])] == before[1]
        assert [(m["role"], json.loads(m["content"])["outcome"]) for m in closed] == \
            [("tool", "unknown")] * 2
        assert [e["type"] for e in after[2][len(before[2]):]] == ["run.ended"]
        assert (await tool_calls(client, run_id))[0]["state"] == "accepted"
        listed = (await client.get("/v1/executor/candidates", headers=auth)).json()
        assert listed == {"candidates": []}  # a run that ended offers nothing
        r2 = await run(client, session_id, "Next")  # the session is free again
        assert r2["state"] == "queued"

    one_app(test)


# -- detach and business cancel -----------------------------------------------------------------


def test_detach_before_and_after_acceptance() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [c1, c2], session_id = await waiting(client, clock, calls=2, provider=provider)
        auth = await executor(client, c1)
        other = await register(client, [await binding_of(client, run_id)])
        claim_1 = await claim(client, c1["call_id"], auth)
        path = f"/v1/tool-calls/{c1['call_id']}/detach"
        error(await client.post(path, json={"claim_id": claim_1}, headers=other), 409,
              "/claim_id")
        error(await client.post(path, json={}, headers=auth), 422, "/claim_id")
        assert (await post(client, path, {"claim_id": claim_1}, 200, auth)) == {
            "call_id": c1["call_id"], "state": "dispatchable"}
        error(await client.post(path, json={"claim_id": claim_1}, headers=auth), 409)
        error(await receipt(client, c1["call_id"], auth, {
            "receipt_id": "a", "claim_id": claim_1, "kind": "accepted"}), 409, "/claim_id")
        listed = (await client.get("/v1/executor/candidates", headers=auth)).json()
        assert c1["call_id"] in [c["call_id"] for c in listed["candidates"]]
        # After acceptance: the outcome is unknown, whole in history, never dispatched again.
        claim_2 = await accepted(client, c2["call_id"], auth)
        answered = await post(client, f"/v1/tool-calls/{c2['call_id']}/detach",
                              {"claim_id": claim_2}, 200, auth)
        assert answered == {"call_id": c2["call_id"], "state": "reconciliation_required"}
        listed = (await client.get("/v1/executor/candidates", headers=auth)).json()
        assert c2["call_id"] not in [c["call_id"] for c in listed["candidates"]]
        error(await receipt(client, c2["call_id"], auth, {
            "receipt_id": "f", "claim_id": claim_2, "kind": "completed", "result": 1}), 409)
        await answer(client, c1, {"ok": 1}, receipt_id="r1")
        assert (await settled(client, clock, run_id))["end_reason"] == "completed"
        tools = [json.loads(m["content"]) for m in await items(client, session_id,
                                                                "execution-history")
                 if m["role"] == "tool"]
        assert tools[0] == {"outcome": "unknown", "reason": "executor detached after acceptance"}
        states = [c["state"] for c in await tool_calls(client, run_id)]
        assert states == ["completed", "reconciliation_required"]
        detached = of(await event_list(client, run_id), "tool_call.detached")
        assert [d["accepted"] for d in detached] == [False, True]

    one_app(test)


def test_business_cancel_only_asks() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [call], _ = await waiting(client, clock, provider=provider)
        cid = call["call_id"]
        auth = await executor(client, call)
        claim_id = await accepted(client, cid, auth)
        path = f"/v1/tool-calls/{cid}/cancel"
        error(await client.post(path, json={},
                                headers={"Authorization": "Bearer arck-dev-noscope"}), 403)
        error(await client.post(path, json={},
                                headers={"Authorization": "Bearer arck-dev-readonly"}), 403)
        error(await client.post(path, json={}, headers=OTHER), 404)
        error(await client.post(path, json={"x": 1}), 422, "/x")
        assert (await post(client, path, {}, 200)) == {"call_id": cid, "state": "accepted",
                                                       "cancel_requested": True}
        assert (await post(client, path, {}, 200))["cancel_requested"] is True
        [view] = await tool_calls(client, run_id)
        assert (view["state"], view["cancel_requested"]) == ("accepted", True)
        seen = (await client.get(f"/v1/executor/calls/{cid}", headers=auth)).json()
        assert seen["cancel_requested"] is True
        assert (await client.get(f"/v1/runs/{run_id}")).json()["state"] == "waiting_tools"
        assert len(of(await event_list(client, run_id), "tool_call.cancel_requested")) == 1
        done = await receipt(client, cid, auth, {"receipt_id": "c", "claim_id": claim_id,
                                                 "kind": "cancelled"})
        assert done.json()["state"] == "cancelled"
        error(await client.post(path, json={}), 409)  # final: nothing to cancel
        assert (await settled(client, clock, run_id))["end_reason"] == "completed"

    one_app(test)


def test_another_tenants_executor_finds_nothing() -> None:
    async def test(world: App) -> None:
        client, provider, clock, _ = world
        run_id, [call], _ = await waiting(client, clock, provider=provider)
        cid = call["call_id"]
        mine = await post(client, "/v1/bindings", {"name": "o"}, headers=OTHER)
        theirs = await register(client, [mine["binding_id"]], headers=OTHER)
        for path, body in ((f"/v1/tool-calls/{cid}/claims", {}),
                           (f"/v1/tool-calls/{cid}/receipts",
                            {"receipt_id": "r", "claim_id": "cl-000001", "kind": "accepted"}),
                           (f"/v1/tool-calls/{cid}/detach", {"claim_id": "cl-000001"})):
            error(await client.post(path, json=body, headers=theirs), 404, "call_id")
        error(await client.get(f"/v1/executor/calls/{cid}", headers=theirs), 404)
        assert (await client.get("/v1/executor/candidates", headers=theirs)).json() == {
            "candidates": []}
        error(await client.post(f"/v1/tool-calls/{cid}/cancel", json={}, headers=OTHER), 404)
        assert (await tool_calls(client, run_id))[0]["state"] == "dispatchable"

    one_app(test)


def test_an_executor_token_holds_only_under_its_secret() -> None:
    """Tokens are derived from the executor secret: the same store under another secret
    (arck serve --executor-secret / ARCK_EXECUTOR_SECRET) knows none of them."""
    from arck.reference.clock import ManualClock
    from arck.reference.runtime.executors import Executors
    from arck.reference.store import Store

    store, clock = Store(), ManualClock()
    first = Executors(store, clock, "a-secret-of-sixteen")
    binding = store.add_binding("default", "b", "a binding").binding_id
    registered = first.register("default", {"name": "ex", "bindings": [binding]})
    assert first.principal(registered.token) is not None
    assert Executors(store, clock, "another-secret-of-16").principal(registered.token) is None
