"""The simulated model provider: scripted answers, faults, true usage, lookup and recording.

One object holds all state; `app` serves it over HTTP (in-process or with uvicorn). Handling
runs on one event loop; the Python API reads the same state from the harness.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

import httpx
from starlette.types import ASGIApp

from arck.simulator.clock import Clock, VirtualClock
from arck.simulator.provider import answer, prompt, wire
from arck.simulator.provider.app import build_app
from arck.simulator.provider.cache import PromptCache
from arck.simulator.provider.faults import error_for, resolve_side_effect
from arck.simulator.provider.ledger import Ledger, RequestRecord
from arck.simulator.provider.recording import RecordedRequest, Recording
from arck.simulator.provider.reply import Reply, ResponseLost
from arck.simulator.provider.script import (
    FAULT_KINDS,
    LostResponse,
    Script,
    ScriptError,
    SlowAnswer,
    SlowStart,
    Step,
    UsageDrift,
    UsageMissing,
    UsageReported,
    make_script,
    script_name,
)
from arck.simulator.provider.transport import SyncProviderTransport
from arck.simulator.provider.usage import drifted, reported_as, usage

__all__ = ["SimulatedProvider"]

_Disconnected = Callable[[], Awaitable[None]]
_REDACTED = ("authorization", "api-key", "x-api-key")
_MODEL_SCRIPT = "model:"  # conversation name of an untagged request that follows its model's script


def _digest(message: Any) -> str:
    return hashlib.sha256(prompt.canonical(message).encode("utf-8")).hexdigest()


class SimulatedProvider:
    """An OpenAI-compatible chat-completions provider for engines under test.

    `clock` stamps `created` and times slow answers (virtual by default); `seed` picks the
    default answers' words; `context_windows` maps a model to the most tokens (prompt plus
    max_tokens) it accepts before answering context_length_exceeded.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        seed: int = 0,
        context_windows: Mapping[str, int] | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self.seed = seed
        self._windows = dict(context_windows or {})
        self._scripts: dict[str, Script] = {}
        self._calls: dict[str, int] = {}
        self._sequence = 0
        self._ledger = Ledger()
        self._recording = Recording()
        self._cache = PromptCache()
        self._fired = dict.fromkeys(FAULT_KINDS, 0)
        self._looked_up: dict[str, list[float]] = {}
        self._app: ASGIApp | None = None

    # -- harness API ------------------------------------------------------------------

    @property
    def app(self) -> ASGIApp:
        """The ASGI app (built once)."""
        if self._app is None:
            self._app = build_app(self)
        return self._app

    def add_script(self, name: str, steps: Iterable[Step | Mapping[str, Any]]) -> Script:
        """Register the script a system prompt names with `script_tag(name)`."""
        script = make_script(name, steps)
        if name in self._scripts:
            raise ScriptError(f"script {name!r} is already registered")
        self._scripts[name] = script
        return script

    def add_model_script(self, model: str, steps: Iterable[Step | Mapping[str, Any]]) -> Script:
        """Register the script every untagged request for `model` follows (its conversation
        is `model:<model>`): how a check scripts an engine's own calls, such as summaries,
        whose prompts carry no tag."""
        return self.add_script(_MODEL_SCRIPT + model, steps)

    def set_context_window(self, model: str, tokens: int | None) -> None:
        """From now on `model` accepts at most `tokens` (prompt plus max_tokens) and answers
        400 context_length_exceeded above it (None: no limit): a model whose real window is
        smaller than what a channel declares for it."""
        if tokens is None:
            self._windows.pop(model, None)
        elif tokens < 1:
            raise ValueError(f"a context window is at least 1 token, not {tokens}")
        else:
            self._windows[model] = tokens

    def async_transport(self) -> httpx.AsyncBaseTransport:
        """In-process transport for httpx.AsyncClient; a lost response raises ResponseLost."""
        return httpx.ASGITransport(app=self.app)

    def transport(self) -> SyncProviderTransport:
        """In-process transport for httpx.Client (a thread runs the app); close it after."""
        return SyncProviderTransport(self.app)

    def lookup(self, request_id: str) -> RequestRecord | None:
        return self._ledger.get(request_id)

    def lookup_key(self, idempotency_key: str) -> list[RequestRecord]:
        """Every request that carried this Idempotency-Key, in order (a resend is billed)."""
        return self._ledger.by_key(idempotency_key)

    def served_lookup(self, idempotency_key: str) -> list[RequestRecord]:
        """`lookup_key` asked by an engine over the wire (`GET /v1/arck/requests`), noted
        with the time it was asked: a check sees when an engine reconciles a call, and that
        it stops once the call is settled."""
        self._looked_up.setdefault(idempotency_key, []).append(self.clock.now())
        return self.lookup_key(idempotency_key)

    def lookups(self, idempotency_key: str) -> list[float]:
        """When an engine looked this Idempotency-Key up, in order (the harness's own
        `lookup_key` calls are not counted)."""
        return list(self._looked_up.get(idempotency_key, ()))

    def records(self) -> list[RequestRecord]:
        return self._ledger.all()

    def recorded(self, conversation: str | None = None) -> list[RecordedRequest]:
        """Every request received (or only `conversation`'s), in order, bodies byte for
        byte."""
        return self._recording.all(conversation)

    def recorded_request(self, request_id: str) -> RecordedRequest | None:
        return self._recording.get(request_id)

    @property
    def recorded_bytes(self) -> int:
        """Bytes the recording keeps for bodies (diffs), to show it grows with appends."""
        return self._recording.stored_bytes

    def fault_counts(self) -> dict[str, int]:
        """How often each fault kind fired, every kind present (0: never)."""
        return dict(self._fired)

    # -- serving ----------------------------------------------------------------------

    async def complete(
        self, raw: bytes, headers: Sequence[tuple[str, str]], disconnected: _Disconnected
    ) -> Reply:
        """Answer one POST /v1/chat/completions; `disconnected` returns if the caller leaves."""
        self._sequence += 1
        request_id = f"chatcmpl-arck-{self._sequence:06d}"
        names = {name.lower(): value for name, value in headers}
        kept = tuple((n, "[redacted]" if n.lower() in _REDACTED else v) for n, v in headers)
        self._ledger.open(
            RequestRecord(request_id, names.get("idempotency-key"), self.clock.now())
        )
        try:
            request = wire.parse(raw)
        except wire.WireError as error:
            self._recording.add(request_id, "(invalid)", None, kept, raw, None)
            return self._error(request_id, error)
        conversation = script_name(request.messages)
        if conversation is None and _MODEL_SCRIPT + request.model in self._scripts:
            conversation = _MODEL_SCRIPT + request.model
        digests = [_digest(message) for message in request.messages]
        chain = conversation if conversation is not None else "untagged:" + digests[0]
        self._recording.add(request_id, chain, conversation, kept, raw, digests)
        index = self._calls.get(chain, 0)
        self._calls[chain] = index + 1
        script = self._scripts.get(conversation) if conversation is not None else None
        step = script.steps[index] if script is not None and index < len(script.steps) else None
        self._ledger.update(
            request_id,
            model=request.model,
            conversation=conversation,
            step=index if conversation is not None else None,
        )
        if step is not None and step.side_effect is not None:
            reply = self._side_effect(request_id, step.side_effect, raw, headers)
            if reply is not None:
                return reply
        return await self._answer(request_id, request, step, chain, index, disconnected)

    async def _answer(
        self,
        request_id: str,
        request: wire.ChatRequest,
        step: Step | None,
        chain: str,
        index: int,
        disconnected: _Disconnected,
    ) -> Reply:
        faults: dict[str, Any] = (
            {fault.kind: fault for fault in step.faults} if step is not None else {}
        )
        start = faults.pop("slow_start", None)
        if isinstance(start, SlowStart):
            return await self._later(request_id, start, self._process(
                request_id, request, step, faults, chain, index, disconnected))
        return await self._process(request_id, request, step, faults, chain, index,
                                   disconnected)

    async def _later(self, request_id: str, start: SlowStart,
                     processing: Coroutine[Any, Any, Reply]) -> Reply:
        """`processing` after `start.seconds` on the clock, carried on when the caller leaves
        meanwhile (its task shielded from the caller's cancellation): then billed, and the
        answer lost."""
        self._fire(request_id, "slow_start")

        async def delayed() -> Reply:
            await self.clock.sleep(start.seconds)
            return await processing

        task = asyncio.ensure_future(delayed())
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            def unseen(done: asyncio.Future[Reply]) -> None:
                # an answer nobody read is lost; an error stays answered (nothing billed)
                if not done.cancelled() and done.exception() is None \
                        and done.result().status == 200:
                    self._ledger.update(request_id, outcome="lost",
                                        finished_at=self.clock.now())

            task.add_done_callback(unseen)
            raise

    async def _process(
        self,
        request_id: str,
        request: wire.ChatRequest,
        step: Step | None,
        faults: dict[str, Any],
        chain: str,
        index: int,
        disconnected: _Disconnected,
    ) -> Reply:
        segments = prompt.segments(request.messages, request.tools)
        true_prompt = sum(len(segment) for segment in segments)
        failure = error_for(faults, request, true_prompt, self._windows.get(request.model))
        if failure is not None:
            return self._error(request_id, failure)
        cached = self._cache.match_and_store(request.model, segments)
        fallback = answer.default_text(self.seed, chain, index)
        call_ids = "call_" + request_id.removeprefix("chatcmpl-arck-")
        built = answer.build(step, fallback, call_ids, request.max_tokens)
        true = usage(true_prompt, built.completion_tokens, cached)
        reported: dict[str, Any] | None = true
        drift = faults.get("usage_drift")
        if isinstance(drift, UsageDrift):
            reported = drifted(true, drift)
        told = faults.get("usage_reported")
        if isinstance(told, UsageReported):
            reported = reported_as(true, told)
        if isinstance(faults.get("usage_missing"), UsageMissing):
            reported = None
        completion: dict[str, Any] = {
            "id": request_id,
            "object": "chat.completion",
            "created": int(self.clock.now()),
            "model": request.model,
            "choices": [{"index": 0, "message": built.message, "logprobs": None,
                         "finish_reason": built.finish_reason}],
        }
        if reported is not None:
            completion["usage"] = reported
        body = wire.dumps(completion)
        for kind in ("usage_drift", "usage_reported", "usage_missing"):
            if kind in faults:
                self._fire(request_id, kind)
        self._ledger.update(request_id, response=body, usage=reported, true_usage=true, billed=True)
        headers = {"x-request-id": request_id}
        slow = faults.get("slow")
        if isinstance(slow, SlowAnswer) and await self._slowly(request_id, slow, disconnected):
            return Reply(200, body, headers)  # the caller left: the lost record is written
        if isinstance(faults.get("lost_response"), LostResponse):
            self._fire(request_id, "lost_response")
            self._ledger.update(request_id, outcome="lost", finished_at=self.clock.now())
            lost = ResponseLost(f"arck simulated provider: the response to {request_id} was "
                                "lost after it was processed and billed")
            return Reply(200, body, headers, drop=lost)
        self._ledger.update(
            request_id, outcome="answered", status_code=200, finished_at=self.clock.now()
        )
        return Reply(200, body, headers)

    async def _slowly(self, request_id: str, slow: SlowAnswer, disconnected: _Disconnected) -> bool:
        """Wait `slow.seconds` on the clock; True when the caller left first (then: lost)."""
        self._fire(request_id, "slow")
        waiting = asyncio.ensure_future(self.clock.sleep(slow.seconds))
        watching = asyncio.ensure_future(disconnected())
        try:
            await asyncio.wait({waiting, watching}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # In-process, an engine's timeout cancels the call: processed, billed, unseen.
            self._ledger.update(request_id, outcome="lost", finished_at=self.clock.now())
            raise
        finally:
            waiting.cancel()
            watching.cancel()
        if waiting.done() and not waiting.cancelled():
            return False
        self._ledger.update(request_id, outcome="lost", finished_at=self.clock.now())
        return True

    def _side_effect(
        self, request_id: str, effect: Any, raw: bytes, headers: Sequence[tuple[str, str]]
    ) -> Reply | None:
        """A response is sent as is; an exception breaks the connection before processing
        (nothing billed); None: answer the step as usual."""
        self._fire(request_id, "side_effect")
        outcome = resolve_side_effect(effect, raw, headers)
        if outcome is None:
            return None
        if isinstance(outcome, httpx.Response):
            body = outcome.read()
            self._ledger.update(request_id, outcome="answered", status_code=outcome.status_code,
                                response=body, finished_at=self.clock.now())
            shown = {k: v for k, v in outcome.headers.items() if k.lower() != "content-length"}
            return Reply(outcome.status_code, body, {**shown, "x-request-id": request_id})
        self._ledger.update(request_id, outcome="failed", finished_at=self.clock.now())
        return Reply(200, b"{}", {"x-request-id": request_id}, drop=outcome)

    def _error(self, request_id: str, error: wire.WireError) -> Reply:
        if error.code == "context_length_exceeded":
            self._fire(request_id, "context_length")
        elif error.status == 429:
            self._fire(request_id, "rate_limit")
        elif error.status >= 500:
            self._fire(request_id, "server_error")
        body = error.body()
        self._ledger.update(request_id, outcome="answered", status_code=error.status,
                            response=body, finished_at=self.clock.now())
        return Reply(error.status, body, {**error.headers, "x-request-id": request_id})

    def _fire(self, request_id: str, kind: str) -> None:
        self._fired[kind] += 1
        record = self._ledger.get(request_id)
        if record is not None and kind not in record.faults:
            self._ledger.update(request_id, faults=(*record.faults, kind))
