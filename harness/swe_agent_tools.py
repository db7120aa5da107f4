#!/usr/bin/env python3
"""SWE-agent's windowed file commands, one executable each in harness/ (Python >= 3.9, stdlib only).

    open <path> [<line>]          goto <line>          scroll_up          scroll_down
    create <path>                 edit <start>:<end> <<'end_of_edit' ... end_of_edit   (replacement on stdin)
    search_dir <term> [<dir>]     search_file <term> [<file>]     find_file <name> [<dir>]

Outputs follow SWE-agent 0.x (``[File: /abs (N lines total)]``, a numbered window of 100 lines,
``(N more lines above)``). The open file and the window centre live in ``$SWE_SRL_TOOL_STATE/state.json``
(default ``/tmp/.swe_srl_tools``). ``edit`` of a ``.py`` file that compiled before and not after is reverted,
as SWE-agent's linting edit does. Usage errors print on stdout and exit 1.
"""

import json
import os
import subprocess
import sys

WINDOW = 100
OVERLAP = 2
NO_FILE = "No file open. Use the open command first."
LINT_FAILED = """\
Your proposed edit has introduced new syntax error(s). Please read this error message \
carefully and then retry editing the file.

ERRORS:
- E999 {error}

This is how your edit would have looked if applied
{rule}
{new}
{rule}

This is the original code before your edit
{rule}
{old}
{rule}
Your changes have NOT been applied. Please fix your edit command and try again.
You either need to 1) Specify the correct start/end line arguments or 2) Correct your edit code.
DO NOT re-run the same failed edit command. Running it again will lead to the same error."""


class ToolError(Exception):
    """A message for the model; printed on stdout, exit status 1."""


def state_path():
    return os.path.join(os.environ.get("SWE_SRL_TOOL_STATE") or "/tmp/.swe_srl_tools", "state.json")


def load_state():
    try:
        with open(state_path(), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def save_state(path, line):
    target = state_path()
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump({"file": path, "line": line}, handle)
    os.replace(tmp, target)


def read_lines(path):
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        text = handle.read()
    lines = text.split("\n")
    if text.endswith("\n") or not text:
        lines.pop()
    return lines, text.endswith("\n") or not text


def write_lines(path, lines, final_newline):
    text = "\n".join(lines) + ("\n" if lines and final_newline else "")
    with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as handle:
        handle.write(text)


def constrain(line, total):
    return max(min(line, total - WINDOW // 2), WINDOW // 2)


def window(path, line, lines=None):
    """SWE-agent's ``_print``: the 100-line window centred on ``line``."""
    if lines is None:
        lines = read_lines(path)[0]
    total = len(lines)
    above = max(0, line - WINDOW // 2)
    below = max(0, total - line - WINDOW // 2)
    first, last = max(1, line + WINDOW // 2 - WINDOW + 1), min(total, line + WINDOW // 2)
    out = [f"[File: {path} ({total} lines total)]"]
    if above:
        out.append(f"({above} more lines above)")
    out += [f"{n}:{lines[n - 1]}" for n in range(first, last + 1)]
    if below:
        out.append(f"({below} more lines below)")
    return "\n".join(out)


def show(path, line):
    total = len(read_lines(path)[0])
    line = constrain(line, total)
    save_state(path, line)
    return window(path, line)


def current_file():
    path = load_state().get("file")
    if not path:
        raise ToolError(NO_FILE)
    if not os.path.isfile(path):
        raise ToolError(f"Error: the open file {path} no longer exists. Use the open command again.")
    return path


def as_int(text, name, usage):
    try:
        return int(text)
    except ValueError:
        raise ToolError(f"{usage}\nError: {name} must be a number") from None


def cmd_open(args):
    usage = 'Usage: open "<file>" [<line_number>]'
    if not args or len(args) > 2:
        raise ToolError(usage)
    path = args[0]
    if os.path.isdir(path):
        raise ToolError(
            f"Error: {path} is a directory. You can only open files. Use cd or ls to navigate directories."
        )
    if not os.path.isfile(path):
        raise ToolError(f"File {path} not found")
    path = os.path.realpath(path)
    if len(args) == 1:
        return show(path, WINDOW // 2)
    line, total, notes = as_int(args[1], "<line_number>", usage), len(read_lines(path)[0]), []
    if line > total:
        notes += [
            f"Warning: <line_number> ({line}) is greater than the number of lines in the file ({total})",
            f"Warning: Setting <line_number> to {total}",
        ]
        line = total
    elif line < 1:
        notes += [f"Warning: <line_number> ({line}) is less than 1", "Warning: Setting <line_number> to 1"]
        line = 1
    return "\n".join(notes + [show(path, max(line + WINDOW // 2 - WINDOW // 6, 1))])


def cmd_goto(args):
    if len(args) != 1:
        raise ToolError("Usage: goto <line>")
    path = current_file()
    line, total = as_int(args[0], "<line>", "Usage: goto <line>"), len(read_lines(path)[0])
    if line > total:
        raise ToolError(f"Error: <line> must be less than or equal to {total}")
    return show(path, max(line + WINDOW // 2 - WINDOW // 6, 1))


def cmd_scroll(step):
    def run(args):
        path = current_file()
        return show(path, int(load_state().get("line", WINDOW // 2)) + step)

    return run


def cmd_create(args):
    if len(args) != 1:
        raise ToolError("Usage: create <filename>")
    path = args[0]
    if os.path.exists(path):
        return f"Error: File '{path}' already exists.\n" + cmd_open([path])
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n")
    return cmd_open([path])


def syntax_error(path, lines, final_newline):
    if not path.endswith(".py"):
        return None
    try:
        compile("\n".join(lines) + ("\n" if final_newline else ""), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}"
    return None


def cmd_edit(args):
    usage = "Usage: edit <start_line>:<end_line>"
    if len(args) != 1 or args[0].count(":") != 1:
        raise ToolError(usage)
    path = current_file()
    parts = zip(args[0].split(":"), ("start_line", "end_line"))  # noqa: B905 (Python >= 3.9: zip has no strict)
    start, end = (as_int(v, name, usage) for v, name in parts)
    if start < 1 or end < start - 1:
        raise ToolError(
            f"{usage}\nError: need 1 <= start_line and start_line - 1 <= end_line, got {start}:{end}"
        )
    if os.isatty(0) or _is_devnull():
        raise ToolError(
            f"{usage}\nError: edit reads the replacement lines from stdin: "
            f"edit {start}:{end} <<'end_of_edit'\\n<lines>\\nend_of_edit (no lines: < <(:) instead)"
        )
    replacement = sys.stdin.read().split("\n")
    if replacement[-1] == "":
        replacement.pop()
    old, final_newline = read_lines(path)
    new = old[: start - 1] + replacement + old[end:]
    line = constrain(start - 1, len(new))
    error = syntax_error(path, new, final_newline)
    if error and not syntax_error(path, old, final_newline):
        window_new, window_old = window(path, line, new), window(path, line, old)
        return None, LINT_FAILED.format(error=error, new=window_new, old=window_old, rule="-" * 49)
    write_lines(path, new, final_newline)
    return show(path, start - 1) + (
        "\nFile updated. Please review the changes and make sure they are correct (correct indentation, no "
        "duplicate lines, etc). Edit the file again if necessary."
    )


def _is_devnull():
    try:
        return os.path.samestat(os.fstat(0), os.stat(os.devnull))
    except OSError:
        return True


def grep(args):
    proc = subprocess.run(["grep", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    return proc.stdout.decode("utf-8", errors="replace").splitlines()


def matches_report(count, term, where, body):
    """SWE-agent's search output: a header with the count, one line per match (or file), a closing line."""
    return "\n".join(
        [f'Found {count} matches for "{term}" in {where}:', *body, f'End of matches for "{term}" in {where}']
    )


def cmd_search_dir(args):
    if not args or len(args) > 2:
        raise ToolError("Usage: search_dir <search_term> [<dir>]")
    term, folder = args[0], args[1] if len(args) == 2 else "./"
    if not os.path.isdir(folder):
        raise ToolError(f"Directory {folder} not found")
    folder = os.path.realpath(folder)
    paths = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        paths += [os.path.join(root, f) for f in sorted(files) if not f.startswith(".")]
    counts = {}
    for i in range(0, len(paths), 500):
        for hit in grep(["-nIH", "--", term, *paths[i : i + 500]]):
            name = hit.split(":", 1)[0]
            counts[name] = counts.get(name, 0) + 1
    if not counts:
        return f'No matches found for "{term}" in {folder}'
    if len(counts) > 100:
        return f'More than {len(counts)} files matched for "{term}" in {folder}. Please narrow your search.'
    body = [f"{name} ({n} matches)" for name, n in sorted(counts.items())]
    return matches_report(sum(counts.values()), term, folder, body)


def cmd_search_file(args):
    usage = "Usage: search_file <search_term> [<file>]"
    if not args or len(args) > 2:
        raise ToolError(usage)
    if len(args) == 2 and not os.path.isfile(args[1]):
        raise ToolError(f"{usage}\nError: File name {args[1]} not found. Please provide a valid file name.")
    term, path = args[0], os.path.realpath(args[1]) if len(args) == 2 else current_file()
    hits = [hit.split(":", 1) for hit in grep(["-n", "--", term, path])]
    if not hits:
        return f'No matches found for "{term}" in {path}'
    if len(hits) > 100:
        return f'More than {len(hits)} lines matched for "{term}" in {path}. Please narrow your search.'
    return matches_report(len(hits), term, path, [f"Line {n}:{text}" for n, text in hits])


def cmd_find_file(args):
    if not args or len(args) > 2:
        raise ToolError("Usage: find_file <file_name> [<dir>]")
    name, folder = args[0], args[1] if len(args) == 2 else "./"
    if not os.path.isdir(folder):
        raise ToolError(f"Directory {folder} not found")
    folder = os.path.realpath(folder)
    proc = subprocess.run(
        ["find", folder, "-type", "f", "-name", name],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    matches = proc.stdout.decode("utf-8", errors="replace").splitlines()
    if not matches:
        return f'No matches found for "{name}" in {folder}'
    return "\n".join([f'Found {len(matches)} matches for "{name}" in {folder}:', *matches])


COMMANDS = {
    "open": cmd_open,
    "goto": cmd_goto,
    "scroll_up": cmd_scroll(-(WINDOW - OVERLAP)),
    "scroll_down": cmd_scroll(WINDOW - OVERLAP),
    "create": cmd_create,
    "edit": cmd_edit,
    "search_dir": cmd_search_dir,
    "search_file": cmd_search_file,
    "find_file": cmd_find_file,
}


def main(command, argv=None):
    """Run ``command`` with ``argv`` (default ``sys.argv[1:]``); print its output; return the exit status."""
    try:
        output = COMMANDS[command](sys.argv[1:] if argv is None else argv)
    except ToolError as exc:
        output = (None, str(exc))
    except OSError as exc:
        output = (None, f"Error: {exc}")
    failed = isinstance(output, tuple)
    text = output[1] if failed else output
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.stdout.write("usage: swe_agent_tools.py {" + "|".join(COMMANDS) + "} [ARGS...]\n")
        sys.exit(1)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
