"""The error tree: the target is wrong (a failure) versus the harness was misused (exit 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from arck.simulator.errors import TargetUnreachable, UsageError

if TYPE_CHECKING:
    from arck.simulator.target import Exchange

__all__ = [
    "ArckError",
    "CheckFailure",
    "CheckTimeout",
    "NotApplicable",
    "NotTestable",
    "TargetUnreachable",
    "UsageError",
    "keyed",
    "request_of",
    "with_request",
]

class ArckError(Exception):
    """Base of every error arck raises on purpose."""


# -- the target is wrong -----------------------------------------------------------------------


class CheckFailure(AssertionError):
    """A check saw the target break a requirement.

    The message says what was expected, what was seen and how to look further; `example` is the
    input that showed it (after shrinking), kept so the failure can be replayed; `exchanges` are
    the curl lines of that input's HTTP exchanges, taken when it was raised.
    """

    # Which failure this is (requirement IDs, the check module's line that raised it): set on
    # the subclasses `keyed` makes, None on a plain CheckFailure.
    key: ClassVar[tuple[tuple[str, ...], str, int] | None] = None

    def __init__(
        self,
        requirement: str | tuple[str, ...],
        expected: str,
        seen: str,
        *,
        example: Any = None,
        hint: str = "",
    ) -> None:
        self.requirements = (requirement,) if isinstance(requirement, str) else requirement
        self.expected = expected
        self.seen = seen
        self.example = example
        self.hint = hint
        self.exchanges: list[str] | None = None
        ids = ", ".join(self.requirements)
        text = f"[{ids}] expected {expected}; saw {seen}."
        if hint:
            text += f" {hint}"
        super().__init__(text)


_KEYED: dict[tuple[tuple[str, ...], str, int], type[CheckFailure]] = {}


def keyed(failure: CheckFailure, filename: str, line: int) -> CheckFailure:
    """The same failure as an instance of the one subclass for its IDs and line.

    Hypothesis tells failures apart by exception type and raise location, and every `expect`
    raises from the same line: a class per key makes each distinct failure its own bug, shrunk
    and reported separately, while the same assertion failing with other values stays one.
    """
    key = (tuple(sorted(set(failure.requirements))), filename, line)
    cls = _KEYED.get(key)
    if cls is None:
        where = f"{filename.rsplit('/', 1)[-1]}:{line}"
        name = f"CheckFailure[{', '.join(key[0])} at {where}]"
        cls = _KEYED[key] = type(name, (CheckFailure,), {"key": key, "__module__": __name__})
    copy = cls.__new__(cls)
    copy.__dict__.update(failure.__dict__)
    copy.args = failure.args
    copy.__cause__ = failure.__cause__
    return copy


class NotApplicable(ArckError):
    """The target does not declare the capability or profile a check needs."""


class NotTestable(ArckError):
    """A prerequisite failed (setup, an earlier step), so the check could not judge.

    `exchange`, when the failure is a request the target refused or answered unusably, is
    kept (as its curl line and answer) so the report shows which request it was.
    """

    def __init__(self, message: str, *, exchange: Exchange | None = None) -> None:
        super().__init__(message)
        if exchange is not None:
            with_request(self, exchange.reproduction())


_REQUEST = "arck_request"


def with_request(exc: BaseException, request: str) -> None:
    """Remember on `exc` the request it is about (a curl line and its answer), unless it
    already names one: the report shows it beside the error (H-02)."""
    if getattr(exc, _REQUEST, None) is None:
        setattr(exc, _REQUEST, request)


def request_of(exc: BaseException) -> str | None:
    """The request `with_request` kept on `exc`, if any."""
    found = getattr(exc, _REQUEST, None)
    return found if isinstance(found, str) else None


class CheckTimeout(BaseException):
    """The per-check watchdog fired: the target hung (`on_target`: a request was waiting for
    its answer) or the check itself ran out of time between requests."""

    def __init__(self, message: str, *, on_target: bool = True) -> None:
        super().__init__(message)
        self.on_target = on_target
