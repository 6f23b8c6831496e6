"""The one seam to a target: the operations the checks need, and their HTTP implementation.

An implementation with another API plugs in by writing a class with the same methods (the
`Target` protocol) and naming it in the target file as `adapter = "pkg.module:Class"` (H-01).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx

from arck.simulator.asgi import SyncASGITransport
from arck.simulator.errors import StepUnavailable, TargetUnreachable

if TYPE_CHECKING:
    from arck.simulator.control import Control

REDACTED = "$ARCK_TOKEN"
FORGED_TOKEN = "arck-forged-token-0000"  # role "forged": a token no target can know
RECENT_EXCHANGES = 6
STREAM_MEDIA_TYPE = "text/event-stream"


@dataclass
class Exchange:
    """One request and its answer, kept whole so a failure can show and replay it."""

    method: str
    url: str
    request_body: bytes | None
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    role: str = "full"

    def json(self) -> Any:
        """The answer parsed leniently; checks judge strictness from `body` themselves."""
        return json.loads(self.body)

    def json_or_none(self) -> Any:
        try:
            return self.json()
        except ValueError:
            return None

    def as_curl(self) -> str:
        """A curl line reproducing the request, with the credential left as a variable."""
        parts = ["curl", "-sS", "-X", self.method, shlex.quote(self.url)]
        if self.role != "none":
            # Double quotes, so the shell fills in the token from the environment.
            parts += ["-H", f'"Authorization: Bearer {REDACTED}"']
        if self.request_body is not None:
            parts += ["-H", "'Content-Type: application/json'"]
            text = self.request_body.decode("utf-8", "backslashreplace")
            parts += ["--data-binary", shlex.quote(text[:2000] + ("…" if len(text) > 2000 else ""))]
        return " ".join(parts)

    def reproduction(self) -> str:
        """The curl line and, as a comment under it, the answer it got (`st replay` style)."""
        snippet = self.body[:200].decode("utf-8", "backslashreplace").replace("\n", " ")
        return f"{self.as_curl()}\n# → {self.status} {snippet}"

    def describe(self) -> str:
        snippet = self.body[:300].decode("utf-8", "backslashreplace")
        return f"{self.method} {self.url} as {self.role!r} → {self.status} {snippet}"


def first_event_read(headers: list[tuple[bytes, bytes]], seen: bytes) -> bool:
    """Whether a client reading an event stream has what it came for: one whole SSE event
    (a block ended by a blank line holding a field, not only `:` comments), or any bytes of
    an answer that is not an event stream."""
    kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
    if kind.split(b";")[0].strip().lower() != STREAM_MEDIA_TYPE.encode():
        return bool(seen)
    text = seen.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    blocks = text.split(b"\n\n")[:-1]  # the last part is not ended yet
    return any(line and not line.startswith(b":")
               for block in blocks for line in block.split(b"\n"))


def read_through(until_id: int | None) -> Callable[[list[tuple[bytes, bytes]], bytes], bool]:
    """`enough` for a client reading an event stream until an event whose `id` is `until_id`
    or above has come whole (never, with None: it reads until the stream ends)."""

    def enough(headers: list[tuple[bytes, bytes]], seen: bytes) -> bool:
        if until_id is None:
            return False
        text = seen.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        for block in text.split(b"\n\n")[:-1]:
            for line in block.split(b"\n"):
                name, _, value = line.partition(b":")
                if name == b"id" and value.strip().isdigit() and int(value.strip()) >= until_id:
                    return True
        return False

    return enough


@dataclass(frozen=True)
class TargetInfo:
    """What a target declares about itself; goes into the report (never credentials)."""

    name: str
    kind: str  # reference | mutant | url | adapter | app
    location: str
    profile: str  # core | reference
    capabilities: tuple[str, ...] = ()
    name_prefix: str = "arck-"
    destructive: bool = False


@runtime_checkable
class Target(Protocol):
    info: TargetInfo
    created: list[str]

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        role: str = "full",
    ) -> Exchange: ...

    def health(self) -> Exchange: ...
    def create_binding(self, name: str, role: str = "full") -> Exchange: ...
    def publish_tool_set(self, body: Any, role: str = "full") -> Exchange: ...
    def get_tool_set(self, tool_set_id: str, role: str = "full") -> Exchange: ...
    def publish_agent_version(self, agent_id: str, body: Any, role: str = "full") -> Exchange: ...
    def get_agent_version(self, version: str, role: str = "full") -> Exchange: ...
    def try_modify(self, kind: str, resource_id: str, body: Any) -> list[Exchange]: ...
    def dry_run(self, body: Any, role: str = "full") -> Exchange: ...
    def openapi(self) -> Exchange: ...
    def close(self) -> None: ...


@runtime_checkable
class CapabilityTarget(Target, Protocol):
    """A target whose bindings carry capability declarations (docs/capabilities.md):
    `declare_binding` registers one with `capability` (any JSON: checks send broken ones),
    `binding_policy` answers the policy enforced for it and `set_local_policy` sets a
    deployment's local policy for it (both reference profile)."""

    def declare_binding(self, name: str, capability: Any, role: str = "full") -> Exchange: ...
    def get_binding(self, binding_id: str, role: str = "full") -> Exchange: ...
    def binding_policy(self, binding_id: str, role: str = "full") -> Exchange: ...
    def set_local_policy(self, binding_id: str, body: Any, role: str = "full") -> Exchange: ...


@runtime_checkable
class ImportTarget(CapabilityTarget, Protocol):
    """A capability target that imports OpenAPI documents (docs/capabilities.md, CAP-15): a
    binding and a tool per declared operation, answered as `{"tool_set", "operations"}`."""

    def import_openapi(self, name: str, document: Any, role: str = "full") -> Exchange: ...


@runtime_checkable
class RuntimeTarget(Target, Protocol):
    """A target that runs agents (docs/runs.md): the steps checks of runs need.

    `control` is the harness's side (the simulated provider the target's channels call, and
    time); None when the target file points the target at no provider, and then the checks
    of runs are not applicable.
    """

    control: Control | None

    def create_channel(self, body: Any, role: str = "full") -> Exchange: ...
    def create_wallet(self, body: Any, role: str = "full") -> Exchange: ...
    def deposit(self, wallet_id: str, amount: int, role: str = "full") -> Exchange: ...
    def get_wallet(self, wallet_id: str, role: str = "full") -> Exchange: ...
    def create_session(self, body: Any, role: str = "full") -> Exchange: ...
    def history(self, session_id: str, kind: str, role: str = "full") -> Exchange: ...
    def create_run(self, session_id: str, body: Any, role: str = "full") -> Exchange: ...
    def get_run(self, run_id: str, role: str = "full") -> Exchange: ...
    def cancel_run(self, run_id: str, role: str = "full") -> Exchange: ...
    def run_events(self, run_id: str, role: str = "full") -> Exchange: ...
    def tool_calls(self, run_id: str, role: str = "full") -> Exchange: ...
    def submit_receipt(self, call_id: str, body: Any, role: str = "full") -> Exchange: ...


@runtime_checkable
class ExecutorTarget(RuntimeTarget, Protocol):
    """A target whose tool calls executors claim and answer (docs/executors.md).

    `register_executor` answers the executor's credential once; the other steps act as that
    executor, named by the role `executor_role(executor_id)`.
    """

    def register_executor(self, body: Any, role: str = "full") -> Exchange: ...
    def executor_role(self, executor_id: str) -> str: ...
    def heartbeat(self, role: str) -> Exchange: ...
    def candidates(self, role: str) -> Exchange: ...
    def executor_call(self, call_id: str, role: str) -> Exchange: ...
    def claim(self, call_id: str, role: str) -> Exchange: ...
    def detach(self, call_id: str, claim_id: str, role: str) -> Exchange: ...
    def request_tool_cancel(self, call_id: str, role: str = "full") -> Exchange: ...


class RateLimiter:
    """Spaces requests to a live service; the clock and sleep are injectable for tests."""

    def __init__(
        self,
        per_second: float | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = 1.0 / per_second if per_second else 0.0
        self.clock, self.sleep = clock, sleep
        self.next_at = 0.0
        self.lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = self.clock()
            if now < self.next_at:
                self.sleep(self.next_at - now)
                now = self.next_at
            self.next_at = now + self.interval


class Waiting:
    """Which request the harness is waiting on, if any: when a check's time runs out, the
    watchdog tells a target that did not answer from a check that spent its own time (its
    search, its simulators, its waits between requests)."""

    def __init__(self) -> None:
        self.request: str | None = None
        self.since = 0.0
        self.answered_at: float | None = None

    def __call__(self, what: str) -> _WaitingOn:
        return _WaitingOn(self, what)


class _WaitingOn:
    def __init__(self, waiting: Waiting, what: str) -> None:
        self.waiting, self.what = waiting, what

    def __enter__(self) -> None:
        self.waiting.request, self.waiting.since = self.what, time.monotonic()

    def __exit__(self, *exc: object) -> None:
        self.waiting.request = None
        self.waiting.answered_at = time.monotonic()


WAITING = Waiting()  # one harness process runs one check at a time on its main thread


class HttpTarget:
    """The reference wire profile over httpx: in-process (ASGI) or a URL."""

    def __init__(
        self,
        client: httpx.Client,
        info: TargetInfo,
        tokens: dict[str, str | None],
        limiter: RateLimiter | None = None,
    ) -> None:
        self.client = client
        self.info = info
        self.tokens = tokens
        self.limiter = limiter or RateLimiter(None)
        self.created: list[str] = []
        self.control: Control | None = None
        # Stops the service abruptly and starts it again on the same durable state (RUN-02):
        # set in-process, or by the target file's `restart` command; None: no such step.
        self.restarter: Callable[[], None] | None = None
        # Stops the service, writes the named tool sets back as a store of the revision before
        # byte budgets held them (token budgets) and starts it again (DEF-07); in-process only.
        self.legacy_restarter: Callable[[Sequence[str], int], None] | None = None
        self.restarts = 0  # how often the service was killed and started again by a step
        self.exchanges = 0
        self.dev_credentials = False  # the reference's development tokens, no target file's
        # The last few exchanges: a failing input's own requests, for its case file (H-02).
        self.recent: deque[Exchange] = deque(maxlen=RECENT_EXCHANGES)
        # Called with every exchange as it is made; one may raise to fail the check that made
        # it (the conformance session's judge of the profile's success statuses).
        self.observers: list[Callable[[Exchange], None]] = []

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        role: str = "full",
    ) -> Exchange:
        headers = self._headers(role, "application/json")
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        if content is not None:
            headers["Content-Type"] = "application/json"
        self.limiter.wait()
        try:
            with WAITING(f"{method} {path}"):
                response = self.client.request(method, path, content=content, headers=headers)
        except httpx.TransportError as exc:
            raise TargetUnreachable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        self.exchanges += 1
        exchange = Exchange(
            method=method,
            url=str(response.request.url),
            request_body=content,
            status=response.status_code,
            body=response.content,
            headers=dict(response.headers),
            role=role,
        )
        self._seen(exchange)
        return exchange

    def _seen(self, exchange: Exchange) -> None:
        self.recent.append(exchange)
        for observe in self.observers:
            observe(exchange)

    def _headers(self, role: str, accept: str) -> dict[str, str]:
        headers = {"Accept": accept}
        if role != "none":
            token = FORGED_TOKEN if role == "forged" else self.tokens.get(role)
            if token is None:
                raise TargetUnreachable(f"no credential configured for role {role!r}")
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _created(self, exchange: Exchange, key: str) -> Exchange:
        if 200 <= exchange.status < 300:
            data = exchange.json_or_none()
            if isinstance(data, dict) and isinstance(data.get(key), str):
                self.created.append(f"{key}={data[key]}")
        return exchange

    def health(self) -> Exchange:
        return self.request("GET", "/v1/health")

    def create_binding(self, name: str, role: str = "full") -> Exchange:
        exchange = self.request("POST", "/v1/bindings", json_body={"name": name}, role=role)
        return self._created(exchange, "binding_id")

    def declare_binding(self, name: str, capability: Any, role: str = "full") -> Exchange:
        body = {"name": name, "capability": capability}
        return self._created(self._post("/v1/bindings", body, role), "binding_id")

    def get_binding(self, binding_id: str, role: str = "full") -> Exchange:
        return self.request("GET", f"/v1/bindings/{binding_id}", role=role)

    def binding_policy(self, binding_id: str, role: str = "full") -> Exchange:
        return self.request("GET", f"/v1/bindings/{binding_id}/policy", role=role)

    def set_local_policy(self, binding_id: str, body: Any, role: str = "full") -> Exchange:
        return self.request("PUT", f"/v1/bindings/{binding_id}/local-policy", json_body=body,
                            role=role)

    def import_openapi(self, name: str, document: Any, role: str = "full") -> Exchange:
        return self._post("/v1/openapi-imports", {"name": name, "document": document}, role)

    def publish_tool_set(self, body: Any, role: str = "full") -> Exchange:
        return self._created(self._post("/v1/tool-sets", body, role), "tool_set_id")

    def get_tool_set(self, tool_set_id: str, role: str = "full") -> Exchange:
        return self.request("GET", f"/v1/tool-sets/{tool_set_id}", role=role)

    def publish_agent_version(self, agent_id: str, body: Any, role: str = "full") -> Exchange:
        path = f"/v1/agents/{agent_id}/versions"
        return self._created(self._post(path, body, role), "agent_version")

    def get_agent_version(self, version: str, role: str = "full") -> Exchange:
        return self.request("GET", f"/v1/agent-versions/{version}", role=role)

    def try_modify(self, kind: str, resource_id: str, body: Any) -> list[Exchange]:
        path = {"tool_set": "/v1/tool-sets/", "agent_version": "/v1/agent-versions/"}[kind]
        return [
            self.request(method, path + resource_id, json_body=body)
            for method in ("PUT", "PATCH")
        ] + [self.request("DELETE", path + resource_id)]

    def dry_run(self, body: Any, role: str = "full") -> Exchange:
        return self._post("/v1/tools/dry-run", body, role)

    def openapi(self) -> Exchange:
        return self.request("GET", "/openapi.json", role="none")

    # -- runs (docs/runs.md) ---------------------------------------------------------------

    def create_channel(self, body: Any, role: str = "full") -> Exchange:
        return self._created(self._post("/v1/channels", body, role), "channel_id")

    def create_wallet(self, body: Any, role: str = "full") -> Exchange:
        return self._created(self._post("/v1/wallets", body, role), "wallet_id")

    def deposit(self, wallet_id: str, amount: int, role: str = "full") -> Exchange:
        return self._post(f"/v1/wallets/{wallet_id}/deposits", {"amount": amount}, role)

    def get_wallet(self, wallet_id: str, role: str = "full") -> Exchange:
        return self.request("GET", f"/v1/wallets/{wallet_id}", role=role)

    def create_session(self, body: Any, role: str = "full") -> Exchange:
        return self._created(self._post("/v1/sessions", body, role), "session_id")

    def history(self, session_id: str, kind: str, role: str = "full") -> Exchange:
        leaf = {"formal": "history", "execution": "execution-history"}[kind]
        return self.request("GET", f"/v1/sessions/{session_id}/{leaf}", role=role)

    def create_run(self, session_id: str, body: Any, role: str = "full") -> Exchange:
        return self._created(self._post(f"/v1/sessions/{session_id}/runs", body, role), "run_id")

    def get_run(self, run_id: str, role: str = "full") -> Exchange:
        return self.request("GET", f"/v1/runs/{run_id}", role=role)

    def cancel_run(self, run_id: str, role: str = "full") -> Exchange:
        return self._post(f"/v1/runs/{run_id}/cancel", {}, role)

    def run_events(self, run_id: str, role: str = "full") -> Exchange:
        return self.request("GET", f"/v1/runs/{run_id}/events", role=role)

    def tool_calls(self, run_id: str, role: str = "full") -> Exchange:
        return self.request("GET", f"/v1/runs/{run_id}/tool-calls", role=role)

    def submit_receipt(self, call_id: str, body: Any, role: str = "full") -> Exchange:
        return self._post(f"/v1/tool-calls/{call_id}/receipts", body, role)

    def append_input(self, run_id: str, text: str, role: str = "full") -> Exchange:
        """User input for an active run (RUN-06); optional: checks without it are n/a."""
        return self._post(f"/v1/runs/{run_id}/input", {"input": text}, role)

    def revoke(self, agent_id: str, tool_name: str, role: str = "full") -> Exchange:
        """Revoke the agent's permission to have a tool dispatched (RUN-14); optional."""
        body = {"tool_name": tool_name}
        return self._post(f"/v1/agents/{agent_id}/tool-revocations", body, role)

    # -- executors (docs/executors.md) -----------------------------------------------------

    def register_executor(self, body: Any, role: str = "full") -> Exchange:
        """Register an executor; its token, answered once, is kept as its role's credential."""
        exchange = self._created(self._post("/v1/executors", body, role), "executor_id")
        data = exchange.json_or_none() if 200 <= exchange.status < 300 else None
        if isinstance(data, dict) and isinstance(data.get("executor_id"), str) and \
                isinstance(data.get("token"), str):
            self.tokens[self.executor_role(data["executor_id"])] = data["token"]
        return exchange

    @staticmethod
    def executor_role(executor_id: str) -> str:
        return f"executor:{executor_id}"

    def heartbeat(self, role: str) -> Exchange:
        return self._post("/v1/executor/heartbeat", {}, role)

    def candidates(self, role: str) -> Exchange:
        return self.request("GET", "/v1/executor/candidates", role=role)

    def executor_call(self, call_id: str, role: str) -> Exchange:
        return self.request("GET", f"/v1/executor/calls/{call_id}", role=role)

    def claim(self, call_id: str, role: str) -> Exchange:
        return self._post(f"/v1/tool-calls/{call_id}/claims", {}, role)

    def detach(self, call_id: str, claim_id: str, role: str) -> Exchange:
        return self._post(f"/v1/tool-calls/{call_id}/detach", {"claim_id": claim_id}, role)

    def request_tool_cancel(self, call_id: str, role: str = "full") -> Exchange:
        """A business cancel request (EXE-15): not a run cancel, not a detach."""
        return self._post(f"/v1/tool-calls/{call_id}/cancel", {}, role)

    def restart(self) -> None:
        """Kill the service mid-work and start it again on its stored state (RUN-02);
        optional: StepUnavailable when the target says no way to."""
        if self.restarter is None:
            raise StepUnavailable(
                "the target has no restart step: give the target file's [target] restart "
                "command (docs/targets.md), or implement `restart()` in its adapter"
            )
        self.restarts += 1
        self.restarter()

    def legacy_restart(self, tool_set_ids: Sequence[str], tokens: int) -> None:
        """Stop the service, store the named tool sets as the revision before byte budgets
        stored them (each tool with a token-based budget of `tokens` in place of its byte
        budget, the store marked as of that revision) and start the current revision on it:
        what an upgrade meets (DEF-07); optional: StepUnavailable when the target has no way."""
        if self.legacy_restarter is None:
            raise StepUnavailable(
                "the target has no legacy_restart step (a store written back to token "
                "budgets, then a start): the in-process reference and mutants have it; an "
                "adapter implements `legacy_restart(tool_set_ids, tokens)` (docs/targets.md)"
            )
        self.restarts += 1
        self.legacy_restarter(tool_set_ids, tokens)

    def drop_event_stream(self, run_id: str, role: str = "full") -> Exchange:
        """Open the run's event stream, read its first event, hang up (RUN-03); optional.

        The exchange holds the status, the headers and the bytes read before hanging up
        (the first chunk when the answer is not `text/event-stream`). In-process the app is
        told its client went away (`SyncASGITransport.hang_up`); over a URL the connection
        is closed under the server. A stream that never sends an event ends at the client's
        read timeout, with what it sent.
        """
        headers = self._headers(role, STREAM_MEDIA_TYPE)
        return self._read_stream(f"/v1/runs/{run_id}/events", headers, role, first_event_read)

    def read_event_stream(
        self, run_id: str, last_event_id: str | None = None, *, until_id: int | None = None,
        role: str = "full",
    ) -> Exchange:
        """Read the run's event stream (RUN-16); optional. `Accept: text/event-stream`, and
        `Last-Event-ID: <last_event_id>` when given (sent as is, however malformed).

        Reads until the stream ends (a run that has ended), or once an event whose `id` is
        `until_id` or above was read, then hangs up; a stream that says no more ends at the
        client's read timeout (in-process: once the app is idle, time standing still), with
        what it sent. The exchange holds the status, the headers and the bytes read.
        """
        headers = self._headers(role, STREAM_MEDIA_TYPE)
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return self._read_stream(f"/v1/runs/{run_id}/events", headers, role,
                                 read_through(until_id))

    def watch_event_stream(
        self, run_id: str, ready_id: int, during: Callable[[], object], *, role: str = "full"
    ) -> Exchange:
        """Hold the run's event stream open while `during()` makes other requests (RUN-16:
        events are sent as they are stored); optional. `Accept: text/event-stream`, no
        `Last-Event-ID`: once the event whose `id` is `ready_id` has come whole (what was
        stored when it opened), `during()` runs, then reading goes on until the stream ends
        and hangs up. In-process time stands still: the backlog is read once the app is idle,
        and after `during` what the app sends until it is idle again; over a URL the client's
        read timeout bounds every wait. The exchange holds the status, headers and bytes."""
        headers = self._headers(role, STREAM_MEDIA_TYPE)
        return self._read_stream(f"/v1/runs/{run_id}/events", headers, role,
                                 read_through(None), during, read_through(ready_id))

    def _read_stream(
        self, path: str, headers: dict[str, str], role: str,
        enough: Callable[[list[tuple[bytes, bytes]], bytes], bool],
        during: Callable[[], object] | None = None,
        ready: Callable[[list[tuple[bytes, bytes]], bytes], bool] | None = None,
    ) -> Exchange:
        """GET `path` as a stream, read until `enough` (or its end, or the read timeout),
        hang up, and record the exchange: the one way the stream steps reach a target. With
        `during`, it runs once `ready` holds (in-process: once the app is idle), the stream
        still open."""
        self.limiter.wait()
        request = self.client.build_request("GET", path, headers=headers)
        # httpx keeps a client's transport private; in-process targets are built on ours.
        transport = getattr(self.client, "_transport", None)
        try:
            if isinstance(transport, SyncASGITransport):
                response = transport.hang_up(request, enough, during)
                status, answer_headers, seen = (response.status_code, dict(response.headers),
                                                response.content)
            elif during is not None:
                status, answer_headers, seen = self._read_during(request, enough, during,
                                                                 ready or first_event_read)
            else:
                status, answer_headers, seen = self._read_and_drop(request, enough)
        except httpx.TransportError as exc:
            raise TargetUnreachable(f"GET {path}: {type(exc).__name__}: {exc}") from exc
        self.exchanges += 1
        exchange = Exchange(method="GET", url=str(request.url), request_body=None,
                            status=status, body=seen, headers=answer_headers, role=role)
        self._seen(exchange)
        return exchange

    def _read_and_drop(
        self, request: httpx.Request,
        enough: Callable[[list[tuple[bytes, bytes]], bytes], bool] = first_event_read,
        box: dict[str, Any] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        seen = bytearray()
        # A reader on its own thread (`box`) is not what the check's thread waits on.
        waiting = WAITING(f"GET {request.url.path} (an event stream)") if box is None \
            else contextlib.nullcontext()
        with waiting:
            response = self.client.send(request, stream=True)
            if box is not None:
                box["response"] = response  # so another thread can hang up
            try:
                raw = response.headers.raw
                for chunk in response.iter_raw():
                    seen.extend(chunk)
                    if enough(raw, bytes(seen)):
                        break
            except httpx.ReadTimeout:
                pass  # the stream said nothing more in time: what it said is the answer
            except httpx.TransportError:
                if box is None or not box.get("hung_up"):
                    raise  # else `_read_during` closed it under this read: what it said
            finally:
                # Unread body: httpx closes the connection instead of pooling it, and the
                # server sees its client go.
                response.close()
        return response.status_code, dict(response.headers), bytes(seen)

    def _read_during(
        self, request: httpx.Request, enough: Callable[[list[tuple[bytes, bytes]], bytes], bool],
        during: Callable[[], object],
        ready: Callable[[list[tuple[bytes, bytes]], bytes], bool],
    ) -> tuple[int, dict[str, str], bytes]:
        """`_read_and_drop` on a thread of its own, `during()` on this one once `ready` holds
        (or the stream ended or gave up first). The reader is joined within the read timeout
        after `during` returns; a stream still open then is closed under it."""
        opened = threading.Event()
        box: dict[str, Any] = {}

        def enough_or_ready(raw: list[tuple[bytes, bytes]], seen: bytes) -> bool:
            box["response_headers"] = raw
            if ready(raw, seen):
                opened.set()
            return enough(raw, seen)

        def read() -> None:
            try:
                box["answer"] = self._read_and_drop(request, enough_or_ready, box)
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc
            finally:
                opened.set()

        reader = threading.Thread(target=read, name="arck-event-stream", daemon=True)
        reader.start()
        wait = _read_timeout(self.client)
        opened.wait(wait)
        try:
            during()
        finally:
            reader.join(wait + 1)  # its own read timeout ends it first, when nothing comes
            if reader.is_alive():
                response = box.get("response")
                if response is not None:
                    box["hung_up"] = True
                    response.close()  # a stream still open after the read timeout: hang up
                reader.join(wait)
        if "error" in box:
            raise box["error"]
        if "answer" not in box:
            raise httpx.ReadTimeout("the event stream did not end after the read timeout",
                                    request=request)
        return box["answer"]  # type: ignore[no-any-return]

    def _post(self, path: str, body: Any, role: str) -> Exchange:
        if isinstance(body, bytes):
            return self.request("POST", path, content=body, role=role)
        return self.request("POST", path, json_body=body, role=role)

    def close(self) -> None:
        self.client.close()


def _read_timeout(client: httpx.Client) -> float:
    """The client's read timeout in seconds (60 when it has none: never wait for ever)."""
    read = client.timeout.read
    return 60.0 if read is None else float(read)
