#!/usr/bin/env bash
# After the test process died of a signal: prints every thread's native stack from its core file (gdb), then
# removes the core. Python's own traceback is faulthandler's, printed by pytest at the crash. Never fails.
# Usage: crash_report.sh SINCE_FILE [DIR ...]   (cores newer than SINCE_FILE, looked for in the DIRs)
#        crash_report.sh --remove SINCE_FILE [DIR ...]   (only removes them: a test's child that crashed)
set -uo pipefail
report=1
if [ "$1" = --remove ]; then
  report=0
  shift
fi
since=$1
shift
cores() { find "$@" -maxdepth 1 -type f \( -name core -o -name 'core.[0-9]*' \) -newer "$since" 2>/dev/null; }
if [ "$report" = 0 ]; then
  cores "$@" | xargs -r rm -f
  exit 0
fi
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo "?")
if [[ "$pattern" == "|"* ]]; then
  echo "crash report: cores go to a program here ($pattern), not to a file" >&2
  exit 0
fi
if ! command -v gdb >/dev/null; then
  echo "crash report: no gdb on this machine (apt-get install gdb) to read the core" >&2
fi
python_bin=$(readlink -f "$(command -v python)")
found=0
while IFS= read -r core; do
  found=1
  echo "==> crash report: $core (executable $python_bin)" >&2
  if command -v gdb >/dev/null; then
    # python-gdb.py beside the interpreter (when there is one) adds each thread's Python stack.
    gdb -q -batch -iex "set auto-load safe-path /" -ex "info threads" -ex "thread apply all bt 40" \
      -ex "thread apply all py-bt" "$python_bin" "$core" 2>&1 | grep -v "^warning: Section" | tail -n 600 >&2
  fi
  rm -f "$core"
done < <(cores "$@")
[ "$found" = 1 ] || echo "crash report: no core file newer than the run in $* (core_pattern: $pattern)" >&2
exit 0
