"""Sampled mutation score of the reference against the conformance suite, run as `arck run`.

The known-bad mutants (reference/mutants) prove each check *can* fail; this asks how much of
the reference the suite actually pins down. It lists mutation points from the AST of one area's
modules (`--area budget`: projection, canonical, strictjson; `runtime`: reference/runtime/*.py;
`engine`: the other modules of reference/), samples N of them (same seed, same source: same
sample), and runs the suite on each mutant in its own copy of the code. A surviving budget
mutant is probed against the original on a few hundred fixed inputs: one that changes no output
is "likely equivalent" and leaves the adjusted score's denominator. Runtime survivors are judged
by hand in benchmarks/mutation/verdicts.toml (equivalent, with the reason, or a gap and what
closes it). A figure, not a test: a full run takes tens of minutes.

Why not cosmic-ray or mutmut: mutmut 3 instruments functions with trampolines and selects a
mutant inside the pytest process, which a black-box suite whose engine runs in another process
(`arck serve`, worker subprocesses) cannot see; cosmic-ray takes any test command, but mutates
the one working tree in place, enumerates and runs every point of a session (about 3,800 here,
at ~25 s each: a day of machine time), and has no seeded uniform sample nor an equivalence
probe. What this script adds is exactly that: a seeded sample, a frozen copy per mutant (so two
run at once and editing the tree meanwhile is safe), and a probe.

    .venv/bin/python benchmarks/mutation_score.py [N] [--area A] [--seed S] [--jobs J] [--json FILE]
    .venv/bin/python benchmarks/mutation_score.py --area runtime --list
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import difflib
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUDGET = ("reference/projection.py", "reference/canonical.py", "reference/strictjson.py")
# Which checks judge an area: the budget modules are only reached by these; everything else
# by the whole suite.
REQUIREMENTS = {"budget": "BUD,DRY,DEF,AUTH,PRO", "runtime": None, "engine": None}


def area_modules(area: str, code_root: Path) -> tuple[str, ...]:
    """The modules (paths relative to `code_root`) whose points an area samples."""
    if area == "budget":
        return BUDGET
    reference = code_root / "reference"
    if area == "runtime":
        found = sorted((reference / "runtime").glob("*.py"))
    else:
        found = sorted(reference.glob("*.py"))
    names = (path.relative_to(code_root).as_posix() for path in found)
    return tuple(n for n in names if n not in BUDGET and not n.endswith("__init__.py"))


PROBE_TIMEOUT = 180

# --- mutation points ---------------------------------------------------------------------

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
# `//` is not turned into `/`: in these modules every quotient is an index or a size, so a
# float crashes at once, a mutant any test kills. `*` and `//` are swapped instead.
_ARITH_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
}  # fmt: skip
# A function's return annotation -> a different value of that type, where one is simple.
_RETURNS = {"int": "0", "str": "''", "list": "[]", "dict": "{}", "set": "set()"}
_REMOVABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise, ast.If)


@dataclass(frozen=True)
class Point:
    """One mutation: the source span [start, end) (UTF-8 byte offsets) and its replacement."""

    module: str
    line: int
    kind: str
    start: int
    end: int
    original: str
    replacement: str

    @property
    def label(self) -> str:
        old, new = (_short(self.original, 40), _short(self.replacement, 40))
        return f"{Path(self.module).name}:{self.line} {self.kind}: {old} -> {new}"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement.encode() + source[self.end :]


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _skipped(tree: ast.Module) -> set[int]:
    """Nodes never mutated: docstrings, annotations, f-strings (their positions are unreliable)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and _stringy(first.value):
            roots.append(first)
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            roots.append(node.annotation)
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            roots.append(node.returns)
        if isinstance(node, ast.JoinedStr):
            roots.append(node)
    return {id(n) for root in roots for n in ast.walk(root)}


class _Finder:
    """Walks one module and yields its mutation points in source order."""

    def __init__(self, module: str, source: bytes) -> None:
        self.module = module
        self.source = source
        self.tree = ast.parse(source)
        self.skip = _skipped(self.tree)
        lines = source.splitlines(keepends=True)
        self.line_starts = [0]
        for line in lines:
            self.line_starts.append(self.line_starts[-1] + len(line))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.line_starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.line_starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    def point(self, node: ast.AST, kind: str, replacement: str) -> Point:
        start, end = self.span(node)
        original = self.source[start:end].decode()
        return Point(self.module, node.lineno, kind, start, end, original, replacement)  # type: ignore[attr-defined]

    def expr(self, node: ast.expr, kind: str, new: ast.expr | str) -> Point:
        text = new if isinstance(new, str) else ast.unparse(new)
        return self.point(node, kind, f"({text})")

    def points(self) -> Iterator[Point]:
        for node, function in self.walk(self.tree, None):
            if id(node) not in self.skip:
                yield from self.at(node, function)

    def walk(
        self, node: ast.AST, function: ast.FunctionDef | None
    ) -> Iterator[tuple[ast.AST, ast.FunctionDef | None]]:
        yield node, function
        inner = node if isinstance(node, ast.FunctionDef) else function
        for child in ast.iter_child_nodes(node):
            yield from self.walk(child, inner)

    def at(self, node: ast.AST, function: ast.FunctionDef | None) -> Iterator[Point]:
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _COMPARE_SWAPS:
                    new = copy.deepcopy(node)
                    new.ops[i] = _COMPARE_SWAPS[type(op)]()
                    yield self.expr(node, "compare", new)
        elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH_SWAPS:
            if not any(_stringy(side) for side in (node.left, node.right)):
                new_op = copy.deepcopy(node)
                new_op.op = _ARITH_SWAPS[type(node.op)]()
                yield self.expr(node, "arith", new_op)
        elif isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
            aug = copy.deepcopy(node)
            aug.op = _ARITH_SWAPS[type(node.op)]()
            yield self.point(node, "arith", ast.unparse(aug))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield self.point(node, "int+1", str(node.value + 1))
            yield self.point(node, "int-1", str(node.value - 1))
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            yield self.point(node, "bool", str(not node.value))
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            yield self.expr(node, "and/or", ast.BoolOp(other, node.values))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield self.expr(node, "not", node.operand)
        elif isinstance(node, ast.Break | ast.Continue):
            swap = "continue" if isinstance(node, ast.Break) else "break"
            yield self.point(node, "break/continue", swap)
        elif isinstance(node, ast.Slice):
            for bound in (node.lower, node.upper):
                if bound is not None and not isinstance(bound, ast.Constant):
                    text = ast.unparse(bound)
                    yield self.expr(bound, "slice+1", f"{text} + 1")
                    yield self.expr(bound, "slice-1", f"{text} - 1")
        if isinstance(node, ast.Return) and node.value is not None and function is not None:
            new_value = _other_return(node.value, function)
            if new_value is not None:
                yield self.point(node, "return", f"return {new_value}")
        if function is not None and isinstance(node, _REMOVABLE):
            yield self.point(node, "remove", "pass")


def _stringy(node: ast.expr) -> bool:
    """String concatenation is left alone: `str - str` only ever raises."""
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)
    )


def _other_return(value: ast.expr, function: ast.FunctionDef) -> str | None:
    """A different value of the function's declared return type, or None if none is simple."""
    declared = ast.unparse(function.returns) if function.returns else ""
    if isinstance(value, ast.Constant) and type(value.value) is bool:
        return None  # the bool constant's own mutation
    if declared == "bool":
        return f"not ({ast.unparse(value)})"
    if declared.endswith("| None") and not _is_none(value):
        return "None"
    new = _RETURNS.get(declared.split("[")[0])
    return new if new is not None and ast.unparse(value) != new else None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def list_points(code_root: Path, modules: tuple[str, ...]) -> list[Point]:
    """Every mutation point of `modules` under `code_root`, in a stable order; all compile."""
    points: list[Point] = []
    seen: set[bytes] = set()
    for module in modules:
        source = (code_root / module).read_bytes()
        for point in _Finder(module, source).points():
            mutant = point.apply(source)
            try:
                compile(mutant, module, "exec")
            except SyntaxError:
                continue
            if mutant not in seen:  # two points that write the same code are one mutant
                seen.add(mutant)
                points.append(point)
    return points


# --- isolated copies and runs ------------------------------------------------------------


def snapshot(dest: Path) -> Path:
    """Copy `arck/` with its folder symlinks resolved: a frozen, importable code tree."""
    shutil.copytree(
        ROOT / "arck",
        dest / "arck",
        symlinks=False,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis"),
    )
    return dest


def environment(code_root: Path) -> dict[str, str]:
    """PYTHONPATH puts the copy before the editable install's path entry (a .pth file)."""
    return {**os.environ, "PYTHONPATH": str(code_root), "CI": "true", "PYTHONHASHSEED": "0"}


def run_bounded(
    command: list[str], code_root: Path, timeout: float, log: Path | None = None
) -> int | None:
    """Exit code of `command` run in the copy, or None when it timed out (its group killed)."""
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    process = subprocess.Popen(
        command,
        cwd=code_root,
        env=environment(code_root),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    if log is not None:
        out.close()  # type: ignore[union-attr]
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None


def verify_isolation(code_root: Path) -> list[str]:
    """Where `arck`, the mutated modules and the checks are imported from, under a run's env."""
    probe = (
        "import arck, arck.reference.projection as p, arck.reference.strictjson as s, "
        "arck.conformance.coverage as c; print(arck.__file__, p.__file__, s.__file__, "
        "c.CHECKS_DIR, sep='\\n')"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=code_root,
        env=environment(code_root),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def suite(code_root: Path, timeout: float, requirements: str | None) -> tuple[str, float]:
    """Run the checks on one copy: killed (exit 1), survived (0), or error/timeout.

    `--strict`: a recommended requirement the mutant breaks (BUD-10's cuts inside escapes or
    clusters, BUD-13's unused budget) is reported as a warning, which the suite did catch;
    without it such a mutant would count as a survivor. `--check-timeout 60`: a mutant that
    makes a check hang (a cut loop that never advances) is "not testable", which fails the run
    as it would a user's CI; `--timeout` stays the backstop for a hang outside any check.
    """
    report_dir = code_root / "report"
    command = [
        sys.executable, "-m", "arck.conformance.cli", "run", "--target", "reference",
        "--profile", "quick", "--seed", "0", "--strict", "--check-timeout", "60",
        "--report-dir", str(report_dir),
    ]  # fmt: skip
    if requirements:
        command += ["--requirements", requirements]
    start = time.monotonic()
    code = run_bounded(command, code_root, timeout, code_root / "suite.log")
    elapsed = time.monotonic() - start
    if code is None:
        return "timeout", elapsed
    if code == 1 and (report_dir / "report.json").exists():
        return "killed", elapsed
    return {0: "survived"}.get(code, f"error (exit {code})"), elapsed


# --- equivalence probe -------------------------------------------------------------------


def probe_kind(point: Point) -> str | None:
    """Which corpus probes a survivor; None outside the budget modules (judged by hand)."""
    if point.module not in BUDGET:
        return None
    return "strictjson" if point.module.endswith("strictjson.py") else "budget"


@dataclass
class Prober:
    """Probe outputs of the unmutated snapshot, computed once per kind and shared by jobs."""

    base: Path
    inputs: int
    timeout: float
    _cache: dict[str, list[dict[str, str]] | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def outputs(self, code_root: Path, kind: str) -> list[dict[str, str]] | None:
        out = code_root / f"probe-{kind}.json"
        command = [
            sys.executable, str(Path(__file__).resolve()), "--probe", kind,
            "--probe-out", str(out), "--probe-inputs", str(self.inputs),
        ]  # fmt: skip
        if run_bounded(command, code_root, self.timeout) != 0 or not out.exists():
            return None
        records: list[dict[str, str]] = json.loads(out.read_text())
        return records

    def original(self, kind: str) -> list[dict[str, str]] | None:
        with self._lock:
            if kind not in self._cache:
                self._cache[kind] = self.outputs(self.base, kind)
            return self._cache[kind]

    def verdict(self, code_root: Path, kind: str) -> tuple[str, str | None]:
        """Compare a survivor's probe outputs with the original's; one differing input if any."""
        before, after = self.original(kind), self.outputs(code_root, kind)
        if before is None or after is None:
            return "probe failed (crash or timeout)", None
        if [r["input_sha"] for r in before] != [r["input_sha"] for r in after]:
            return "probe failed (inputs not reproducible)", None
        differing = [(b, a) for b, a in zip(before, after, strict=True) if b["out"] != a["out"]]
        if not differing:
            return f"likely equivalent (no difference on {len(before)} inputs)", None
        b, a = min(differing, key=lambda pair: int(pair[0]["size"]))
        only_message = all(x["verdict"] == y["verdict"] != "ok" for x, y in differing)
        label = "differs (message text only)" if only_message else "differs"
        label += f" on {len(differing)}/{len(before)} inputs"
        return label, f"input {b['input']}\n  original {_diff_at(b['out'], a['out'])}"


def _diff_at(before: str, after: str, width: int = 70) -> str:
    """Both outputs around their first difference, shortened."""
    i = next((k for k, (x, y) in enumerate(zip(before, after, strict=False)) if x != y), None)
    i = min(len(before), len(after)) if i is None else i
    lo = max(0, i - width // 2)
    return f"…{before[lo : lo + width]}…\n  mutant   …{after[lo : lo + width]}…"


def _dumps(value: Any) -> str:
    """JSON text of a probe's input or output, huge integers included.

    The interpreter's digit limit is lifted only here, never while the code under test runs:
    strictjson relies on it.
    """
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=True, default=repr)
    finally:
        sys.set_int_max_str_digits(limit)


def _record(label: Any, call: Any) -> dict[str, str]:
    """One probe input and what the code under test made of it, outcome and message apart."""
    try:
        result = call()
    except Exception as exc:
        verdict = "raised " + type(exc).__name__
        out = f"{verdict}: {exc} {getattr(exc, 'path', '')}"
    else:
        verdict, out = "ok", _dumps(result)
    text = _dumps(label)
    sha = hashlib.sha256(text.encode()).hexdigest()
    shown = f"{_short(_RUNS.sub(_run, text[:4000]), 200)} ({len(text)} chars)"
    return {
        "input": shown,
        "size": str(len(text)),
        "input_sha": sha,
        "verdict": verdict,
        "out": out,
    }


_RUNS = re.compile(r"(.{1,24}?)\1{3,}", re.DOTALL)  # generated results repeat a small unit


def _run(match: re.Match[str]) -> str:
    unit = match.group(1)
    return f"{unit}{{x{len(match.group(0)) // len(unit)}}}"


def probe(kind: str, out: Path, inputs: int) -> None:
    """Run in a copy (mutated or not): write what its modules do with a fixed corpus."""
    from arck.conformance import strategies as s

    records = _strictjson_records(s, inputs) if kind == "strictjson" else _budget_records(s, inputs)
    out.write_text(json.dumps(records))


def _draw(strategy: Any, count: int) -> list[Any]:
    """`count` examples from a strategy, the same ones every time (fixed seed, no database)."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    drawn: list[Any] = []

    @seed(0)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(example: Any) -> None:
        drawn.append(copy.deepcopy(example))

    collect()
    return drawn


def _budget_records(s: Any, inputs: int) -> list[dict[str, str]]:
    from arck.reference import canonical, projection

    projector = projection.Projector()
    share = max(1, inputs // 4)
    cases = [
        *_draw(s.over_budget_cases(), share),
        *_draw(s.within_budget_cases(), share),
        *_draw(s.multimodal_over_budget_cases(), share),
        *[(1024, value) for value in _draw(s.unencodable_results(), share)],
    ]
    edges: list[Any] = [s.deep_nesting(n) for n in (510, 511, 512, 513)] + [
        {"a": s.deep_nesting(n)} for n in (510, 511, 512)
    ]
    edges += [s.huge_int_digits(n, neg) for n in (4299, 4300, 4301) for neg in (False, True)]
    records = [
        _record(("project", budget, value), lambda b=budget, v=value: _preview(projector, v, b))
        for budget, value in cases
    ]
    version = getattr(projection, "unicode_version", None)
    records.append(_record(("unicode_version",), version or (lambda: None)))
    for value in [value for _, value in cases] + edges:
        records.append(_record(("measure", value), lambda v=value: canonical.measure(v)))
        records.append(_record(("limits", value), lambda v=value: canonical.check_limits(v)))
    return records


def _preview(projector: Any, value: Any, budget: int) -> list[Any]:
    preview = projector.project(value, budget)
    return [preview.truncated, preview.original_bytes, preview.retained_bytes, preview.result]


def _strictjson_records(s: Any, inputs: int) -> list[dict[str, str]]:
    from arck.reference.strictjson import loads_strict

    folder = Path(s.__file__).parent / "data" / "JSONTestSuite" / "test_parsing"
    bodies = [path.read_bytes() for path in sorted(folder.iterdir())]
    for i, value in enumerate(_draw(s.json_values(max_leaves=10), inputs)):
        bodies.append(json.dumps(value, ensure_ascii=i % 2 == 0).encode("utf-8", "surrogatepass"))
    bodies += [b"[" * n + b"]" * n for n in (511, 512, 513, 519, 520, 521)]
    bodies += [b"9" * n for n in (4299, 4300, 4301)] + [b"-" + b"9" * 4300, b"-" + b"9" * 4301]
    bodies += [
        b'{"a":1,"a":2}',
        b'{"a":{"b":[1,{"c":NaN}]}}',
        b"1e400",
        b'"\\ud800"',
        b"\xef\xbb\xbf1",
    ]
    records = []
    for body in bodies:
        label = body.decode("utf-8", "backslashreplace")
        for depth in (512, 520):  # the default, and the engine's body depth
            call = lambda b=body, d=depth: loads_strict(b, max_depth=d)  # noqa: E731
            records.append(_record(("loads_strict", depth, label), call))
    return records


# --- the run -----------------------------------------------------------------------------


@dataclass
class Outcome:
    point: Point
    status: str
    seconds: float
    probe: str | None = None
    example: str | None = None
    diff: str = ""
    caught_by: list[str] = field(default_factory=list)  # checks failed, warned or not testable


def run_one(
    number: int, point: Point, base: Path, work: Path, args: argparse.Namespace, prober: Prober
) -> Outcome:
    """Copy the snapshot, apply one mutant, run the suite, probe it if it survived."""
    code_root = work / f"mutant-{number}"
    shutil.copytree(base, code_root)
    target = code_root / "arck" / point.module
    source = target.read_bytes()
    target.write_bytes(point.apply(source))
    try:
        status, seconds = suite(code_root, args.timeout, REQUIREMENTS[args.area])
        outcome = Outcome(point, status, seconds, diff=_unified(point, source))
        kind = probe_kind(point)
        if status == "survived" and kind is not None:
            outcome.probe, outcome.example = prober.verdict(code_root, kind)
        elif status == "killed":
            outcome.caught_by = _caught_by(code_root / "report" / "report.json")
        elif status not in ("killed", "survived"):  # what the run said before it gave up
            log = code_root / "suite.log"
            tail = log.read_bytes()[-600:] if log.exists() else b""
            outcome.example = tail.decode("utf-8", "replace")
        return outcome
    finally:
        shutil.rmtree(code_root, ignore_errors=True)


def _caught_by(report: Path) -> list[str]:
    checks = json.loads(report.read_text("utf-8")).get("checks", [])
    bad = ("fail", "warn", "not_testable")
    return [f"{c['check_id']} ({c['status']})" for c in checks if c.get("status") in bad]


def _unified(point: Point, source: bytes) -> str:
    before = source.decode().splitlines(keepends=True)
    after = point.apply(source).decode().splitlines(keepends=True)
    name = f"a/{point.module}", f"b/{point.module}"
    return "".join(difflib.unified_diff(before, after, *name, n=1))


def scores(outcomes: list[Outcome]) -> dict[str, Any]:
    """Raw: killed / (killed + survived). Adjusted: likely-equivalent survivors left out.

    Errors and timeouts are in neither denominator: a mutant that hangs or breaks the harness
    says nothing about what the checks assert. They are counted on their own line.
    """
    killed = sum(o.status == "killed" for o in outcomes)
    survived = sum(o.status == "survived" for o in outcomes)
    equivalent = sum(
        o.status == "survived" and (o.probe or "").startswith("likely") for o in outcomes
    )
    judged = killed + survived
    return {
        "mutants": len(outcomes),
        "killed": killed,
        "survived": survived,
        "likely_equivalent": equivalent,
        "error_or_timeout": len(outcomes) - judged,
        "raw_score": killed / judged if judged else None,
        "adjusted_score": killed / (judged - equivalent) if judged - equivalent else None,
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def report(outcomes: list[Outcome], modules: tuple[str, ...]) -> None:
    survivors = [o for o in outcomes if o.status == "survived"]
    for o in survivors:
        print(f"\n=== survived: {o.point.label}\n{o.diff.rstrip()}\nprobe: {o.probe}")
        if o.example:
            print(f"  {o.example}")
    print(f"\n{'module':<20} {'mutants':>7} {'killed':>6} {'survived':>8} {'equiv?':>6} "
          f"{'err/t.o.':>8} {'raw':>5} {'adjusted':>8}")  # fmt: skip
    groups = [(Path(m).name, [o for o in outcomes if o.point.module == m]) for m in modules]
    for name, group in [*groups, ("all", outcomes)]:
        if not group:
            continue
        sc = scores(group)
        print(
            f"{name:<20} {sc['mutants']:>7} {sc['killed']:>6} {sc['survived']:>8} "
            f"{sc['likely_equivalent']:>6} {sc['error_or_timeout']:>8} "
            f"{_pct(sc['raw_score']):>5} {_pct(sc['adjusted_score']):>8}"
        )
    print("raw = killed/(killed+survived); adjusted leaves likely-equivalent survivors out; "
          "errors and timeouts are in neither.")  # fmt: skip


def find_again(points: list[Point], earlier: Path, only_survivors: bool) -> list[Point]:
    """The mutants of an earlier run, located in today's source.

    A point is the same mutation when its module, kind, original text and replacement match;
    among several such (the same `+ 1` twice in a module), the one nearest its old line. The
    source may have moved since the sample was drawn, so every match is printed with its old
    line, and a mutation whose code is gone is reported and skipped, never guessed.
    """
    rows = json.loads(earlier.read_text())["mutants"]
    chosen: list[Point] = []
    for row in rows:
        if only_survivors and row["status"] != "survived":
            continue
        old = row["point"]
        same = [
            p
            for p in points
            if (p.module, p.kind, p.original, p.replacement)
            == (old["module"], old["kind"], old["original"], old["replacement"])
        ]
        if not same:
            print(f"gone from the source: {old['label']}")
            continue
        found = min(same, key=lambda p: abs(p.line - old["line"]))
        print(f"line {old['line']:>4} -> {found.line:>4}  {found.label}")
        chosen.append(found)
    return chosen


VERDICTS = ("equivalent", "gap", "detected")


def load_verdicts(path: Path) -> dict[str, dict[str, str]]:
    """Hand verdicts by mutant label (`[[verdict]]` tables: `mutant`, `verdict`, `why`,
    and for a gap `closed_by`); a bad entry names its index and field."""
    import tomllib

    table = tomllib.loads(path.read_text("utf-8"))
    found: dict[str, dict[str, str]] = {}
    for i, entry in enumerate(table.get("verdict", [])):
        where = f"{path}: verdict[{i}]"
        if entry.get("verdict") not in VERDICTS:
            raise SystemExit(f"{where}.verdict: one of {', '.join(VERDICTS)}, not "
                             f"{entry.get('verdict')!r}")
        for key in ("mutant", "why"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise SystemExit(f"{where}.{key}: a non-empty string is needed")
        found[entry["mutant"]] = entry
    return found


def judged(rows: list[dict[str, Any]], verdicts: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The score with the hand verdicts: detected = killed, hung (a timeout: the run never
    ends, which fails any CI job) and errors judged "detected" (the harness refused the
    target, exit 2); survivors judged equivalent leave the denominator; every other survivor,
    and any outcome with no verdict, stays a miss."""
    detected = missed = equivalent = unjudged = errors = caught_after = 0
    for row in rows:
        label, status = row["point"]["label"], row["status"]
        entry = verdicts.get(label, {})
        verdict = entry.get("verdict")
        if status in ("killed", "timeout") or (status.startswith("error") and
                                                verdict == "detected"):
            detected += 1
        elif status == "survived" and verdict == "equivalent":
            equivalent += 1
        elif status == "survived":
            missed += 1
            unjudged += verdict is None
            caught_after += entry.get("after") in ("killed", "timeout")
        else:
            errors += 1
    judged_total = detected + missed
    return {"mutants": len(rows), "detected": detected, "missed": missed,
            "equivalent": equivalent, "errors_unjudged": errors, "survivors_unjudged": unjudged,
            "score": detected / judged_total if judged_total else None,
            # the same mutants run again on today's suite (a verdict's `after`)
            "caught_after": caught_after,
            "score_after": (detected + caught_after) / judged_total if judged_total else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("limit", nargs="?", type=int, default=60, help="mutants to sample (60)")
    parser.add_argument("--limit", dest="limit_opt", type=int, help="same as the positional N")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (0)")
    parser.add_argument(
        "--area", choices=tuple(REQUIREMENTS), default="budget", help="modules to mutate (budget)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (1)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per suite run (300)")
    parser.add_argument("--points", help="run these point numbers (from --list), comma-separated")
    parser.add_argument(
        "--rerun",
        type=Path,
        help="run again the mutants of an earlier --json file (found again in today's source)",
    )
    parser.add_argument(
        "--only-survivors", action="store_true", help="with --rerun: only its survivors"
    )
    parser.add_argument("--list", action="store_true", help="print the points, run nothing")
    parser.add_argument("--probe-inputs", type=int, default=300, help="probe corpus size (300)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    parser.add_argument("--json", type=Path, help="also write the outcomes to this file")
    parser.add_argument("--probe", choices=("budget", "strictjson"), help=argparse.SUPPRESS)
    parser.add_argument("--probe-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--score", type=Path, help="score an earlier --json file, run nothing")
    parser.add_argument("--verdicts", type=Path, help="with --score: hand verdicts (TOML)")
    args = parser.parse_args()
    if args.score:
        rows = json.loads(args.score.read_text())["mutants"]
        verdicts = load_verdicts(args.verdicts) if args.verdicts else {}
        print(json.dumps(judged(rows, verdicts), indent=1))
        for row in rows:
            label = row["point"]["label"]
            if row["status"] == "survived" and label not in verdicts:
                print(f"no verdict: {label}")
        return 0
    if args.probe:
        probe(args.probe, args.probe_out, args.probe_inputs)
        return 0

    with tempfile.TemporaryDirectory(prefix="arck-mutants-") as tmp:
        base = snapshot(Path(tmp) / "base")
        modules = area_modules(args.area, base / "arck")
        points = list_points(base / "arck", modules)
        args.total_points = len(points)
        kinds = Counter(p.kind for p in points)
        print(f"{len(points)} mutation points: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
        if args.list:
            for i, point in enumerate(points):
                print(f"{i:>4} {point.label}")
            return 0
        if args.rerun:
            chosen = find_again(points, args.rerun, args.only_survivors)
        elif args.points:
            chosen = [points[int(i)] for i in args.points.split(",")]
        else:
            limit = args.limit_opt if args.limit_opt is not None else args.limit
            chosen = random.Random(args.seed).sample(points, min(limit, len(points)))
        return execute(chosen, base, Path(tmp), args, modules)


def execute(
    chosen: list[Point], base: Path, work: Path, args: argparse.Namespace, modules: tuple[str, ...]
) -> int:
    paths = verify_isolation(base)
    print("imports under a run's environment:", *paths, sep="\n  ")
    if not all(Path(p).is_relative_to(base) for p in paths):
        print("isolation broken: arck does not resolve to the copy", file=sys.stderr)
        return 2
    if not args.no_baseline:
        status, seconds = suite(base, args.timeout, REQUIREMENTS[args.area])
        print(f"unmutated copy: {status} in {seconds:.0f} s")
        if status != "survived":
            print("the suite must pass on the unmutated code to score mutants", file=sys.stderr)
            return 2
    prober = Prober(base, args.probe_inputs, PROBE_TIMEOUT)
    outcomes: list[Outcome] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [
            pool.submit(run_one, i, p, base, work, args, prober) for i, p in enumerate(chosen)
        ]
        for future in concurrent.futures.as_completed(futures):
            o = future.result()
            outcomes.append(o)
            done = f"[{len(outcomes)}/{len(chosen)}]"
            print(f"{done} {o.status:<9} {o.seconds:>5.0f} s  {o.point.label}", flush=True)
    outcomes.sort(key=lambda o: (o.point.module, o.point.start))
    report(outcomes, modules)
    if args.json:
        rows = [
            {**asdict(o), "point": {**asdict(o.point), "label": o.point.label}} for o in outcomes
        ]
        header = {"area": args.area, "seed": args.seed, "sampled_from": args.total_points}
        body = {**header, "scores": scores(outcomes), "mutants": rows}
        args.json.write_text(json.dumps(body, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
