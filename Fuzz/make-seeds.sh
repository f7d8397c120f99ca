#!/usr/bin/env bash
# Regenerates the seed corpora in Fuzz/Corpus (they are checked in; run this after a model or format change).
#   Corpus/open:      valid small stores written by fuzz-open's seed mode (ACTORSTORE_FUZZ_SEEDGEN), each as
#                     mode 0 (raw) and mode 1 (checksums fixed up), and the crafted compaction-trap file.
#   Corpus/predicate: the predicate strings of the library's tests (Tests/ActorStoreTests) and hand-written
#                     ones over the fuzz models (predicates.txt), one input each, prefixed by a selector byte.
# Needs the fuzz build (run.sh builds it): FUZZ_BUILD_PATH, default Fuzz/.build-fuzz.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
bin="${FUZZ_BUILD_PATH:-$here/.build-fuzz}/release"

rm -f "$here"/Corpus/open/store*
ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no ACTORSTORE_FUZZ_SEEDGEN="$here/Corpus/open" "$bin/fuzz-open"

# The crafted file of the outside report (/work/shared/repro/compaction-trap), if at hand: its libFuzzer
# input (mode 1) and the file itself as a mode-0 input.
trap_dir="${ACTORSTORE_REPRO:-/work/shared/repro}/compaction-trap"
if [[ -f "$trap_dir/crafted.realm" ]]; then
    cp "$trap_dir/fuzz-input.bin" "$here/Corpus/open/crafted-compaction-trap-mode1"
    { printf '\x00'; cat "$trap_dir/crafted.realm"; } > "$here/Corpus/open/crafted-compaction-trap-mode0"
    chmod 644 "$here"/Corpus/open/crafted-*
fi

rm -f "$here"/Corpus/predicate/*
mkdir -p "$here/Corpus/predicate"
{
    grep -v '^#' "$here/predicates.txt"
    # String literals passed to the parser and to filter in the tests; interpolations and escapes skipped.
    grep -rhoE '(parsed|parseError|expectError|filter)\("([^"\\]|\\.)*"' "$root/Tests/ActorStoreTests" \
        | sed -E 's/^[a-zA-Z]+\("//; s/"$//' | grep -v '\\' | sort -u
} | awk 'length($0) > 0 && !seen[$0]++' | {
    i=0
    while IFS= read -r line; do
        # Selector: the class (bits 0-1), live (bit 2), key path (bit 3) and fixed arguments (bits 4-7) vary.
        printf "\\x$(printf '%02x' $(( (i * 37 + 4) % 256 )))%s" "$line" > "$here/Corpus/predicate/$(printf 'p%03d' "$i")"
        i=$((i + 1))
    done
    echo "wrote $i predicate seeds"
}
