#!/usr/bin/env bash
# Compile-time isolation checks: the compiler, not a run-time check, must keep live objects inside their
# Realm actor. Each file in Tests/CompileChecks is compiled on its own against the ActorStore module:
#
#   pass_*.swift  must compile, without warnings.
#   fail_*.swift  must fail, with exactly the errors announced by its comments: a line
#                     // expected-error-contains: <phrase>
#                 expects an error containing <phrase> on the next line of code, and any error elsewhere
#                 (a renamed API, a typo) is a mismatch too, so a file cannot fail for the wrong reason.
#
# The files are compiled to SIL and discarded (`-emit-sil -o /dev/null`): no code generation, but unlike
# `-typecheck` it runs the region-based isolation checks that report `sending` violations.
#
# Usage: .ci/compile-checks.sh            (uses .build, like `swift build`)
#        SCRATCH=/tmp/other-build .ci/compile-checks.sh      (another scratch path)
#        CHECKS_DIR=path/to/files .ci/compile-checks.sh      (other files, to test this script)
# Prints one line per file; exits non-zero on any mismatch.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch="${SCRATCH:-.build}"
swiftc="${SWIFTC:-swiftc}"
checks_dir="${CHECKS_DIR:-Tests/CompileChecks}"

echo "building the ActorStore module (scratch path: $scratch)"
build_log="$(mktemp)"
workdir="$(mktemp -d)"
trap 'rm -rf "$build_log" "$workdir"' EXIT
if ! swift build --scratch-path "$scratch" --target ActorStore >"$build_log" 2>&1; then
    cat "$build_log"
    echo "compile checks: building the ActorStore module failed" >&2
    exit 1
fi
bin_path="$(swift build --scratch-path "$scratch" --show-bin-path)"

# SwiftPM puts the .swiftmodule files in <bin>/Modules (older versions: <bin> itself).
include_flags=()
for dir in "$bin_path/Modules" "$bin_path"; do
    if [ -e "$dir/ActorStore.swiftmodule" ]; then include_flags+=(-I "$dir"); fi
done
if [ ${#include_flags[@]} -eq 0 ]; then
    echo "compile checks: no ActorStore.swiftmodule under $bin_path" >&2
    exit 1
fi

# Prints "<line>\t<phrase>" for each expectation: the phrase applies to the next line that is neither
# blank nor a comment.
expectations() {
    awk '
        /^[ \t]*\/\/[ \t]*expected-error-contains:/ {
            phrase = $0
            sub(/^[ \t]*\/\/[ \t]*expected-error-contains:[ \t]*/, "", phrase)
            sub(/[ \t]+$/, "", phrase)
            pending[++count] = phrase
            next
        }
        /^[ \t]*$/ || /^[ \t]*\/\// { next }
        count > 0 {
            for (i = 1; i <= count; i++) printf "%d\t%s\n", NR, pending[i]
            count = 0
        }
        END { for (i = 1; i <= count; i++) printf "0\t%s\n", pending[i] }
    ' "$1"
}

failures=0
checked=0
shopt -s nullglob
for file in "$checks_dir"/*.swift; do
    name="$(basename "$file")"
    checked=$((checked + 1))
    output="$workdir/$name.log"
    flags=(-emit-sil -o /dev/null -swift-version 6 -parse-as-library -module-name CompileCheck
        -diagnostic-style llvm "${include_flags[@]}")
    case "$name" in
        pass_*) flags+=(-warnings-as-errors) ;;
        fail_*) ;;
        *)
            echo "MISMATCH  $name: name it pass_*.swift or fail_*.swift"
            failures=$((failures + 1))
            continue
            ;;
    esac
    # Compile from the checks directory so diagnostics start with the bare file name.
    status=0
    (cd "$checks_dir" && "$swiftc" "${flags[@]}" "$name") >"$output" 2>&1 || status=$?
    expected="$(expectations "$file")"
    # Error lines as "<line>\t<message>"; errors without a location in this file get line 0.
    errors="$(awk -v name="$name" '
        index($0, name ":") == 1 && $0 ~ /: error: / {
            rest = substr($0, length(name) + 2)
            split(rest, parts, ":")
            message = rest
            sub(/^[0-9]+:[0-9]+: error: /, "", message)
            printf "%d\t%s\n", parts[1], message
            next
        }
        /(^|: )error: / { printf "0\t%s\n", $0 }
    ' "$output")"

    problems=()
    if [[ "$name" == pass_* ]]; then
        [ -z "$expected" ] || problems+=("a pass_ file must not contain expected-error-contains comments")
        [ "$status" -eq 0 ] || problems+=("expected to compile, but it did not")
    else
        [ -n "$expected" ] || problems+=("a fail_ file needs at least one expected-error-contains comment")
        [ "$status" -ne 0 ] || problems+=("expected to fail, but it compiled")
        while IFS=$'\t' read -r line phrase; do
            [ -n "$line" ] || continue
            if [ "$line" -eq 0 ]; then
                problems+=("the comment expecting \"$phrase\" is not followed by a line of code")
                continue
            fi
            found=0
            while IFS=$'\t' read -r error_line message; do
                if [ "$error_line" = "$line" ] && [[ "$message" == *"$phrase"* ]]; then found=1; fi
            done <<<"$errors"
            [ "$found" -eq 1 ] || problems+=("line $line: no error containing \"$phrase\"")
        done <<<"$expected"
        while IFS=$'\t' read -r error_line message; do
            [ -n "$error_line" ] || continue
            if ! cut -f1 <<<"$expected" | grep -qx "$error_line"; then
                problems+=("unexpected error at line $error_line: $message")
            fi
        done <<<"$errors"
    fi

    if [ ${#problems[@]} -eq 0 ]; then
        if [[ "$name" == pass_* ]]; then
            echo "ok        $name compiles"
        else
            echo "ok        $name fails as expected ($(grep -c . <<<"$expected") error(s))"
        fi
    else
        failures=$((failures + 1))
        echo "MISMATCH  $name"
        for problem in "${problems[@]}"; do echo "          - $problem"; done
        echo "          compiler output:"
        sed 's/^/          | /' "$output"
    fi
done

if [ "$checked" -eq 0 ]; then
    echo "compile checks: no files in $checks_dir" >&2
    exit 1
fi
if [ "$failures" -ne 0 ]; then
    echo "compile checks: $failures of $checked file(s) did not behave as expected" >&2
    exit 1
fi
echo "compile checks: all $checked file(s) behaved as expected"
