"""The effect layer's definition, as pure functions: the action's *change* against the expert's change.

Both changes are measured from the same tree — the expert's state before step k — as git deltas (per-path status
``A``/``M``/``D`` and the changed lines). Test-file and conftest edits are stripped from the action's delta the way
grading strips them from a model patch (``benchmark.verdicts.is_test_file``): they are reverted before its tests run
and never earn credit. The expert's step *changed something* when its stripped delta is not empty.

**The expert changed something** (an edit step):

1. the action leaves the expert's tree → 1 (also when the expert's change was test-only);
2. an edited ``.py`` file no longer parses, the action deletes a file the expert's step keeps (one that existed
   before the earlier steps), or its stripped delta is empty (a no-op, or only test/conftest edits) → 0;
3. else ``tree`` = 0.5 · Jaccard of the touched paths + 0.5 · similarity of the changed lines (0.7 · the added
   text + 0.3 · the removed text, character ``difflib`` ratios), and with the target tests (FAIL_TO_PASS + PASS_TO_PASS) run on the action's stripped
   tree: ``C`` = the targets whose outcome the expert's step changed, ``K`` = the others; ``fixed`` = share of ``C``
   with the expert's new outcome, ``kept`` = share of ``K`` still with the expert's outcome;
   effect = (0.5 · tree + 0.5 · fixed if C else tree) · kept.

**The expert changed nothing** (a read, search, test run, submit): doing nothing is right, so the effect checks that
the action was harmless and real:

* the tree is unchanged → 1, except a command bash could not find or run (exit 127/126 where the expert's was not)
  → 0, and a failure where the expert's command succeeded (exit ≠ 0 and ≠ the expert's) → 0.5;
* it only adds new non-test files (or edits files earlier steps created: scratch scripts) → 0.5;
* anything else — deleting or modifying a repository file, editing a test file, adding a conftest, destroying the
  repository — → 0.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

MAX_CHARS = 20_000
"""Changed text compared per side (longer deltas are cut: difflib is quadratic)."""
NOT_FOUND = (126, 127)
"""Exit codes of a command bash could not find (127) or not execute (126): a made-up command."""


@dataclass(frozen=True)
class Delta:
    """A change between two trees: ``status`` per path (``A``/``M``/``D``), ``lines`` changed (``path\\t±text``)."""

    status: Mapping[str, str] = field(default_factory=dict)
    lines: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.status

    def to_dict(self) -> dict:
        return {"status": dict(self.status), "lines": list(self.lines)}

    @classmethod
    def from_dict(cls, data: Mapping) -> Delta:
        return cls(dict(data["status"]), tuple(data["lines"]))

    def without(self, drop: Callable[[str], bool]) -> Delta:
        """This delta without the paths where ``drop(path)`` holds."""
        status = {p: s for p, s in self.status.items() if not drop(p)}
        return Delta(status, tuple(line for line in self.lines if line.split("\t", 1)[0] in status))


def parse_delta(name_status: str, diff_u0: str) -> Delta:
    """A :class:`Delta` from ``git diff --name-status -z --no-renames`` and ``git diff -U0 --no-renames`` output."""
    parts = name_status.split("\0")
    status = {parts[i + 1]: parts[i][:1] for i in range(0, len(parts) - 1, 2) if parts[i]}
    lines, path = [], ""
    for line in diff_u0.splitlines():
        if line.startswith("diff --git "):
            path = ""
        elif line.startswith(("+++ b/", "--- a/")):
            path = path or line[6:]
        elif line[:1] in "+-" and not line.startswith(("+++ ", "--- ")) and path:
            lines.append(f"{path}\t{line}")
    return Delta(status, tuple(lines))


@dataclass(frozen=True)
class ExpertFacts:
    """The expert's step ``k``: trees before/after, its delta (``full``) and that delta without test files."""

    pre: str
    post: str
    full: Delta
    delta: Delta
    exit_code: int | None = None
    created: frozenset[str] = frozenset()
    """Paths earlier expert steps created (scratch files: editing or deleting them harms nothing)."""

    @property
    def changed(self) -> bool:
        return not self.delta.empty


@dataclass(frozen=True)
class ActionFacts:
    """What the action did from the expert's state: ``tree`` None when it destroyed the repository."""

    tree: str | None
    full: Delta
    delta: Delta
    exit_code: int
    python_ok: bool = True

    def to_dict(self) -> dict:
        return {"tree": self.tree, "full": self.full.to_dict(), "delta": self.delta.to_dict(),
                "exit_code": self.exit_code, "python_ok": self.python_ok}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping) -> ActionFacts:
        full, delta = Delta.from_dict(data["full"]), Delta.from_dict(data["delta"])
        return cls(data["tree"], full, delta, data["exit_code"], data["python_ok"])


def destructive(action: ActionFacts, expert: ExpertFacts) -> bool:
    """The action destroyed the repository, or deleted a file the expert's step keeps and no earlier step made."""
    if action.tree is None:
        return True
    return any(
        s == "D" and expert.full.status.get(p) != "D" and p not in expert.created
        for p, s in action.full.status.items()
    )


def only_additions(action: ActionFacts, expert: ExpertFacts, is_test: Callable[[str], bool]) -> bool:
    """Every change of the action adds a new non-test file or edits a file earlier steps created."""
    return all(
        (s == "A" and not is_test(p)) or (p in expert.created and s != "D")
        for p, s in action.full.status.items()
    )


def _text_ratio(a: list[str], b: list[str]) -> float:
    if not a and not b:
        return 1.0
    x, y = "\n".join(a)[:MAX_CHARS], "\n".join(b)[:MAX_CHARS]
    return difflib.SequenceMatcher(None, x, y, autojunk=False).ratio()


def line_similarity(action: Delta, expert: Delta) -> float:
    """How alike the changed lines are: 0.7 · the added text + 0.3 · the removed text (character ``difflib``
    ratios; two empty sides are alike; the paths are :func:`tree_similarity`'s business)."""
    side = lambda d, sign: [t[1:] for _, _, t in (x.partition("\t") for x in d.lines) if t[:1] == sign]  # noqa: E731
    return 0.7 * _text_ratio(side(action, "+"), side(expert, "+")) + 0.3 * _text_ratio(
        side(action, "-"), side(expert, "-")
    )


def tree_similarity(action: Delta, expert: Delta) -> float:
    """0.5 · Jaccard of the touched paths + 0.5 · :func:`line_similarity`."""
    a, e = set(action.status), set(expert.status)
    files = len(a & e) / len(a | e) if a | e else 1.0
    return 0.5 * files + 0.5 * line_similarity(action, expert)


def needs_tests(action: ActionFacts, expert: ExpertFacts) -> bool:
    """Whether :func:`effect_value` needs test outcomes (an edit step, a real, different, harmless change)."""
    return (
        expert.changed
        and action.tree != expert.post
        and action.python_ok
        and not destructive(action, expert)
        and not action.delta.empty
    )


def outcome_agreement(
    action: Mapping[str, str], pre: Mapping[str, str], post: Mapping[str, str], targets: list[str]
) -> tuple[float | None, float]:
    """(fixed, kept): share of the targets the expert's step changed that the action changed the same way (None
    when it changed none), and share of the other targets whose outcome stays the expert's."""
    miss = "MISSING"
    changed = [t for t in targets if pre.get(t, miss) != post.get(t, miss)]
    others = [t for t in targets if pre.get(t, miss) == post.get(t, miss)]
    same = lambda ts: sum(action.get(t, miss) == post.get(t, miss) for t in ts)  # noqa: E731
    fixed = same(changed) / len(changed) if changed else None
    kept = same(others) / len(others) if others else 1.0
    return fixed, kept


def effect_value(
    action: ActionFacts,
    expert: ExpertFacts,
    is_test: Callable[[str], bool],
    tests: tuple[float | None, float] | None = None,
) -> float:
    """The effect ∈ [0, 1] (see the module doc); ``tests`` is :func:`outcome_agreement` when :func:`needs_tests`."""
    if action.tree == expert.post and expert.post != expert.pre:
        return 1.0  # the expert's tree (test-only expert steps included)
    if expert.changed:
        if not needs_tests(action, expert):
            return 0.0
        if tests is None:
            raise ValueError("effect_value: this action needs its test agreement (needs_tests)")
        fixed, kept = tests
        tree = tree_similarity(action.delta, expert.delta)
        return (tree if fixed is None else 0.5 * tree + 0.5 * fixed) * kept
    if destructive(action, expert) or not action.python_ok:
        return 0.0
    if not action.full.empty:
        return 0.5 if only_additions(action, expert, is_test) else 0.0
    if action.exit_code in NOT_FOUND and expert.exit_code not in NOT_FOUND:
        return 0.0
    return 1.0 if action.exit_code in (0, expert.exit_code) or expert.exit_code is None else 0.5


def known_outcomes(
    fail_to_pass: list[str], pass_to_pass: list[str], tree: str, base: str | None, gold: str | None
) -> dict[str, str] | None:
    """The target outcomes a validated task defines at its base tree (FAIL_TO_PASS fail, PASS_TO_PASS pass) and
    at its gold tree (all pass), so an expert state equal to one of them needs no test run; None for any other."""
    if tree == gold:
        return dict.fromkeys([*fail_to_pass, *pass_to_pass], "PASSED")
    if tree == base:
        return {**dict.fromkeys(fail_to_pass, "FAILED"), **dict.fromkeys(pass_to_pass, "PASSED")}
    return None


@dataclass(frozen=True)
class EffectResult:
    """One effect evaluation: ``value`` in [0, 1]; ``identical`` when the action left the expert's tree;
    ``python_ok`` False when an edited .py file does not parse; ``tests`` the action's outcomes when they ran;
    ``exit_code`` the action's (None where it was not run: the expert's own action without ``rerun``)."""

    value: float
    identical: bool
    python_ok: bool
    tree: str | None
    tests: Mapping[str, str]
    cached: bool = False
    exit_code: int | None = None


def target_tests(instance) -> list[str]:
    """The tests an effect is judged on."""
    return [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
