#!/usr/bin/env bash
# Runs a test command with a time limit, so that a hung test fails CI in minutes, with a diagnosis,
# instead of holding it until the runner's limit.
#
#   .ci/watchdog.sh SECONDS -- swift test [arguments...]
#
# The command's output goes to standard output as usual and is kept in a file. If the command is still
# running after SECONDS, the script prints the Swift Testing tests that started and never finished, the
# stacks of every thread of the test process (when gdb is installed), and the process tree; then it kills
# the command and fails.
set -uo pipefail

limit="$1"
shift
[ "${1:-}" = "--" ] && shift

log="$(mktemp -t watchdog.XXXXXX)"
# setsid: the command and everything it starts form one process group, killed together on a hang.
setsid "$@" > >(tee "$log") 2>&1 &
pid=$!

waited=0
while kill -0 "$pid" 2> /dev/null; do
    if [ "$waited" -ge "$limit" ]; then
        echo
        echo "== watchdog: '$*' still running after ${limit} s"
        echo "== tests started and not finished:"
        python3 - "$log" << 'EOF'
import re, sys
started, ended = {}, set()
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^\S+ Test (.+?) started\.$", line.strip())
    if m:
        started[m.group(1)] = line.strip()
        continue
    m = re.match(r"^\S+ Test (.+?) (passed|failed|skipped|recorded)", line.strip())
    if m:
        ended.add(m.group(1))
        ended.add(re.sub(r" with \d+ test cases?$", "", m.group(1)))
for name in started:
    if name not in ended:
        print("   ", name)
EOF
        for test in $(pgrep -g "$pid" -f '\.xctest' || true); do
            echo "== process $test: $(tr '\0' ' ' < "/proc/$test/cmdline" 2> /dev/null)"
            if command -v gdb > /dev/null; then
                gdb -p "$test" -batch -ex "thread apply all bt 25" 2>&1 | grep -v -e "^\[New LWP" -e "^During symbol reading" -e "^warning:" | head -600
            fi
        done
        echo "== process tree:"
        ps -eo pid,pgid,ppid,stat,etime,args --forest | awk -v group="$pid" '$2 == group' | cut -c 1-200
        kill -KILL -- "-$pid" 2> /dev/null || kill -KILL "$pid" 2> /dev/null
        wait "$pid" 2> /dev/null
        rm -f "$log"
        exit 124
    fi
    sleep 5
    waited=$((waited + 5))
done
wait "$pid"
status=$?
rm -f "$log"
exit "$status"
