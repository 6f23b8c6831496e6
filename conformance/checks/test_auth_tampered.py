"""AUTH-01: a credential one character off is no credential. Every token the harness holds
(the target file's roles, and an executor token the target itself issued at registration) is
altered at its start, middle and end, cut short and lengthened; each variant is refused where
the genuine token is admitted. A token checked only in part (its prefix, the id it names, a
signature compared loosely) passes every check that sends genuine or wholly foreign tokens."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator

from arck.conformance.checking import check, expect
from arck.conformance.context import CheckContext
from arck.conformance.errors import NotApplicable, NotTestable
from arck.conformance.judge import refused
from arck.conformance.runworld import RunWorld, world
from arck.simulator.target import Exchange

TAMPERED = "arck-tampered"  # the role name a variant is sent under (never a real role)
DEV_EXECUTOR_SECRET = "arck-dev-executor-secret"  # docs/executors.md: not for production
UNKNOWN_EXECUTOR = "exe-999999"  # ids are sequential: never issued in a conformance run
SERVICE_ROLES = ("full", "read_only", "config_read", "no_permission", "no_scope",
                 "other_tenant")


def _other(char: str) -> str:
    """Another character of the same kind, so the variant still looks like a token."""
    if char.isdigit():
        return str((int(char) + 1) % 10)
    if char.isalpha():
        lower = "abcdefghijklmnopqrstuvwxyz"
        swapped = lower[(lower.index(char.lower()) + 1) % 26]
        return swapped.upper() if char.isupper() else swapped
    return "x" if char != "x" else "y"


def variants(token: str) -> Iterator[tuple[str, str]]:
    """(how, variant) for each alteration of `token`, every variant unlike the original."""
    middle = len(token) // 2
    yield "its last character changed", token[:-1] + _other(token[-1])
    yield "its first character changed", _other(token[0]) + token[1:]
    yield "a middle character changed", token[:middle] + _other(token[middle]) + token[middle + 1:]
    yield "its last character cut", token[:-1]
    yield "a character appended", token + "0"
    flipped = token.swapcase()
    if flipped != token:
        yield "its letters' case flipped", flipped


def _judge(ctx: CheckContext, whose: str, token: str,
           send: Callable[[str], Exchange]) -> None:
    """`send(role)` admitted with the genuine token, refused with every variant of it."""
    tokens = getattr(ctx.target, "tokens", None)
    if not isinstance(tokens, dict):
        raise NotApplicable("the target holds no credentials the harness can alter")
    genuine = send_as(tokens, token, send)
    if not 200 <= genuine.status < 300:
        raise NotTestable(f"not testable: {whose} was not admitted: {genuine.describe()}",
                          exchange=genuine)
    for how, variant in variants(token):
        answer = send_as(tokens, variant, send)
        expect(refused(answer), "AUTH-01", f"{whose} with {how} refused", answer.describe,
               f"Reproduce: {answer.as_curl()} with the altered token (the genuine one is "
               "admitted).")
        if ctx.profile == "reference":
            expect(answer.status == 401, "AUTH-01",
                   f"profile: 401 for {whose} with {how} (docs/profile.md)", answer.describe)


def send_as(tokens: dict[str, str | None], token: str,
            send: Callable[[str], Exchange]) -> Exchange:
    tokens[TAMPERED] = token
    try:
        return send(TAMPERED)
    finally:
        tokens.pop(TAMPERED, None)


@check("AUTH-01")
def test_altered_credentials_are_refused(ctx: CheckContext) -> None:
    """Each role's token and an executor's token, altered six ways, is refused on a request
    the genuine token is admitted to (a service token on the health endpoint, which any valid
    credential may read; an executor token on its heartbeat)."""
    tokens = getattr(ctx.target, "tokens", None)
    if not isinstance(tokens, dict):
        raise NotApplicable("the target holds no credentials the harness can alter")
    judged = 0
    for role in SERVICE_ROLES:
        token = tokens.get(role)
        if isinstance(token, str) and len(token) > 1:
            _judge(ctx, f"the {role!r} token", token,
                   lambda r: ctx.target.request("GET", "/v1/health", role=r))
            judged += 1
    try:
        w = world(ctx)
        executor_role = w.register_executor()
    except NotApplicable:
        executor_role = None
    if executor_role is not None:
        token = tokens.get(executor_role)
        if isinstance(token, str) and len(token) > 1:
            executors = w.executors()
            _judge(ctx, "an executor's token (issued at its registration)", token,
                   executors.heartbeat)
            judged += 1
    if not judged:
        raise NotTestable("not testable: the harness holds no token to alter")
    if executor_role is not None and ctx.profile == "reference":
        _unknown_executor(ctx, w, executor_role, tokens)


def derived_token(executor_id: str, secret: str = DEV_EXECUTOR_SECRET) -> str:
    """docs/executors.md: `arck-exe-<executor_id>-` and the first 24 hex digits of
    HMAC-SHA256(secret, executor_id)."""
    mac = hmac.new(secret.encode(), executor_id.encode(), hashlib.sha256).hexdigest()[:24]
    return f"arck-exe-{executor_id}-{mac}"


def _unknown_executor(ctx: CheckContext, w: RunWorld, role: str,
                      tokens: dict[str, str | None]) -> None:
    """Profile, on an engine with the development executor secret (its own executor's token
    derives from it): a token derived right for an executor id the store never issued is
    refused 401, never a 5xx (a signature is not an executor)."""
    own = tokens.get(role)
    executor_id = role.removeprefix("executor:")
    if own != derived_token(executor_id):
        return  # another secret: no token of an unknown executor can be made
    answer = send_as(tokens, derived_token(UNKNOWN_EXECUTOR), w.executors().heartbeat)
    expect(answer.status == 401, "AUTH-01", f"profile: 401 for a well-derived token of "
           f"executor {UNKNOWN_EXECUTOR}, which was never registered", answer.describe)
