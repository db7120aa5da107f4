"""The worktree's diff against the base commit, computed in the container by one bash script (no ``docker exec``).

Two modes over one script: the graded **text** patch (SWE-bench's text-diff handling: binary files and files over
``Limits.patch_file_bytes`` are left out, each with a note) and the **binary**-safe diff (``git diff --binary``) that
expert state snapshots restore from. Both use a temporary index, so the repo's own index is untouched, and
override the repo config a policy could have changed (external diff drivers, prefixes, colour).

What ``git diff`` leaves out is left out silently: files the repo ignores (``.gitignore``, ``.git/info/exclude``),
such as compiled extensions built in place, caches and build outputs, whatever their size. Only a large file git
would add (tracked and changed, or untracked and not ignored) gets a note, as does a repository the policy made with
``git init`` and no commit, which ``git add`` cannot add.

When the episode's ``.git`` is gone or no longer holds the base commit (``rm -rf .git && git init``), the sandbox
computes the diff against a pristine copy: a fresh container of the same image (whose ``/testbed/.git`` is the
image's), into which the episode's worktree is streamed (``DockerSandbox``; :data:`PRISTINE_DIR`).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Protocol

from swe_srl.errors import SandboxError
from swe_srl.infra.sandbox.base import Patch, SandboxSpec

if TYPE_CHECKING:
    from swe_srl.infra.sandbox.shell import Reply

SEPARATOR = b"__SWESRL_DIFF__\n"
NO_WORKDIR, NO_BASE = 3, 4
"""Exit codes of the script: the workdir is gone (nothing to diff), the repo lacks the base commit."""
PRISTINE_DIR = "/tmp/.swe-srl-worktree"
"""Where the episode's worktree is streamed in the pristine copy's container."""


class ScriptShell(Protocol):
    """What a diff needs of a started sandbox (``DockerSandbox`` provides it)."""

    spec: SandboxSpec

    def control_script(self, script: str, limit: int, timeout: float) -> Reply | None:
        """Run ``script`` beside the policy's session; None when it ran past ``timeout`` (it was killed)."""
        ...

    def kill_background(self) -> None:
        """Kill what the policy's commands left running."""
        ...


def diff_script(base: str, workdir: str, git_dir: str, *, binary: bool, file_cap: int) -> str:
    """A subshell printing ``LEFT-OUT\\t<why>\\t<path>`` lines, the separator, then the diff."""
    b, w, g = shlex.quote(base), shlex.quote(workdir), shlex.quote(git_dir)
    lines = [
        f"cd {w} 2>/dev/null || exit {NO_WORKDIR}",
        f"export GIT_DIR={g} GIT_WORK_TREE={w} GIT_CONFIG_NOSYSTEM=1 GIT_OPTIONAL_LOCKS=0",
        f"git cat-file -e {b}^{{commit}} 2>/dev/null || exit {NO_BASE}",
        "t=$(mktemp) || exit 5; trap 'rm -f \"$t\"' EXIT",
        'cp -p "$GIT_DIR/index" "$t" 2>/dev/null || rm -f "$t"; export GIT_INDEX_FILE="$t"',
        "ex=(); big=()",
    ]
    if not binary:
        # Only the large files git would add are excluded: an exclude pathspec naming an ignored file makes
        # `git add` fail ("The following paths are ignored"), and git leaves ignored files out anyway.
        lines += [
            "while IFS= read -r -d '' f; do big+=(\":(literal)${f#./}\"); "
            f"done < <(find . -path ./.git -prune -o -type f -size +{file_cap}c -print0)",
            "((${#big[@]})) && while IFS= read -r -d '' f; do ex+=(\":(exclude,literal)$f\"); "
            f"printf 'LEFT-OUT\\tover {file_cap} bytes\\t%s\\n' \"$f\"; "
            'done < <(git ls-files -z -m -o --exclude-standard -- "${big[@]}")',
        ]
    # A repository the policy made with `git init` and no commit cannot be added (git add fails): left out, noted.
    lines += [
        "while IFS= read -r -d '' d; do case $d in */) env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE "
        'git -C "$d" rev-parse -q --verify HEAD >/dev/null 2>&1 && continue; ex+=(":(exclude,literal)${d%/}"); '
        "printf 'LEFT-OUT\\ta git repository without a commit\\t%s\\n' \"${d%/}\";; esac; "
        "done < <(git ls-files -z -o --exclude-standard)",
        'err=$(git add -A -- . "${ex[@]}" 2>&1 >/dev/null) || { printf \'git add: %s\\n\' "$err"; exit 6; }',
    ]
    if not binary:
        lines.append(
            "while IFS=$'\\t' read -r -d '' a r p; do [ \"$a\" = - ] || continue; "
            'ex+=(":(exclude,literal)$p"); printf \'LEFT-OUT\\tbinary\\t%s\\n\' "$p"; '
            f"done < <(git diff --cached --numstat --no-renames -z {b})"
        )
    flags = "--no-color --no-ext-diff --no-textconv --src-prefix=a/ --dst-prefix=b/" + (
        " --binary" if binary else ""
    )
    lines += ["printf '__SWESRL_DIFF__\\n'", f'git diff --cached {flags} {b} -- . "${{ex[@]}}" 2>&1']
    return "(\n" + "\n".join(lines) + "\n)"


def parse_output(data: bytes) -> Patch:
    """The script's output (exit 0) → the patch and its left-out notes."""
    head, sep, diff = data.partition(SEPARATOR)
    if not sep:
        raise SandboxError(f"the diff script printed no diff: {data[-800:].decode(errors='replace')}")
    notes = []
    for line in head.decode("utf-8", errors="replace").splitlines():
        if line.startswith("LEFT-OUT\t"):
            _, why, path = line.split("\t", 2)
            notes.append(f"{path} ({why})")
    return Patch(diff.decode("utf-8", errors="replace"), tuple(notes))


class RepoBroken(SandboxError):
    """The episode's repo cannot be diffed in place (``.git`` gone, base commit missing): use a pristine copy."""


def diff_in(box: ScriptShell, tree: str, git_dir: str, *, binary: bool, pristine: bool = False) -> Patch:
    """Diff ``tree`` against the base commit of ``git_dir`` in ``box``, bounded in size and time.

    In place (``pristine=False``) a repo that cannot be diffed raises ``RepoBroken``; a diff over the time or size
    budget is left out of the text patch with a note (the policy made it so) and raises for the binary diff."""
    limits = box.spec.limits
    base = box.spec.base_commit or "HEAD"
    script = diff_script(base, tree, git_dir, binary=binary, file_cap=limits.patch_file_bytes)
    for attempt in (0, 1):
        reply = box.control_script(script, limits.patch_limit_bytes + 65536, limits.patch_timeout_s)
        if reply is None:
            if binary:
                raise SandboxError(f"the diff of {tree} took over {limits.patch_timeout_s:g}s")
            return Patch("", (f"the whole diff (not computed within {limits.patch_timeout_s:g}s)",))
        code, detail = reply.exit_code, reply.data.decode("utf-8", errors="replace")[-800:]
        if code in (0, NO_WORKDIR) or pristine:
            break
        if code != NO_BASE and attempt == 0:
            box.kill_background()  # a fork bomb left running makes git fail to fork: clear it, try again
            continue
        raise RepoBroken(f"cannot diff {tree} in place (exit {code}): {detail}")
    if code == NO_WORKDIR:
        return Patch("")
    if code != 0:
        raise SandboxError(f"the diff against a pristine copy of {base} failed (exit {code}): {detail}")
    if reply.truncated:
        if binary:
            raise SandboxError(f"the binary diff of {tree} is over {limits.patch_limit_bytes} bytes")
        return Patch("", (f"the whole diff (over {limits.patch_limit_bytes} bytes)",))
    return parse_output(reply.data)
