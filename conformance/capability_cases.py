"""Capability declarations (`x-agent-capability` v1) for the CAP checks: valid ones, and ones
broken at one member, each with the JSON Pointer of what is wrong.

Written from SPEC §4 and the reference profile's rules (docs/capabilities.md), never from the
reference's code. A core case uses only what the protocol itself fixes (CAP-01): the profile's
choices (risk levels, the `window` syntax, nulls and unknown members refused, an omitted
`enabled`) appear in cases only under the reference profile, so a platform that decided them
otherwise is not failed for it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

DEFAULT_WAIT_MS = 60_000  # CAP-14: the wait when no timeout is declared
RISK_LEVELS = ("low", "medium", "high", "critical")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_BOOLEANS = (("enabled",), ("subject", "required"), ("audit", "sensitive"),
             ("execution", "readonly"), ("execution", "idempotent"))


def broken_case(declaration: dict[str, Any], pointer: str, what: str,
                requirement: str = "CAP-01") -> dict[str, Any]:
    """A case of a declaration wrong at `pointer` (under the declaration), and how; plain
    JSON, so a failing case replays from its case file. `requirement` is what accepting it
    breaks: CAP-01, or CAP-14 where only the profile makes it wrong (a null, `1.0` for an
    integer, the window syntax, risk levels, unknown members)."""
    return {"declaration": declaration, "pointer": pointer, "what": what,
            "requirement": requirement}


def _by_profile(wrong: Any) -> str:
    """CAP-14 for a value only the profile refuses: a null, or an integral float."""
    profile_only = wrong is None or (isinstance(wrong, float) and wrong.is_integer())
    return "CAP-14" if profile_only else "CAP-01"


def member(pointer: str) -> str:
    """The member a refusal must name: the last segment of the pointer."""
    return pointer.rsplit("/", 1)[-1]


def _scope(profile: bool) -> st.SearchStrategy[str]:
    if profile:  # a tool name (CAP-15: an imported operation's tool is named by its scope)
        return st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True)
    word = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
    return st.lists(word, min_size=1, max_size=3).map(".".join)


def windows() -> st.SearchStrategy[str]:
    """A `window` of the profile's form, `<n>ms|s|m|h|d` with n positive."""
    return st.tuples(st.integers(1, 999), st.sampled_from(sorted(_UNIT_MS))).map(
        lambda nu: f"{nu[0]}{nu[1]}")


@st.composite
def declarations(draw: st.DrawFn, profile: bool, enabled: bool | None = True) -> dict[str, Any]:
    """A valid declaration; `enabled` as given (None: drawn, and left out under the profile)."""
    decl: dict[str, Any] = {"version": 1, "scope": draw(_scope(profile))}
    if enabled is None:
        choices = [True, False, None] if profile else [True, False]
        enabled = draw(st.sampled_from(choices))
    if enabled is not None:
        decl["enabled"] = enabled
    if profile and draw(st.booleans()):
        decl["risk"] = {"level": draw(st.sampled_from(RISK_LEVELS))}
    if draw(st.booleans()):
        decl["subject"] = {"required": draw(st.booleans())}
    if draw(st.booleans()):
        decl["audit"] = {"sensitive": draw(st.booleans())}
    execution: dict[str, Any] = {}
    for hint in ("readonly", "idempotent"):
        if draw(st.booleans()):
            execution[hint] = draw(st.booleans())
    if draw(st.booleans()):
        execution["timeout_ms"] = draw(st.integers(1, 3_600_000))
    if profile and draw(st.booleans()):
        execution["rate_limit"] = {"count": draw(st.integers(1, 10_000)), "window": draw(windows())}
    if len(execution) > 0 or draw(st.booleans()):
        decl["execution"] = execution
    return decl


def _not_boolean(profile: bool) -> st.SearchStrategy[Any]:
    core = st.sampled_from(["true", "false", 1, 0, "yes", [True], {"value": True}])
    return st.one_of(core, st.just(None)) if profile else core


def _not_positive_integer(profile: bool) -> st.SearchStrategy[Any]:
    core = st.one_of(st.integers(max_value=0), st.sampled_from([1.5, "100", True, [5], -0.5]))
    return st.one_of(core, st.sampled_from([None, 100.0])) if profile else core


def _put(decl: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    place = decl
    for key in path[:-1]:
        if not isinstance(place.get(key), dict):
            place[key] = {}
        place = place[key]
    place[path[-1]] = value


@st.composite
def broken(draw: st.DrawFn, profile: bool) -> dict[str, Any]:
    """A valid declaration with one member made invalid (CAP-01), or left out when required."""
    decl = draw(declarations(profile, enabled=True))
    kinds = ["version", "version missing", "scope", "scope missing", "boolean", "timeout",
             "not an object"]
    if profile:
        kinds += ["rate count", "window", "risk", "unknown member"]
    kind = draw(st.sampled_from(kinds))
    wrong: Any
    if kind == "version":
        wrong = draw(st.one_of(st.integers().filter(lambda v: v != 1),
                               st.sampled_from(["1", "v1", True, None, [1]]),
                               st.just(1.0) if profile else st.nothing()))
        decl["version"] = wrong
        return broken_case(decl, "/version", f"version {wrong!r}",
                           "CAP-14" if isinstance(wrong, float) else "CAP-01")
    if kind == "version missing":
        del decl["version"]
        return broken_case(decl, "/version", "no version")
    if kind == "scope":
        wrong = draw(st.sampled_from(["", 7, True, None, ["order.read"], {"id": "x"}]))
        decl["scope"] = wrong
        return broken_case(decl, "/scope", f"scope {wrong!r}")
    if kind == "scope missing":
        del decl["scope"]
        return broken_case(decl, "/scope", "no scope")
    if kind == "boolean":
        path = draw(st.sampled_from(_BOOLEANS))
        wrong = draw(_not_boolean(profile))
        _put(decl, path, wrong)
        return broken_case(decl, "/" + "/".join(path), f"{'.'.join(path)} {wrong!r}",
                           _by_profile(wrong))
    if kind == "timeout":
        wrong = draw(_not_positive_integer(profile))
        _put(decl, ("execution", "timeout_ms"), wrong)
        return broken_case(decl, "/execution/timeout_ms", f"execution.timeout_ms {wrong!r}",
                           _by_profile(wrong))
    if kind == "not an object":
        member = draw(st.sampled_from(["execution", "subject", "audit"]))
        wrong = draw(st.sampled_from([True, "yes", 1, ["readonly"]]))
        decl[member] = wrong
        return broken_case(decl, f"/{member}", f"{member} {wrong!r}")
    if kind == "rate count":
        wrong = draw(_not_positive_integer(profile))
        _put(decl, ("execution", "rate_limit"), {"count": wrong, "window": draw(windows())})
        return broken_case(decl, "/execution/rate_limit/count", f"rate_limit.count {wrong!r}",
                           _by_profile(wrong))
    if kind == "window":
        wrong = draw(st.sampled_from(["0s", "-1m", "1 minute", "1w", "m", "", "1.5s", 60,
                                      None]))
        _put(decl, ("execution", "rate_limit"), {"count": draw(st.integers(1, 100)),
                                                 "window": wrong})
        return broken_case(decl, "/execution/rate_limit/window", f"rate_limit.window {wrong!r}",
                           "CAP-01" if wrong in ("0s", "-1m") else "CAP-14")
    if kind == "risk":
        wrong = draw(st.sampled_from(["severe", "LOW", "", 1, None]))
        decl["risk"] = {"level": wrong}
        return broken_case(decl, "/risk/level", f"risk.level {wrong!r}", "CAP-14")
    where = draw(st.sampled_from([(), ("execution",), ("subject",)]))
    name = draw(st.sampled_from(["retries", "idempotant", "priority", "cancellable"]))
    if where == ("subject",):
        decl.setdefault("subject", {"required": True})
    elif where:
        decl.setdefault("execution", {})
    _put(decl, (*where, name), draw(st.sampled_from([True, 3, "yes"])))
    return broken_case(decl, "/" + "/".join((*where, name)), f"unknown member {name!r}",
                       "CAP-14")


def window_ms(window: str) -> int:
    unit = "ms" if window.endswith("ms") else window[-1]
    return int(window[: -len(unit)]) * _UNIT_MS[unit]


@st.composite
def local_policies(draw: st.DrawFn) -> dict[str, Any]:
    """A declaration, a local policy for it, and the pointers of the settings that loosen
    it (CAP-09, profile rules of docs/capabilities.md): a timeout longer than the declared
    one (or the default wait), a rate limit that admits more in a declared window than the
    declaration, retries where idempotency is not declared."""
    decl = draw(declarations(True, enabled=True))
    execution = decl.get("execution") or {}
    local: dict[str, Any] = {}
    loosens: list[str] = []
    if draw(st.booleans()):
        bound = execution.get("timeout_ms", DEFAULT_WAIT_MS)
        local["timeout_ms"] = draw(st.one_of(st.integers(1, bound),
                                             st.integers(bound + 1, 2 * bound + 1)))
        if local["timeout_ms"] > bound:
            loosens.append("/timeout_ms")
    declared = execution.get("rate_limit")
    if draw(st.booleans()):
        cap = declared["count"] if declared else 100
        local["rate_limit"] = {"count": draw(st.integers(1, 2 * cap)), "window": draw(windows())}
        if declared:
            count, window = local["rate_limit"]["count"], local["rate_limit"]["window"]
            fits = -(-window_ms(declared["window"]) // window_ms(window))
            if count > declared["count"]:
                loosens.append("/rate_limit/count")
            elif count * fits > declared["count"]:
                loosens.append("/rate_limit/window")
    if draw(st.booleans()):
        local["retries"] = draw(st.booleans())
        if local["retries"] and execution.get("idempotent") is not True:
            loosens.append("/retries")
    return {"declaration": decl, "local": local, "loosens": loosens}


def tightened(decl: dict[str, Any], local: dict[str, Any]) -> dict[str, Any]:
    """The policy once a local policy that loosens nothing is applied."""
    policy = expected_policy(decl)
    if "timeout_ms" in local:
        policy |= {"timeout_ms": local["timeout_ms"], "timeout_source": "local"}
    if "rate_limit" in local:
        policy["rate_limit"] = local["rate_limit"]
    if local.get("retries") is False:
        policy["retries_allowed"] = False
    return policy


def expected_policy(decl: dict[str, Any]) -> dict[str, Any]:
    """CAP-04, CAP-14: the policy the profile's policy step must answer for `decl`: each hint
    as declared, else its conservative value, none read from another."""
    execution = decl.get("execution") or {}
    timeout = execution.get("timeout_ms")
    return {
        "declared": True,
        "agent_facing": decl.get("enabled") is True,
        "readonly": execution.get("readonly") is True,
        "idempotent": execution.get("idempotent") is True,
        "timeout_ms": DEFAULT_WAIT_MS if timeout is None else timeout,
        "timeout_source": "default" if timeout is None else "declared",
        "rate_limit": execution.get("rate_limit"),
        "retries_allowed": execution.get("idempotent") is True,
        "subject_required": (decl.get("subject") or {}).get("required") is True,
        "audit_sensitive": (decl.get("audit") or {}).get("sensitive") is True,
        "risk_level": (decl.get("risk") or {}).get("level"),
    }
