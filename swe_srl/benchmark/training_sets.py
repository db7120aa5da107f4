"""The training sets users pair with SRL, SWE-Gym and SWE-smith: their records as SWE-bench records.

* **SWE-Gym** (``SWE-Gym/SWE-Gym``: 2,438 instances from 11 Python repositories; ``SWE-Gym/SWE-Gym-Lite``) is in
  SWE-bench's schema (no ``environment_setup_commit``; the test lists are lists). Its published images are
  ``xingyaoww/sweb.eval.x86_64.<instance_id with __ → _s_, lower case>`` (OpenHands' ``get_instance_docker_image``),
  laid out as SWE-bench's: the repo at ``/testbed``, the conda env ``testbed``.
* **SWE-smith** (``SWE-bench/SWE-smith``): ``instance_id`` is ``owner__repo.<commit8>.<bug>``, ``repo`` the mirror
  ``swesmith/owner__repo.<commit8>``, ``patch`` the diff that *creates* the bug, there is no ``test_patch`` (the
  tests are in the repo) and ``image_name`` names one published image per repo and commit
  (``jyangballin/swesmith.x86_64.owner_1776_repo.<commit8>``, SWE-smith's ``RepoProfile.image_name``). A task
  starts on the mirror's branch named by its instance id: the clean commit plus the bug patch, committed
  (``swesmith.harness.gather``); ``base_commit``, where the record has it, is that branch's commit.

:func:`normalize` turns a SWE-smith record into a SWE-bench one: ``patch`` becomes the bug patch reversed (the gold
fix; ``bug_patch`` keeps the original), ``test_patch`` is empty, and the test lists are cut to the FAIL_TO_PASS
test files, the only files SWE-smith's harness runs and grades (``PASS_TO_PASS_all`` keeps the full list). Every
record of a training set gets ``source`` (its dataset id) and ``image_name`` (its published image). Pure: no I/O
but ``git rev-parse`` in a record's own ``repo_dir``.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

from swe_srl.errors import TaskError

SWE_GYM = "SWE-Gym/SWE-Gym"
SWE_GYM_LITE = "SWE-Gym/SWE-Gym-Lite"
SWE_SMITH = "SWE-bench/SWE-smith"
TRAINING_SETS = {SWE_GYM: "swe-gym", SWE_GYM_LITE: "swe-gym", SWE_SMITH: "swe-smith"}
"""HF dataset id → its family; these ids load with split ``train`` unless told (they have no other)."""
PREFIXES = {"swe-gym": SWE_GYM, "swe-smith": SWE_SMITH}
"""``swe-gym:FILE`` / ``swe-smith:FILE``: a local export of the set, marked as its source."""
SWE_GYM_IMAGE_PREFIX = "xingyaoww/sweb.eval.x86_64."
SWE_SMITH_IMAGE_ORG = "jyangballin"
SWE_SMITH_TEST_CMD = "pytest --disable-warnings --color=no --tb=no --verbose"
"""SWE-smith's ``PythonProfile.test_cmd``, run over the FAIL_TO_PASS files (a few repos' profiles differ)."""
HINTS = {
    "swe-gym": "SWE-Gym's specs are in SWE-Gym/SWE-Bench-Fork: SWE_SRL_SWEBENCH_SPECS may name a JSON dump of them",
    "swe-smith": "SWE-smith's install recipes are its own repo profiles",
}
"""Where a training set's environment specs are, for the error of an instance without one."""
_SHA = re.compile(r"^[0-9a-f]{40}$")
_HUNK = re.compile(r"^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$", re.DOTALL)


def swe_gym_image(instance_id: str) -> str:
    """The published SWE-Gym image of ``instance_id`` (``python__mypy-15976`` → ``…python_s_mypy-15976``)."""
    return (SWE_GYM_IMAGE_PREFIX + instance_id.replace("__", "_s_")).lower()


def swe_smith_image(mirror: str) -> str:
    """The published SWE-smith image of the mirror ``swesmith/owner__repo.<commit8>``."""
    name = mirror.split("/", 1)[-1]
    return f"{SWE_SMITH_IMAGE_ORG}/swesmith.x86_64.{name.replace('__', '_1776_', 1)}".lower()


def is_swe_smith_record(record: dict[str, Any]) -> bool:
    """A SWE-smith record: its repo is a ``swesmith/`` mirror (the id form alone is not enough)."""
    return str(record.get("repo", "")).startswith("swesmith/")


def source_of(record: dict[str, Any], source: str | None = None) -> str | None:
    """The training set a record comes from: its own ``source`` field, the loader's, or SWE-smith by its repo."""
    if record.get("source") in TRAINING_SETS:
        return str(record["source"])
    if source is not None:
        return source
    return SWE_SMITH if is_swe_smith_record(record) else None


def _as_list(value: Any) -> list[str] | None:
    """A test list as records hold it (a list or a JSON string); None when it is neither (from_record says why)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            return None
    return list(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def _swap_paths(header: str) -> str:
    """``diff --git a/X b/Y`` → ``diff --git a/Y b/X``."""
    rest = header[len("diff --git ") :].rstrip("\r\n")
    half = (len(rest) - 1) // 2
    if len(rest) % 2 and rest[half] == " " and rest[:half][2:] == rest[half + 1 :][2:]:
        old, new = rest[:half], rest[half + 1 :]
    else:  # a rename: the two paths differ
        sep = ' "b/' if ' "b/' in rest else " b/"
        old, _, new = rest.partition(sep)
        new = sep[1:] + new
    return f"diff --git {_side(new, 'a/')} {_side(old, 'b/')}" + header[len(header.rstrip("\r\n")) :]


def _mark(line: str) -> str:
    return " " if line in ("\n", "\r\n") else line[:1]  # an empty line: context whose space was lost


def _reverse_hunk(body: list[str]) -> list[str]:
    """A hunk's lines with ``+``/``-`` swapped and each change's removals before its additions (git's order); a
    "No newline at end of file" marker stays with its line."""
    done: list[list[str]] = []
    minus: list[list[str]] = []
    plus: list[list[str]] = []
    last: list[str] | None = None
    for line in body:
        if line.startswith("\\") and last is not None:
            last.append(line)
            continue
        mark = _mark(line)
        last = [{"+": "-", "-": "+"}[mark] + line[1:]] if mark in ("+", "-") else [line]
        if mark == "+":
            minus.append(last)
        elif mark == "-":
            plus.append(last)
        else:
            done += [*minus, *plus, last]
            minus, plus = [], []
    return [line for group in [*done, *minus, *plus] for line in group]


def _side(path: str, prefix: str) -> str:
    """A diff path moved to the other side (``a/x`` → ``b/x``, ``"a/t\\303st"`` → ``"b/t\\303st"``); ``/dev/null``
    stays."""
    if path.startswith("/dev/null"):
        return path
    return f'"{prefix}{path[3:]}' if path.startswith('"') else prefix + path[2:]


def reverse_patch(patch: str, where: str = "<patch>") -> str:
    """The diff that undoes ``patch`` (``git apply -R``'s, as text): sides, modes, renames and hunks swapped.

    Raises ``TaskError`` (naming ``where``) for what has no text reverse here: binary sections and copies.
    """
    out: list[str] = []
    lines = patch.splitlines(keepends=True)
    pairs = {"old mode ": "new mode ", "rename from ": "rename to ", "--- ": "+++ "}
    kinds = {"new file mode ": "deleted file mode ", "deleted file mode ": "new file mode "}
    pending: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if match := _HUNK.match(line):
            old, new, rest = match.groups()
            old_left, new_left = (int(r.split(",")[1]) if "," in r else 1 for r in (old, new))
            body = []
            while i < len(lines) and (old_left > 0 or new_left > 0 or lines[i].startswith("\\")):
                body.append(lines[i])
                old_left -= _mark(lines[i]) in (" ", "-")
                new_left -= _mark(lines[i]) in (" ", "+")
                i += 1
            out += [f"@@ -{new} +{old} @@{rest}", *_reverse_hunk(body)]
        elif line.startswith("diff --git "):
            out.append(_swap_paths(line))
        elif line.startswith(("GIT binary patch", "Binary files ", "copy from ", "copy to ")):
            raise TaskError(f"{where}: cannot reverse the patch: {line.strip()[:60]!r} has no text reverse")
        elif key := next((k for k in kinds if line.startswith(k)), None):
            out.append(kinds[key] + line[len(key) :])
        elif key := next((k for k in pairs if line.startswith(k)), None):
            pending[key] = line[len(key) :]
        elif (key := next((k for k, v in pairs.items() if line.startswith(v)), None)) and key in pending:
            first, second = pending.pop(key), line[len(pairs[key]) :]
            if key == "--- ":
                first, second = _side(first, "b/"), _side(second, "a/")
            out += [key + second, pairs[key] + first]
        elif line.startswith("index "):
            body = line[6:].rstrip("\r\n")
            ids, sep, mode = body.partition(" ")
            a, _, b = ids.partition("..")
            out.append(f"index {b}..{a}{sep}{mode}" + line[6 + len(body) :])
        else:
            out.append(line)
    return "".join(out)


def _branch_commit(record: dict[str, Any]) -> str:
    """The commit of the branch named by the instance id in the record's own ``repo_dir``; else that name."""
    branch, repo_dir = record["instance_id"], record.get("repo_dir")
    if not repo_dir:
        return branch
    proc = subprocess.run(
        ["git", "-C", str(repo_dir), "rev-parse", "--verify", "-q", f"{branch}^{{commit}}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stdout.strip() if proc.returncode == 0 else branch


def _from_swe_smith(record: dict[str, Any], where: str) -> dict[str, Any]:
    for name in ("instance_id", "repo", "patch"):
        if not isinstance(record.get(name), str):
            raise TaskError(f"{where}: SWE-smith record: field {name!r} must be a string")
    record["bug_patch"] = record["patch"]
    record["patch"] = reverse_patch(record["patch"], where)
    record.setdefault("test_patch", "")
    if not record.get("base_commit"):
        record["base_commit"] = _branch_commit(record)
    f2p, p2p = _as_list(record.get("FAIL_TO_PASS")), _as_list(record.get("PASS_TO_PASS"))
    if f2p is not None and p2p is not None:
        files = sorted({t.split("::", 1)[0] for t in f2p})
        kept = [t for t in p2p if any(t.startswith(f) for f in files)]
        if kept != p2p:
            record["PASS_TO_PASS_all"], record["PASS_TO_PASS"] = p2p, kept
        if isinstance(record.get("env"), dict):
            record["env"] = {"test_files": files, **record["env"]}
    record.setdefault("image_name", swe_smith_image(record["repo"]))
    return record


def normalize(record: Any, source: str | None = None, where: str = "<record>") -> Any:
    """``record`` as a SWE-bench record of its training set (see the module doc); other records unchanged.

    Idempotent: a converted SWE-smith record (it has ``bug_patch``) is not converted again.
    """
    if not isinstance(record, dict) or (source := source_of(record, source)) is None:
        return record
    record = {**record, "source": source}
    if TRAINING_SETS.get(source) == "swe-smith" and "bug_patch" not in record:
        return _from_swe_smith(record, where)
    if TRAINING_SETS.get(source) == "swe-gym" and isinstance(record.get("instance_id"), str):
        record.setdefault("image_name", swe_gym_image(record["instance_id"]))
    return record


def is_commit(value: str) -> bool:
    """Whether ``value`` is a full commit id (a SWE-smith record without ``base_commit`` names its branch)."""
    return bool(_SHA.match(value))
