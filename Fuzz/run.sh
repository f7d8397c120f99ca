#!/usr/bin/env bash
# Builds the fuzz targets (libFuzzer + AddressSanitizer, release) and runs each for a bounded time or number
# of executions. Exits non-zero when a run found a crash, a timeout or an out-of-memory, and prints the
# inputs (Fuzz/findings/...). See Fuzz/README.md.
#
#   Fuzz/run.sh [--ci]                  short: 45 s per target (the default)
#   Fuzz/run.sh --long                  1M executions of fuzz-open, 5M of fuzz-predicate (or ACTORSTORE_LONG=1)
#   Fuzz/run.sh --time 600              each target for 600 s
#   Fuzz/run.sh --runs 100000           each target for 100000 executions
#   Fuzz/run.sh --only fuzz-open        one target (fuzz-open or fuzz-predicate)
#   Fuzz/run.sh --no-build              use the last build
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build_path="${FUZZ_BUILD_PATH:-$here/.build-fuzz}"
bin="$build_path/release"
mode=ci
[[ "${ACTORSTORE_LONG:-0}" == 1 ]] && mode=long
seconds=""
runs=""
only=""
build=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --ci) mode=ci ;;
        --long) mode=long ;;
        --time) seconds="$2"; mode=custom; shift ;;
        --runs) runs="$2"; mode=custom; shift ;;
        --only) only="$2"; shift ;;
        --no-build) build=0 ;;
        -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

started=$(date +%s)
if [[ $build == 1 ]]; then
    echo "== build (release, -sanitize=fuzzer,address)"
    # --sanitize=fuzzer links libFuzzer (which provides main) into the executables; -Xswiftc adds ASan and
    # the fuzzer's coverage instrumentation to every module, the library's included. lld: gold warns about
    # an ASan symbol it cannot export.
    swift build -c release --package-path "$here" --build-path "$build_path" \
        --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld 2>&1 \
        | grep -v '^\[' || true
    [[ -x "$bin/fuzz-open" && -x "$bin/fuzz-predicate" ]] || { echo "run.sh: build failed" >&2; exit 2; }
    echo "   build: $(($(date +%s) - started)) s"
fi

# Leaks are not what these targets look for (and a bounded one, the key-path probes of ObjectSchemaInfo,
# shows up in the first inputs). The Swift runtime's backtracer would symbolicate for minutes before
# libFuzzer saw the crash: off, libFuzzer prints the stack and saves the input.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
export SWIFT_BACKTRACE=enable=no

stamp=$(date +%Y%m%d-%H%M%S)
status=0
summary=()

# One target: fuzz $1 with seed corpus $2 for the bound of this mode; extra libFuzzer flags after.
fuzz() {
    local target="$1" seeds="$2" long_runs="$3" ci_time="$4"
    shift 4
    local out="$here/findings/$target-$stamp"
    local corpus="$build_path/corpus/$target"
    mkdir -p "$out" "$corpus"
    local bound
    case "$mode" in
        ci) bound="-max_total_time=$ci_time" ;;
        long) bound="-runs=$long_runs" ;;
        custom) bound="${runs:+-runs=$runs} ${seconds:+-max_total_time=$seconds}" ;;
    esac
    echo "== $target ($bound); log: $out/log"
    local t0
    t0=$(date +%s)
    # -fork=1: one fuzzing process at a time (the machine has two cores), restarted after a crash so that
    # the run goes on (a known crash in the seeds must not stop it); every crashing input is kept.
    # $corpus collects new inputs across runs; the checked-in seeds are only read.
    # shellcheck disable=SC2086
    "$bin/$target" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -rss_limit_mb=4096 \
        -artifact_prefix="$out/" -print_final_stats=1 $bound "$@" "$corpus" "$seeds" >"$out/log" 2>&1
    local rc=$?
    local elapsed=$(($(date +%s) - t0))
    [[ $elapsed -gt 0 ]] || elapsed=1
    local total
    total=$(grep -oE '^#[0-9]+' "$out/log" | tail -1 | tr -d '#')
    total=${total:-0}
    local findings=()
    for f in "$out"/crash-* "$out"/timeout-* "$out"/oom-*; do [[ -e "$f" ]] && findings+=("$f"); done
    local line="$target: $total runs in $elapsed s, $((total / elapsed)) exec/s, ${#findings[@]} finding(s)"
    [[ $rc == 0 ]] || line="$line, libFuzzer exit code $rc"
    summary+=("$line")
    if [[ ${#findings[@]} -gt 0 || $rc != 0 ]]; then status=1; fi
    # Each finding once more, alone, for its first frame in the project's sources (at most 20).
    local shown=0
    for f in "${findings[@]}"; do
        if [[ $shown -ge 20 ]]; then summary+=("  ... $((${#findings[@]} - 20)) more in $out"); break; fi
        local trace reason frame
        trace=$(timeout 120 "$bin/$target" -runs=1 "$f" 2>&1)
        reason=$(grep -m1 -oE 'Swift runtime failure: [^/]*[^/ ]|Fatal error: .*' <<<"$trace" \
            || grep -m1 -oE 'ERROR: AddressSanitizer: [a-z-]+|ERROR: libFuzzer: [a-z -]+' <<<"$trace")
        frame=$(grep -m1 -oE '/(Sources|Fuzz/Sources)/[^ ]+:[0-9]+' <<<"$(grep -v 'Swift runtime failure' <<<"$trace")")
        summary+=("  $f")
        summary+=("    ${reason:-?} at ${frame:-?}")
        shown=$((shown + 1))
    done
    [[ ${#findings[@]} -gt 0 ]] || rm -f "$out"/crash-* 2>/dev/null
}

if [[ -z "$only" || "$only" == fuzz-open ]]; then
    fuzz fuzz-open "$here/Corpus/open" 1000000 50 -timeout=60
fi
if [[ -z "$only" || "$only" == fuzz-predicate ]]; then
    fuzz fuzz-predicate "$here/Corpus/predicate" 5000000 40 -timeout=20 -max_len=1024 -dict="$here/predicate.dict"
fi

# The scratch directories of fuzz-open processes that crashed (a normal exit removes its own).
for d in /dev/shm/actorstore-fuzz-open-* "${TMPDIR:-/tmp}"/actorstore-fuzz-open-*; do
    [[ -d "$d" ]] && ! kill -0 "${d##*-}" 2>/dev/null && rm -rf "$d"
done

echo
echo "== summary ($mode, $(($(date +%s) - started)) s in total)"
for line in "${summary[@]}"; do echo "$line"; done
exit $status
