"""The semantic layer ∈ [0, 1]: similarity of two actions' normalized syntax trees (docs/rewards.md has examples).

An action with a destructive operation the expert's action does not do (``harm.py``) scores 0. Otherwise both
actions become lists of :class:`~swe_srl.rewards.bash.units.Unit` (one per simple command or file edit), paired
greedily by score; the action score is the F1 of recall (how much of the expert's units the pairs cover) and
precision (how much of the action's units match), each weighted per unit: reads, ``cd``/``echo`` and pipe filters
weigh half of what edits, test runs and other commands weigh (``cd``/``echo``/filters 0.1, reads 0.5, others 1),
so extra commands cost, extra edits most. Out-of-order pairs cost a factor 0.9. Per-pair rules by family:

* **location** — search (grep ≈ rg ≈ ag ≈ git grep ≈ search_dir/search_file, ``find | xargs grep``): 0.45
  pattern, 0.35 paths, 0.2 flags; find (≈ find_file): 0.4 paths, 0.6 predicates; view (cat ≈ head ≈ tail ≈ sed -n
  ≈ editor view ≈ open): 0.75 path, 0.25 line-range overlap; list (ls ≈ find -maxdepth ≈ editor view of a
  folder): 0.7 paths, 0.3 flags. Different location families still share 0.25 × path similarity, unless one
  side looks at the whole repository (``ls``, ``grep -rn x .``: no path but ``.``), which locates nothing.
* **edit** — sed -i / editor str_replace / create / insert / SWE-agent edit / heredoc, echo and ``python -c``
  writes: the target file gates the score (another file keeps at most 0.3 × path similarity; the open file of
  ``edit`` 0.7), then 0.3 old text + 0.7 change: 1 when the new texts are equal on the Python AST, else the lower
  of the new texts' similarity and the similarity of what each edit adds and removes (``pycode.change_sim``).
  Another edit kind costs 0.2.
* **test** — pytest ≈ python -m pytest ≈ tox ≈ unittest: 0.9 selection (targets: file 0.5, test ids 0.5;
  ``f.py -k name`` ≈ ``f.py::name``; half ``-k`` when a -k expression remains), 0.1 flags.
* **python** — inline code by AST token similarity (``pycode.code_sim``); **git** — the same subcommand by flags
  and arguments, two different reads (status/diff/log/show) 0.3; **other** — name, flags, positional arguments.

``fuzzy=True`` relaxes non-key elements: Python names and string constants become placeholders, text compares
case-insensitively.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from swe_srl.rewards.bash.units import GIT_READS, LOCATION, Unit, action_units
from swe_srl.rewards.edits import Edit
from swe_srl.rewards.harm import unexpected_harm
from swe_srl.rewards.pycode import LIMIT, change_sim, code_sim
from swe_srl.rewards.similarity import normalize_ws, text_ratio
from swe_srl.rewards.syntax import sed_literal


def _text_sim(a: str, b: str, fuzzy: bool) -> float:
    a, b = normalize_ws(a), normalize_ws(b)
    if fuzzy:
        a, b = a.lower(), b.lower()
    return text_ratio(a, b, LIMIT)


def path_sim(a: str, b: str) -> float:
    """1 for equal paths, 0.6 when one contains the other, 0.5+ for the same file name elsewhere, else low."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    if a == "." or b == "." or a.startswith(b + "/") or b.startswith(a + "/"):
        return 0.6
    da, _, fa = a.rpartition("/")
    db, _, fb = b.rpartition("/")
    if fa == fb:
        return 0.5 + 0.3 * text_ratio(da, db)
    return 0.25 * (1.0 if da == db else text_ratio(da, db))


def soft_set(a: Sequence[str], b: Sequence[str], sim: Callable[[str, str], float]) -> float:
    """Greedy best-match Dice similarity of two collections (1.0 when both are empty)."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    pairs = sorted(((sim(x, y), i, j) for i, x in enumerate(a) for j, y in enumerate(b)), reverse=True)
    used_a, used_b, total = set(), set(), 0.0
    for score, i, j in pairs:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            total += score
    return 2 * total / (len(a) + len(b))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (1.0 for two empty sets)."""
    return len(a & b) / len(a | b) if a or b else 1.0


def _paths(a: Unit, b: Unit) -> float:
    return soft_set(a.paths, b.paths, path_sim)


def _span_sim(a: tuple[int, int] | None, b: tuple[int, int] | None) -> float:
    if a == b:
        return 1.0
    if a is None or b is None or a[0] < 0 or b[0] < 0:
        return 0.5
    end_a, end_b = (a[1] if a[1] >= 0 else 10**6), (b[1] if b[1] >= 0 else 10**6)
    overlap = min(end_a, end_b) - max(a[0], b[0]) + 1
    union = max(end_a, end_b) - min(a[0], b[0]) + 1
    return max(overlap, 0) / union if union > 0 else 0.0


def _edit_text(edit: Edit) -> tuple[str | None, str]:
    if edit.regex and edit.old is not None:
        literal = sed_literal(edit.old, edit.extended)
        if literal is not None:
            return literal, edit.new.replace("&", literal).replace("\\n", "\n")
    return edit.old, edit.new


def _edit_sim(a: Edit, b: Edit, fuzzy: bool) -> float:
    same = a.path == b.path  # "" is the open file of SWE-agent's ``edit``: unknown
    gate = 1.0 if same else 0.7 if "" in (a.path, b.path) else 0.3 * path_sim(a.path, b.path)
    (old_a, new_a), (old_b, new_b) = _edit_text(a), _edit_text(b)
    new = code_sim(new_a, new_b, fuzzy)
    if old_a is not None and old_b is not None:
        change = 1.0 if new == 1.0 else min(new, change_sim(old_a, new_a, old_b, new_b, fuzzy))
        content = 0.3 * code_sim(old_a, old_b, fuzzy) + 0.7 * change
    else:
        content = new
    return gate * (1.0 if a.kind == b.kind else 0.8) * content


def _test_target(target: str) -> tuple[str, list[str]]:
    """``tests/test_x.py::C::f`` or dotted ``tests.test_x.C.f`` → (file path without .py, [C, f])."""
    path, _, rest = target.partition("::")
    if "/" not in path and not path.endswith(".py") and not rest:
        parts = target.split(".")
        split = next((k for k, p in enumerate(parts) if p[:1].isupper()), len(parts))
        return "/".join(parts[:split]), parts[split:]
    return path.removesuffix(".py"), [p for p in rest.split("::") if p]


def _target_sim(a: str, b: str) -> float:
    """0.5 file (path similarity), 0.5 test ids: equal ids 1, a whole file vs a test in it 0.5."""
    (fa, ida), (fb, idb) = _test_target(a), _test_target(b)
    whole_file = not ida or not idb
    ids = (1.0 if ida == idb else 0.5) if whole_file else text_ratio("::".join(ida), "::".join(idb))
    return 0.5 * path_sim(fa, fb) + 0.5 * ids * (1.0 if fa == fb else 0.5)


def _pair(a: Unit, b: Unit, fuzzy: bool) -> float:
    if a.family != b.family:
        if a.family not in LOCATION or b.family not in LOCATION:
            return 0.0
        if set(a.paths) <= {"."} or set(b.paths) <= {"."}:  # the whole repository locates nothing
            return 0.0
        return 0.25 * _paths(a, b)
    name = 1.0 if a.name == b.name else 0.9
    family = a.family
    if family == "search":
        pattern = _text_sim(a.pattern, b.pattern, fuzzy)
        return name * (0.45 * pattern + 0.35 * _paths(a, b) + 0.2 * jaccard(a.flags, b.flags))
    if family == "find":
        preds = soft_set(sorted(a.flags), sorted(b.flags), lambda x, y: _text_sim(x, y, fuzzy))
        return 0.4 * _paths(a, b) + 0.6 * preds
    if family == "view":
        return _paths(a, b) * (0.75 + 0.25 * _span_sim(a.span, b.span))
    if family == "list":
        return 0.7 * _paths(a, b) + 0.3 * jaccard(a.flags, b.flags)
    if family == "edit" and a.edit is not None and b.edit is not None:
        return _edit_sim(a.edit, b.edit, fuzzy)
    if family == "test":
        selection = soft_set(a.paths, b.paths, _target_sim) if a.paths or b.paths else 1.0
        if a.pattern or b.pattern:
            selection = 0.5 * selection + 0.5 * _text_sim(a.pattern, b.pattern, fuzzy)
        return name * (0.9 * selection + 0.1 * jaccard(a.flags, b.flags))
    if family == "python":
        return code_sim(a.code or "", b.code or "", fuzzy)
    if a.name != b.name:
        return 0.3 if a.name in GIT_READS and b.name in GIT_READS else 0.0
    args = soft_set(a.args, b.args, path_sim) if a.args or b.args else 1.0
    return 0.2 + 0.8 * (0.25 * jaccard(a.flags, b.flags) + 0.75 * args)


def _weight(unit: Unit) -> float:
    """Reads (and ``cd``/``echo``, pipe filters) cost half as much as edits, test runs and other commands when one
    side runs them and the other does not."""
    reads = unit.family in LOCATION or unit.family in ("nav", "filter") or unit.name in GIT_READS
    return unit.weight * (0.5 if reads else 1.0)


def units_similarity(ua: Sequence[Unit], ub: Sequence[Unit], fuzzy: bool = False) -> float:
    """F1 of weighted recall (expert units ``ua`` covered) and precision (action units ``ub`` that match) over
    greedily paired units, times 0.9 if the pairing is out of order."""
    if not ua or not ub:
        return 1.0 if not ua and not ub else 0.0
    scores = sorted(
        ((_pair(a, b, fuzzy), i, j) for i, a in enumerate(ua) for j, b in enumerate(ub)), reverse=True
    )
    used_a: dict[int, int] = {}
    used_b: set[int] = set()
    recall = precision = 0.0
    for score, i, j in scores:
        if score > 0 and i not in used_a and j not in used_b:
            used_a[i] = j
            used_b.add(j)
            recall += score * _weight(ua[i])
            precision += score * _weight(ub[j])
    recall /= sum(_weight(u) for u in ua)
    precision /= sum(_weight(u) for u in ub)
    if recall + precision == 0:
        return 0.0
    order = [used_a[i] for i in sorted(used_a)]
    in_order = all(x < y for x, y in zip(order, order[1:], strict=False))
    return min(1.0, 2 * recall * precision / (recall + precision)) * (1.0 if in_order else 0.9)


def semantic_similarity(
    expert_action: str, action: str, fuzzy: bool = False, created_files: frozenset[str] | None = None
) -> float:
    """Semantic similarity of two bash actions ∈ [0, 1]: identical → 1.0, unrelated or destructive → 0."""
    if normalize_ws(expert_action) == normalize_ws(action):
        return 1.0
    if unexpected_harm(expert_action, action, created_files):
        return 0.0
    return units_similarity(action_units(expert_action), action_units(action), fuzzy)
