"""Checking a model call whose outcome is unknown against the provider (RUN-02, RUN-12, BIL-03).

Two situations, one judgement of the provider's lookup (`GET {provider}/arck/requests?
idempotency_key=<model call id>`, docs/provider.md):

* **Takeover.** A worker took a running run whose lease expired (its worker died). If the
  run's last model call is `sent` (sent, outcome unknown), it is never simply resent: processed
  → the recorded answer is applied and the reservation settled, exactly as a normal answer;
  answered with an error → refused as a normal error answer; never arrived → only then sent,
  once, under the same id; still in progress → looked up again until the channel's timeout
  (then as a timeout); lookup unavailable → the run ends `cost_pending_reconciliation` with the
  reservation held.
* **Cost pending.** A call left `cost_pending` (timeout, lost answer, no usage), or `sent` by a
  run that ended meanwhile (cancelled), is looked up `RECONCILE_AFTER_S` later, then with a
  growing delay: processed → the reservation settles at the usage the provider reports;
  refused or never arrived → it is released. The run stays ended (late results never revive a
  finished run); the event `model_call.reconciled` records the settlement.

Every change is a conditional update on the call's state (and the run's holder), so two workers
or two processes reconciling the same call settle it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from arck.reference.canonical import canonical_text
from arck.reference.runtime import billing
from arck.reference.runtime.modelcall import Outcome
from arck.reference.runtime.runstore import RunStore, event, held
from arck.reference.runtime.wallets import Wallets

if TYPE_CHECKING:
    from arck.reference.runtime.worker import Workers

__all__ = ["RECONCILE_AFTER_S", "SCHEMA", "Reconciler", "Verdict", "judge"]

LOOKUP_TIMEOUT_S = 10.0  # one lookup, on the injected clock
POLL_S = 1.0  # between lookups of a call still in progress at the provider
RECONCILE_AFTER_S = 60.0  # a cost-pending call is first looked up this long after it is seen
RETRY_MAX_S = 3600.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS reconciliations (
    call_id TEXT PRIMARY KEY, next_at REAL NOT NULL, attempts INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS reconciliations_due ON reconciliations (next_at);
CREATE INDEX IF NOT EXISTS model_calls_by_state ON model_calls (state);
CREATE INDEX IF NOT EXISTS model_calls_by_run ON model_calls (run_id, seq);
"""
_PENDING = ("cost_pending", "sent")

Kind = Literal["processed", "refused", "not_processed", "in_progress", "unavailable"]


@dataclass(frozen=True)
class Verdict:
    """What the provider's records say of one Idempotency-Key."""

    kind: Kind
    request_id: str | None = None
    status: int | None = None
    body: dict[str, Any] | None = None  # the answer (processed, refused)
    usage: dict[str, Any] | None = None  # what the provider reports it billed (processed)

    def outcome(self) -> Outcome:
        """The answer as the worker would have received it (processed or refused)."""
        if self.kind == "processed":
            return Outcome("answered", 200, self.body or {})
        return Outcome("refused", self.status, self.body or {})


def judge(records: list[dict[str, Any]] | None) -> Verdict:
    """Processed (billed, with its answer) wins over anything else recorded for the key;
    then an error answer; then a request still in progress; a key with no record, or only
    requests that broke before processing (`failed`), never reached the model."""
    if records is None:
        return Verdict("unavailable")
    for record in records:
        response = record.get("response")
        if record.get("billed") and isinstance(response, dict):
            usage = record.get("usage") or record.get("true_usage")
            body = dict(response)
            if "usage" not in body and isinstance(usage, dict):
                body["usage"] = usage  # the usage the provider billed, as its lookup reports it
            return Verdict("processed", record.get("id"), 200, body,
                           usage if isinstance(usage, dict) else None)
    for record in records:
        status = record.get("status_code")
        if record.get("outcome") == "answered" and isinstance(status, int) and status != 200:
            response = record.get("response")
            return Verdict("refused", record.get("id"), status,
                           response if isinstance(response, dict) else {})
    if any(record.get("outcome") == "received" for record in records):
        return Verdict("in_progress", records[-1].get("id"))
    return Verdict("not_processed")


class Reconciler:
    judge = staticmethod(judge)  # the verdict of a lookup (a mutant's seam)

    def __init__(self, workers: Workers) -> None:
        self.workers = workers
        self.store = workers.store
        self.clock = workers.clock
        self.store.install(SCHEMA)
        columns = {r[1] for r in self.store.read("PRAGMA table_info(model_calls)")}
        self._purpose = "purpose" if "purpose" in columns else "'main'"

    # -- takeover (RUN-02) -----------------------------------------------------------------

    async def take_over(self, run_id: str, worker: str) -> None:
        """Continue a run taken from a dead worker, after checking its last model call."""
        rows = self.store.read(
            f"SELECT id, state, reservation, raw, set_key, {self._purpose} FROM model_calls "
            "WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
            (run_id,),
        )
        if not rows or rows[0][1] != "sent":
            await self.workers.step(run_id, worker)  # nothing in flight: the next step
            return
        call_id, _, reservation, raw, set_key, purpose = rows[0]
        workers = self.workers
        session = workers.runs.run_session(run_id)
        channel = self.store.channel(session.tenant, session.channel_id)
        assert channel is not None
        prices = billing.Prices(**channel.prices.model_dump())
        if purpose != "main":
            # Not a turn of the model (a compaction summary): it cannot be applied here, and
            # is never resent; the reconciliation of cost-pending calls settles its money.
            self._end_pending(run_id, worker, call_id, "not a main call; left to reconciliation")
            return
        deadline = self._started(run_id, call_id)[0] + channel.timeout_ms / 1000
        verdict = await self.await_verdict(call_id, deadline)
        if not self._note(run_id, worker, call_id, verdict):
            return  # the run was taken or ended meanwhile
        if verdict.kind in ("processed", "refused"):
            outcome = verdict.outcome()
        elif verdict.kind == "in_progress":
            outcome = Outcome("timeout", detail=f"no answer within {channel.timeout_ms} ms "
                                                "(still in progress at the provider)")
        elif verdict.kind == "unavailable":
            outcome = Outcome("lost", detail="the provider's lookup is unavailable")
        else:
            # It never reached the model: sending it now is its first delivery (same id).
            body = workers._body(session, channel.model, channel.output_capacity)
            outcome = await workers.model.complete(body, call_id, channel.timeout_ms)
        from arck.reference.runtime.worker import _overflow

        # As step() would: a first context_length_exceeded refusal leaves the run to be
        # compacted and continued; anything else ends the turn as a normal answer does.
        repairable = _overflow(outcome)
        workers._finish(run_id, worker, session, call_id, reservation, raw, set_key, prices,
                        outcome, repairable=repairable)
        if repairable:
            await workers.step(run_id, worker)

    async def await_verdict(self, call_id: str, deadline: float) -> Verdict:
        """Look an in-flight call up every POLL_S until the provider has settled it or the
        channel's timeout (`deadline`, from the call's start) has come: the last lookup is at
        the deadline itself, never a poll short of it."""
        while True:
            verdict = self.judge(await self.workers.model.lookup(call_id, LOOKUP_TIMEOUT_S))
            now = self.clock.now()
            if verdict.kind != "in_progress" or now >= deadline:
                return verdict
            await self.clock.sleep(min(POLL_S, deadline - now))

    def _started(self, run_id: str, call_id: str) -> tuple[float, str | None]:
        """When the call was recorded, and the channel it went to (its RUN-15 event)."""
        for item in self.workers.runs.events(run_id):
            if item["type"] == "model_call.started" and item["data"].get("call_id") == call_id:
                channel_id = item["data"].get("channel_id")
                return float(item["at"]), channel_id if isinstance(channel_id, str) else None
        return self.clock.now(), None

    def _note(self, run_id: str, worker: str, call_id: str, verdict: Verdict) -> bool:
        """Record what the lookup said, if this worker still holds the run."""
        with self.store.transaction() as db:
            if not held(db, run_id, worker):
                return False
            event(db, run_id, "model_call.reconciled", self.clock.now(), call_id=call_id,
                  verdict=verdict.kind, provider_request=verdict.request_id,
                  resent=verdict.kind == "not_processed")
        return True

    def _end_pending(self, run_id: str, worker: str, call_id: str, detail: str) -> None:
        at = self.clock.now()
        with self.store.transaction() as db:
            done = db.execute(
                "UPDATE model_calls SET state = 'cost_pending' WHERE id = ? AND state = 'sent' "
                "AND EXISTS (SELECT 1 FROM runs WHERE id = ? AND state = 'running' "
                "AND worker = ?)",
                (call_id, run_id, worker),
            )
            if done.rowcount != 1:
                return
            held_back = db.execute("SELECT reservation FROM model_calls WHERE id = ?",
                                   (call_id,)).fetchone()[0]
            event(db, run_id, "model_call.finished", at, call_id=call_id, outcome="unknown",
                  detail=detail, usage=None, cost_pending=held_back)
            RunStore.end(db, run_id, "cost_pending_reconciliation", at, worker=worker)

    # -- cost-pending calls (BIL-03) -------------------------------------------------------

    def schedule(self) -> float | None:
        """Note newly pending calls; when the next reconciliation is due (None: none).

        Pending: `cost_pending`, or `sent` by a run no worker holds any more (ended). A `sent`
        call of a running run is its holder's (or, once the lease expires, a takeover's).
        """
        at = self.clock.now()
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO reconciliations (call_id, next_at, attempts) "
                "SELECT model_calls.id, ?, 0 FROM model_calls JOIN runs "
                "ON runs.id = model_calls.run_id WHERE (model_calls.state = 'cost_pending' "
                "OR (model_calls.state = 'sent' AND runs.state = 'ended')) AND NOT EXISTS "
                "(SELECT 1 FROM reconciliations WHERE call_id = model_calls.id)",
                (at + RECONCILE_AFTER_S,),
            )
            row = db.execute("SELECT MIN(next_at) FROM reconciliations").fetchone()
        return None if row[0] is None else float(row[0])

    async def reconcile_due(self) -> bool:
        """Look up one due call and settle it if the provider knows; False with none due."""
        at = self.clock.now()
        with self.store.transaction() as db:
            row = db.execute(
                "SELECT call_id, next_at, attempts FROM reconciliations WHERE next_at <= ? "
                "ORDER BY next_at, call_id LIMIT 1",
                (at,),
            ).fetchone()
            if row is None:
                return False
            call_id, next_at, attempts = row
            delay = min(RECONCILE_AFTER_S * 2 ** min(attempts + 1, 16), RETRY_MAX_S)
            db.execute(  # claimed by this worker until the next attempt is due
                "UPDATE reconciliations SET next_at = ?, attempts = attempts + 1 "
                "WHERE call_id = ? AND next_at = ?",
                (at + delay, call_id, next_at),
            )
            state = db.execute("SELECT state FROM model_calls WHERE id = ?",
                               (call_id,)).fetchone()
            if state is None or state[0] not in _PENDING:
                db.execute("DELETE FROM reconciliations WHERE call_id = ?", (call_id,))
                return True
        verdict = self.judge(await self.workers.model.lookup(call_id, LOOKUP_TIMEOUT_S))
        if verdict.kind in ("refused", "not_processed") or (
                verdict.kind == "processed" and verdict.usage is not None):
            self._settle(call_id, verdict)
        return True

    def _settle(self, call_id: str, verdict: Verdict) -> None:
        at = self.clock.now()
        rows = self.store.read(
            f"SELECT model_calls.run_id, model_calls.state, model_calls.reservation, "
            f"{self._purpose} FROM model_calls WHERE id = ?",
            (call_id,),
        )
        run_id, seen, reservation, purpose = rows[0]
        session = self.workers.runs.run_session(run_id)
        channel_id = self._started(run_id, call_id)[1]
        prices = self._prices(session.tenant, channel_id or session.channel_id,
                              session.agent_version, purpose, known=channel_id is not None)
        processed = verdict.kind == "processed" and verdict.usage is not None
        charge = 0
        if processed:
            assert verdict.usage is not None
            prompt, completion, cached = billing.usage_figures(verdict.usage)
            charge = billing.charge(prices, prompt, cached, completion)
        state = "settled" if processed else "refused" if verdict.kind == "refused" else "released"
        with self.store.transaction() as db:
            # Only a call still pending, of a run no worker holds (RUN-12: a held run's call
            # is its holder's to finish).
            done = db.execute(
                "UPDATE model_calls SET state = ?, charge = 0 WHERE id = ? AND state = ? AND "
                "NOT EXISTS (SELECT 1 FROM runs WHERE id = ? AND state = 'running')",
                (state, call_id, seen, run_id),
            )
            if done.rowcount != 1:
                return
            db.execute("DELETE FROM reconciliations WHERE call_id = ?", (call_id,))
            if not processed:
                Wallets.release(db, session.wallet_id, reservation)
                event(db, run_id, "model_call.reconciled", at, call_id=call_id,
                      verdict=verdict.kind, provider_request=verdict.request_id, charge=0,
                      collected=0, released=reservation)
                return
            collected = Wallets.settle(db, session.wallet_id, reservation, charge)
            db.execute("UPDATE model_calls SET charge = ?, usage = ? WHERE id = ?",
                       (collected, canonical_text(verdict.usage), call_id))
            event(db, run_id, "model_call.reconciled", at, call_id=call_id,
                  verdict=verdict.kind, provider_request=verdict.request_id,
                  usage=verdict.usage, charge=charge, collected=collected,
                  released=reservation - collected)

    def _prices(self, tenant: str, channel_id: str, version_id: str, purpose: str,
                known: bool) -> billing.Prices:
        """The prices of the channel the call went to (named by its model_call.started event;
        else the summary channel for a summary call, if the version has one)."""
        if not known and purpose != "main":
            version = self.store.version(tenant, version_id)
            if version is not None and version.summary_channel_id is not None:
                channel_id = version.summary_channel_id
        channel = self.store.channel(tenant, channel_id)
        assert channel is not None
        return billing.Prices(**channel.prices.model_dump())

