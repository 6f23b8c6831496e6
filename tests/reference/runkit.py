"""What the in-process tests of runs share: the development credential, one channel and its
prices, a world of apps on one store, provider and virtual clock (processes that come and
go), the requests that set up a session, start a run and read it back, and an executor that
answers a tool call (`answer`: claim, accept, final receipt)."""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from arck.reference.app import create_app
from arck.reference.engine import Engine
from arck.reference.runtime.runstore import RunStore
from arck.simulator.clock import VirtualClock
from arck.simulator.provider import SimulatedProvider, script_tag

FULL = {"Authorization": "Bearer arck-dev-full"}
PRICES = {"input": 2_000_000, "cached_input": 500_000, "output": 8_000_000}
CHANNEL = {"name": "main", "model": "sim-1", "input_capacity": 100_000,
           "total_capacity": 128_000, "output_capacity": 4_000, "timeout_ms": 30_000,
           "prices": PRICES}
RESERVATION = math.ceil((100_000 * 2_000_000 + 4_000 * 8_000_000) / 1_000_000)
FUNDS = 10 * RESERVATION
SCHEMA = {"type": "object"}
LEASE = 15.0
AGENT = "agent-1"


class World:
    """One store, one provider, one clock; apps come and go on it like processes."""

    def __init__(self, *, autojump: bool = True) -> None:
        # autojump=False: time moves only by `clock.advance`, for a test whose interleaving
        # must not depend on when the loop happens to be idle.
        self.clock = VirtualClock(autojump=autojump)
        self.provider = SimulatedProvider(clock=self.clock)
        self.engine = Engine()
        self.apps: list[Any] = []

    def client(self, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
        app = create_app(self.engine, clock=self.clock, lease_seconds=LEASE,
                         provider_transport=transport or self.provider.async_transport())
        self.apps.append(app)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://reference.test", headers=FULL)

    async def crash(self) -> None:
        """The last app's workers die mid-call (SIGKILL, in-process): nothing is finished."""
        await self.apps[-1].state.runtime.workers.stop()

    async def close(self) -> None:
        for app in self.apps:
            await app.state.runtime.aclose()


# One app on a world, as a test of a single process sees it: its client, the provider, the
# clock and the app's run store.
App = tuple[httpx.AsyncClient, SimulatedProvider, VirtualClock, RunStore]
Transport = Callable[[SimulatedProvider], httpx.AsyncBaseTransport]


def scenario(test: Callable[[World], Awaitable[None]]) -> None:
    async def main() -> None:
        world = World()
        try:
            await test(world)
        finally:
            await world.close()

    asyncio.run(main())


def one_app(test: Callable[[App], Awaitable[None]], transport: Transport | None = None) -> None:
    """`test` on the one app of a world; `transport`, what the app reaches the provider on."""

    async def on(world: World) -> None:
        wire = transport(world.provider) if transport is not None else None
        async with world.client(wire) as client:
            await test((client, world.provider, world.clock, world.apps[-1].state.runtime.runs))

    scenario(on)


class Swallow(httpx.AsyncBaseTransport):
    """Forwards to the provider, except what is named, which never leaves: `completions`,
    model requests (lost before they reached the provider); `lookups`, the provider's request
    lookups (they fail with 503)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, *, completions: bool = False,
                 lookups: bool = False) -> None:
        self.inner = inner
        self.completions = completions
        self.lookups = lookups

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.completions and request.url.path.endswith("/chat/completions"):
            await asyncio.Event().wait()
        if self.lookups and "/arck/requests" in request.url.path:
            return httpx.Response(503, json={"error": "down"})
        return await self.inner.handle_async_request(request)


def charge(usage: dict[str, Any], prices: dict[str, int] = PRICES) -> int:
    """What a model call with this usage costs at these prices (micro-units per million)."""
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    cost: int = math.ceil(((usage["prompt_tokens"] - cached) * prices["input"]
                           + cached * prices["cached_input"]
                           + usage["completion_tokens"] * prices["output"]) / 1_000_000)
    return cost


async def post(client: httpx.AsyncClient, path: str, body: Any, status: int = 201,
               headers: dict[str, str] | None = None) -> Any:
    response = await client.post(path, json=body, headers=headers)
    assert response.status_code == status, response.text
    return response.json()


# The executor registered for each binding, per client (docs/executors.md): its headers.
_EXECUTORS: weakref.WeakKeyDictionary[httpx.AsyncClient, dict[str, dict[str, str]]] = (
    weakref.WeakKeyDictionary())


@dataclass(frozen=True)
class Answered:
    """A call answered through the executor flow: the final receipt's `answer`, the `body`
    sent, and the executor's `headers` (to send it again, or another receipt)."""

    call_id: str
    answer: dict[str, Any]
    body: dict[str, Any]
    headers: dict[str, str]
    claim_id: str

    @property
    def path(self) -> str:
        return f"/v1/tool-calls/{self.call_id}/receipts"


async def executor(client: httpx.AsyncClient, call: dict[str, Any]) -> dict[str, str]:
    """The headers of an executor of the call's binding, registered once per client (the
    binding found through run, session, version and tool set), after a heartbeat."""
    run_answer = (await client.get(f"/v1/runs/{call['run_id']}")).json()
    session_answer = (await client.get(f"/v1/sessions/{run_answer['session_id']}")).json()
    version_answer = (await client.get(
        f"/v1/agent-versions/{session_answer['agent_version']}")).json()
    tools = (await client.get(f"/v1/tool-sets/{version_answer['tool_set_id']}")).json()["tools"]
    [binding] = [t["binding_id"] for t in tools if t["name"] == call["name"]]
    known = _EXECUTORS.setdefault(client, {})
    if binding not in known:
        registered = await post(client, "/v1/executors", {"name": "e", "bindings": [binding]})
        known[binding] = {"Authorization": f"Bearer {registered['token']}"}
    await post(client, "/v1/executor/heartbeat", {}, 200, headers=known[binding])
    return known[binding]


async def answer(client: httpx.AsyncClient, call: dict[str, Any], result: Any = None,
                 kind: str = "completed", receipt_id: str = "rc-1", status: int = 200,
                 **members: Any) -> Answered:
    """Answer a dispatchable call as an executor does: claim it, accept, then send the final
    receipt `{"receipt_id", "kind", "result", **members}` (no `result` when it is None and
    `members` are given), expecting `status` for the final."""
    headers = await executor(client, call)
    call_id = call["call_id"]
    claimed = await post(client, f"/v1/tool-calls/{call_id}/claims", {}, 201, headers=headers)
    path = f"/v1/tool-calls/{call_id}/receipts"
    await post(client, path, {"receipt_id": f"{receipt_id}.accepted",
                              "claim_id": claimed["claim_id"], "kind": "accepted"}, 200,
               headers=headers)
    body: dict[str, Any] = {"receipt_id": receipt_id, "claim_id": claimed["claim_id"],
                            "kind": kind, **members}
    if result is not None or not members:
        body["result"] = result
    final = await post(client, path, body, status, headers=headers)
    return Answered(call_id, final, body, headers, claimed["claim_id"])


async def version(
    client: httpx.AsyncClient, script: str, *, channel: dict[str, Any] = CHANNEL,
    budget: int | None = 1024, prompt: str = "You help.",
    summary: dict[str, Any] | None = None, context: int | None = None,
    capability: dict[str, Any] | None = None,
) -> str:
    """A new version of AGENT on a new `channel`, answered by the provider's `script`: one
    tool, lookup, whose results are cut to `budget` bytes in context (None: no tool at all),
    its binding declaring `capability` if given; `summary`, a channel of its own for
    summaries; `context`, the max_context_tokens the version must have."""
    tools = []
    if budget is not None:
        binding = await post(client, "/v1/bindings", {"name": "orders", **(
            {"capability": capability} if capability is not None else {})})
        tools.append({"name": "lookup", "description": "Read an order.",
                      "binding_id": binding["binding_id"], "input_schema": SCHEMA,
                      "output_schema": SCHEMA, "max_result_context_bytes": budget})
    tool_set = await post(client, "/v1/tool-sets", {"name": "t", "tools": tools})
    body = {"tool_set_id": tool_set["tool_set_id"],
            "channel_id": (await post(client, "/v1/channels", channel))["channel_id"],
            "system_prompt": f"{prompt} {script_tag(script)}"}
    if summary is not None:
        body["summary_channel_id"] = (await post(client, "/v1/channels", summary))["channel_id"]
    answer = await post(client, f"/v1/agents/{AGENT}/versions", body)
    if context is not None:
        assert answer["max_context_tokens"] == context
    return str(answer["agent_version"])


async def wallet(client: httpx.AsyncClient, funds: int = FUNDS, name: str = "w") -> str:
    """A new wallet, with `funds` deposited (none: nothing)."""
    answer = await post(client, "/v1/wallets", {"name": name})
    if funds:
        await post(client, f"/v1/wallets/{answer['wallet_id']}/deposits", {"amount": funds}, 200)
    return str(answer["wallet_id"])


async def session(
    client: httpx.AsyncClient, script: str, *, funds: int = FUNDS, wallet_id: str | None = None,
    wallet_name: str = "w", channel: dict[str, Any] = CHANNEL, budget: int | None = 1024,
    prompt: str = "You help.", summary: dict[str, Any] | None = None,
    context: int | None = None, capability: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A session on a new version (see `version`), paid from `wallet_id`, else from a new
    wallet with `funds`."""
    agent_version = await version(client, script, channel=channel, budget=budget,
                                  prompt=prompt, summary=summary, context=context,
                                  capability=capability)
    wallet_id = wallet_id or await wallet(client, funds, wallet_name)
    answer: dict[str, Any] = await post(client, "/v1/sessions", {
        "agent_version": agent_version, "wallet_id": wallet_id})
    return answer


async def run(client: httpx.AsyncClient, session_id: str, text: str = "Hello") -> Any:
    return await post(client, f"/v1/sessions/{session_id}/runs", {"input": text})


async def until(client: httpx.AsyncClient, clock: VirtualClock, run_id: str,
                done: Callable[[dict[str, Any]], bool], limit: float = 600,
                step: float = 0.5) -> dict[str, Any]:
    """The run's snapshot once it is `done`, polled every `step` seconds of the clock."""
    begin = clock.now()
    while clock.now() - begin < limit:
        snapshot: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).json()
        if done(snapshot):
            return snapshot
        await clock.sleep(step)
    raise AssertionError(f"run {run_id} never got there: {snapshot}")


async def ended(client: httpx.AsyncClient, clock: VirtualClock, run_id: str,
                step: float = 0.5) -> dict[str, Any]:
    return await until(client, clock, run_id, lambda s: s["state"] == "ended", step=step)


async def settled(client: httpx.AsyncClient, clock: VirtualClock, run_id: str) -> dict[str, Any]:
    """Once the run has ended or waits for tool results (200 polls, a second apart)."""
    return await until(client, clock, run_id,
                       lambda s: s["state"] in {"ended", "waiting_tools"}, limit=200, step=1.0)


async def event_list(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    """The run's events, numbered from 1 without a gap."""
    answer: list[dict[str, Any]] = (await client.get(f"/v1/runs/{run_id}/events")).json()["events"]
    assert [e["id"] for e in answer] == list(range(1, len(answer) + 1))
    return answer


async def call_started(client: httpx.AsyncClient, clock: VirtualClock, run_id: str) -> None:
    """Until the run's first model call has started (100 polls, 0.01 s of the clock apart)."""
    for _ in range(100):
        if of(await event_list(client, run_id), "model_call.started"):
            return
        await clock.sleep(0.01)
    raise AssertionError("no model call started")


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The data of the events of this type."""
    return [e["data"] for e in events if e["type"] == kind]
