"""The worktree's diff against the base commit, computed in the container by one bash script (no ``docker exec``).

Two modes over one script: the graded **text** patch (SWE-bench's text-diff handling: binary files and files over
``Limits.patch_file_bytes`` are left out, each with a note) and the **binary**-safe diff (``git diff --binary``) that
expert state snapshots restore from. Both use a temporary index, so the repo's own index is untouched, and
override the repo config a policy could have changed (external diff drivers, prefixes, colour).

When the episode's ``.git`` is gone or no longer holds the base commit (``rm -rf .git && git init``), the diff is
computed against a pristine copy: a fresh container of the same image (whose ``/testbed/.git`` is the image's),
into which the episode's worktree is streamed (:func:`pristine_patch`).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from swe_srl.errors import SandboxError
from swe_srl.infra.sandbox.base import Patch
from swe_srl.infra.sandbox.shell import ShellExpired

if TYPE_CHECKING:
    from swe_srl.infra.sandbox.docker import DockerSandbox

SEPARATOR = b"__SWESRL_DIFF__\n"
NO_WORKDIR, NO_BASE = 3, 4
"""Exit codes of the script: the workdir is gone (nothing to diff), the repo lacks the base commit."""
PRISTINE_DIR = "/tmp/.swe-srl-worktree"


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
        lines += [
            'while IFS= read -r -d \'\' f; do ex+=(":(exclude,literal)${f#./}"); big+=(":(literal)${f#./}"); '
            f"done < <(find . -path ./.git -prune -o -type f -size +{file_cap}c -print0)",
            '((${#big[@]})) && git ls-files -z -m -o --exclude-standard -- "${big[@]}" | '
            f"while IFS= read -r -d '' f; do printf 'LEFT-OUT\\tover {file_cap} bytes\\t%s\\n' \"$f\"; done",
        ]
    lines.append(
        'err=$(git add -A -- . "${ex[@]}" 2>&1 >/dev/null) || { printf \'git add: %s\\n\' "$err"; exit 6; }'
    )
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


def diff_in(box: DockerSandbox, tree: str, git_dir: str, *, binary: bool, pristine: bool = False) -> Patch:
    """Diff ``tree`` against the base commit of ``git_dir`` in ``box``'s control shell, bounded in size and time.

    In place (``pristine=False``) a repo that cannot be diffed raises ``RepoBroken``; a diff over the time or size
    budget is left out of the text patch with a note (the policy made it so) and raises for the binary diff."""
    limits = box.spec.limits
    base = box.spec.base_commit or "HEAD"
    script = diff_script(base, tree, git_dir, binary=binary, file_cap=limits.patch_file_bytes)
    for attempt in (0, 1):
        try:
            _, reply = box._control_command(script, limits.patch_limit_bytes + 65536, limits.patch_timeout_s)
        except ShellExpired:
            box._restart_control(kill_others=True)
            if binary:
                raise SandboxError(f"the diff of {tree} took over {limits.patch_timeout_s:g}s") from None
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


def pristine_patch(box: DockerSandbox, *, binary: bool) -> Patch:
    """The diff of ``box``'s worktree against a fresh container of its image (the base commit, untouched)."""
    workdir = box.spec.workdir.rstrip("/") or "/"
    helper = type(box)(box.spec)  # a fresh container of the same image
    try:
        helper.start()
        helper.run(f"mkdir -p {PRISTINE_DIR}")
        stream, _ = box.container.get_archive(workdir)
        helper.container.put_archive(PRISTINE_DIR, stream)
        tree = f"{PRISTINE_DIR}/{workdir.rsplit('/', 1)[-1]}"
        patch = diff_in(helper, tree, f"{workdir}/.git", binary=binary, pristine=True)
    finally:
        helper.close()
    return Patch(patch.text, patch.left_out, pristine=True)
