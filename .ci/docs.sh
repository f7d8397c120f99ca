#!/usr/bin/env bash
# Builds the API documentation: the DocC catalog in the ActorStore target (Sources/ActorStore/ActorStore.docc)
# together with the module's symbol graph, so every `///` comment is rendered and every ``Symbol`` link is
# checked. Warnings are errors. No package dependency (no swift-docc-plugin): the symbol graph is extracted
# from the module `swift build` already made, with the toolchain's `swift symbolgraph-extract`.
#
#   .ci/docs.sh                 # check only (output in a temporary directory)
#   .ci/docs.sh OUTPUT_DIR      # also keep the rendered archive (open it with `docc preview`, or host it)
#
# The graph holds public symbols only (`package` declarations, the engine's API, do not show). Members a
# type gets from a protocol extension stay in (`List` gets `filter` from `_QueryableCollection` and
# `observe` from `_ObservableCollection`, `Object` gets `observe` from `_ObjectFreezing`); the standard
# library's show as "Default Implementations".
# The extension graphs (`ActorStore@Swift`, `ActorStore@FoundationEssentials`) are left out: ActorStore
# declares no public API on those modules' types, and they hold only what `Int` or `Data` inherit through
# conformances declared here (hundreds of operators). A public extension of such a type would need them.
set -euo pipefail
cd "$(dirname "$0")/.."

output="${1:-$(mktemp -d)}"
graphs="$(mktemp -d)"
trap 'rm -rf "$graphs"' EXIT

swift build --target ActorStore
bin="$(swift build --show-bin-path)"
triple="$(swift -print-target-info | sed -n 's/^ *"triple": "\(.*\)",$/\1/p' | head -n 1)"
sdk=()
if [[ "$(uname)" == Darwin ]]; then sdk=(-sdk "$(xcrun --show-sdk-path)"); fi

swift symbolgraph-extract -module-name ActorStore -target "$triple" "${sdk[@]}" -I "$bin/Modules" -I "$bin" \
    -minimum-access-level public -output-dir "$graphs"
rm -f "$graphs"/ActorStore@*.symbols.json

docc convert Sources/ActorStore/ActorStore.docc --additional-symbol-graph-dir "$graphs" --output-dir "$output" \
    --fallback-display-name ActorStore --fallback-bundle-identifier ActorStore --warnings-as-errors
echo "Documentation: $output"
