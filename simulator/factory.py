"""Build a target by name: `reference`, `mutant:NAME`, a URL, or a target file's adapter or app.

The in-process reference and its mutants are named by dotted path only, so this layer never
imports the engine (ARCHITECTURE.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from arck.simulator.asgi import SyncASGITransport
from arck.simulator.clock import DEFAULT_START, VirtualClock, until_idle
from arck.simulator.control import InProcessControl, ServedControl, serve_provider
from arck.simulator.errors import TargetUnreachable, UsageError
from arck.simulator.provider import SimulatedProvider
from arck.simulator.restart import command_restarter
from arck.simulator.target import WAITING, HttpTarget, RateLimiter, Target, TargetInfo
from arck.simulator.targetfile import ROLES, TargetFile, load

REFERENCE_APP = "arck.reference.app:create_app"
MUTANT_CATALOGUE = "arck.reference.mutants:CATALOGUE"
MUTANT_BUILDER = "arck.reference.mutants:build_app"
LEGACY_DOWNGRADE = "arck.reference.migrations:downgrade"  # the store of the reference only

# The reference's development credentials, as documented in docs/profile.md.
DEV_TOKENS: dict[str, str | None] = {
    "full": "arck-dev-full",
    "read_only": "arck-dev-readonly",
    "config_read": "arck-dev-configread",
    "no_permission": "arck-dev-noperm",
    "no_scope": "arck-dev-noscope",
    "other_tenant": "arck-dev-other",
}
IN_PROCESS_URL = "http://reference.arck.invalid"
TEST_CLOCK = "test-clock"  # the capability: POST /v1/test-control/clock {"advance_seconds"}
CLOCK_PATH = "/v1/test-control/clock"
# A connection to a service is not reused after this long idle: shorter than the idle timeout
# of common servers (gunicorn 2 s, uvicorn and Node 5 s), so a check's request never goes out
# on a connection the service is closing at that moment (the request would be lost).
KEEPALIVE_EXPIRY_S = 1.0


def load_object(dotted: str) -> Any:
    """Import `package.module:attribute`, with a usage error that says what was wrong."""
    module_name, _, attribute = dotted.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"{dotted!r} is not a dotted path of the form 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import {module_name!r} (from {dotted!r}): {exc}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise UsageError(f"{module_name!r} has no attribute {attribute!r}") from None


def mutant_names() -> list[str]:
    return sorted(load_object(MUTANT_CATALOGUE))


def build_target(spec: str | None, config_path: Path | None = None, share: int = 1) -> Target:
    """The one factory for targets; `spec` wins over the target file's location.

    `share` processes use the target at once (`arck run --workers`): each gets that share of
    the target file's request-rate cap, so together they stay within it.
    """
    config = load(config_path) if config_path else TargetFile()
    section = config.target
    if spec is None and config_path is None:
        raise UsageError("give --target (reference, mutant:NAME or a URL) or --config FILE")
    if spec is None:
        spec = section.base_url or (f"adapter:{section.adapter}" if section.adapter else None)
        spec = spec or (f"app:{section.app}" if section.app else None)
        if spec is None:
            raise UsageError(f"{config_path}: [target] needs base_url, adapter or app")
    if spec == "reference":
        return _wired(load_object(REFERENCE_APP), "reference", "reference", config)
    if spec.startswith("mutant:"):
        name = spec.removeprefix("mutant:")
        names = mutant_names()
        if name not in names:
            raise UsageError(f"unknown mutant {name!r}; known: {', '.join(names)}")
        builder = load_object(MUTANT_BUILDER)
        return _wired(lambda **wiring: builder(name, **wiring), "mutant", spec, config)
    if config.provider is not None and share > 1:
        raise UsageError(
            "[provider] serves one simulated provider on one address: run without --workers"
        )
    if spec.startswith("app:"):
        factory = load_object(spec.removeprefix("app:"))
        app_target = _in_process(_built(spec, factory), "app", spec, config)
        return _with_provider(app_target, config)
    if spec.startswith("adapter:"):
        adapter = load_object(spec.removeprefix("adapter:"))(config)
        if not isinstance(adapter, Target):
            raise UsageError(f"{spec}: the adapter does not implement arck's Target protocol")
        return _with_provider(adapter, config)
    if spec.startswith(("http://", "https://")):
        return _with_provider(_over_http(spec, config, share), config)
    raise UsageError(
        f"--target {spec!r}: expected 'reference', 'mutant:NAME', an http(s) URL, "
        "'app:pkg.module:factory' or 'adapter:pkg.module:Class'"
    )


def _info(config: TargetFile, kind: str, location: str, profile: str) -> TargetInfo:
    return TargetInfo(
        name=config.target.name if config.target.name != "target" else location,
        kind=kind,
        location=location,
        profile=profile,
        capabilities=tuple(config.target.capabilities),
        name_prefix=config.safety.name_prefix,
        destructive=config.safety.destructive or kind in ("reference", "mutant"),
    )


def _tokens(config: TargetFile, fallback: dict[str, str | None]) -> dict[str, str | None]:
    tokens = {role: config.token(role) for role in ROLES}
    if not any(tokens.values()):
        return dict(fallback)
    return tokens


def _built(location: str, build: Callable[[], Any]) -> Any:
    """An in-process app, or TargetUnreachable saying why it could not be built: the
    target's own failure, reported as such rather than as a harness traceback."""
    try:
        return build()
    except Exception as exc:
        raise TargetUnreachable(
            f"{location}: the app could not be built: {type(exc).__name__}: {exc}"
        ) from exc


def _in_process(
    app: Any, kind: str, location: str, config: TargetFile,
    transport: SyncASGITransport | None = None,
) -> HttpTarget:
    transport = transport or SyncASGITransport(app)
    client = httpx.Client(transport=transport, base_url=IN_PROCESS_URL)
    # The reference and its mutants follow the reference profile by construction.
    profile = "reference" if kind in ("reference", "mutant") else config.target.profile
    info = _info(config, kind, location, profile)
    return HttpTarget(client, info, _tokens(config, DEV_TOKENS))


def _wired(build: Any, kind: str, location: str, config: TargetFile) -> Target:
    """The reference (or a mutant) on a virtual clock it shares with a simulated provider.

    The clock moves only when a check advances it, and each answer is read once the work
    its request started has run: a sequence of requests replays exactly.
    """
    clock = VirtualClock(autojump=False)
    provider = SimulatedProvider(clock=clock)
    transport_of_provider = provider.async_transport()
    app = _built(location, lambda: build(clock=clock, provider_transport=transport_of_provider))
    transport = SyncASGITransport(app, after=until_idle)
    target = _in_process(app, kind, location, config, transport)
    target.control = InProcessControl(transport, clock, provider)
    apps = [app]

    def restart() -> None:
        """As SIGKILL then a start on the same database: the workers die wherever they are
        (a model call in flight goes with them), and a new app of the same build takes the
        same store, with nothing of the old one's memory."""
        old = apps[-1]
        transport.call(old.state.runtime.workers.stop)
        apps.append(build(clock=clock, provider_transport=provider.async_transport(),
                          engine=old.state.engine))
        transport.replace_app(apps[-1])

    def legacy_restart(tool_set_ids: Sequence[str], tokens: int) -> None:
        """As `restart`, with the named tool sets written back in between as the revision
        before byte budgets stored them: the new app meets an upgrade (DEF-07)."""
        old = apps[-1]
        transport.call(old.state.runtime.workers.stop)
        load_object(LEGACY_DOWNGRADE)(old.state.engine.store, list(tool_set_ids), tokens)
        apps.append(build(clock=clock, provider_transport=provider.async_transport(),
                          engine=old.state.engine))
        transport.replace_app(apps[-1])

    target.restarter = restart
    target.legacy_restarter = legacy_restart
    return target


def _over_http(url: str, config: TargetFile, share: int = 1) -> Target:
    timeout = httpx.Timeout(config.safety.timeout_seconds)
    client = httpx.Client(base_url=url, timeout=timeout, follow_redirects=False,
                          limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S))
    info = _info(config, "url", url, config.target.profile)
    tokens = _tokens(config, DEV_TOKENS)
    rate = config.safety.max_requests_per_second
    target = HttpTarget(client, info, tokens, RateLimiter(rate / share if rate else None))
    target.dev_credentials = tokens == DEV_TOKENS
    if config.target.restart is not None:
        target.restarter = command_restarter(config.target.restart, client,
                                             config.safety.timeout_seconds, tokens.get("full"))
    return target


def _with_provider(target: Target, config: TargetFile) -> Target:
    """With a `[provider]` section: serve the simulated provider there for the run.

    The service calls it as its OpenAI base URL; `target.control` scripts it and moves time,
    on both sides when the target declares capability `test-clock`. `target.close()` stops
    it. An adapter that set a `control` of its own keeps it.
    """
    section = config.provider
    if section is None or getattr(target, "control", None) is not None:
        return target
    post = _clock_poster(target) if TEST_CLOCK in config.target.capabilities else None
    start: float | None = None
    if post is not None:
        try:
            start = post(0.0)
        except BaseException:
            target.close()
            raise
        start = DEFAULT_START if start is None else start
    try:
        served = serve_provider(section.host, section.port, seed=section.seed, start=start)
    except OSError as exc:
        target.close()
        raise UsageError(f"[provider] listen = {section.listen!r}: cannot listen: {exc}") from None
    control = ServedControl(served, post_clock=post, limit=config.safety.timeout_seconds)
    target.control = control  # type: ignore[attr-defined]
    client = getattr(target, "client", None)
    if isinstance(client, httpx.Client):
        def written(response: httpx.Response) -> None:
            if response.request.method != "GET" and response.request.url.path != CLOCK_PATH:
                control.written()

        client.event_hooks = {**client.event_hooks,
                              "response": [*client.event_hooks["response"], written]}
    close = target.close

    def close_both() -> None:
        try:
            close()
        finally:
            control.close()

    setattr(target, "close", close_both)  # noqa: B010 (an instance's own close)
    return target


def _clock_poster(target: Target) -> Any:
    """`POST /v1/test-control/clock {"advance_seconds": s}` with the `full` credential: the
    service's `now` after it (None when it does not say)."""
    client = getattr(target, "client", None)
    tokens = getattr(target, "tokens", {})
    location = target.info.location

    def post(seconds: float) -> float | None:
        body = {"advance_seconds": seconds}
        if isinstance(client, httpx.Client):
            headers = {"Accept": "application/json"}
            if tokens.get("full"):
                headers["Authorization"] = f"Bearer {tokens['full']}"
            try:
                with WAITING(f"POST {CLOCK_PATH}"):
                    response = client.post(CLOCK_PATH, json=body, headers=headers)
            except httpx.TransportError as exc:
                raise TargetUnreachable(f"POST {CLOCK_PATH}: {type(exc).__name__}: {exc}") from exc
            status, content = response.status_code, response.content
        else:
            exchange = target.request("POST", CLOCK_PATH, json_body=body)
            status, content = exchange.status, exchange.body
        if status != 200:
            raise UsageError(
                f"{location} declares capability test-clock, but POST {CLOCK_PATH} "
                f"{body} answered {status}: {content[:200].decode('utf-8', 'replace')}"
            )
        try:
            now = httpx.Response(200, content=content).json().get("now")
        except (ValueError, AttributeError):
            return None
        return float(now) if isinstance(now, int | float) and not isinstance(now, bool) else None

    return post


def verify_credentials(target: Target) -> None:
    """Refuse early a live service that turns down the reference's development credentials.

    Without a `[credentials]` section a URL target gets those (right for `arck serve`); any
    other service answers 401, and every check would end "not testable" one by one.
    """
    if not getattr(target, "dev_credentials", False):
        return
    probe = target.get_tool_set(f"{target.info.name_prefix}credential-probe")
    if probe.status == 401:
        raise UsageError(
            f"{target.info.location} refused the reference's development credentials (401), "
            "and no target file gives [credentials]: pass --config FILE with a [credentials] "
            "section (docs/targets.md)"
        )
