#!/usr/bin/env bash
# Builds the API documentation: the DocC catalog in the ActorStore target (Sources/ActorStore/ActorStore.docc)
# together with the module's symbol graph, so every `///` comment is rendered and every ``Symbol`` link is
# checked. Warnings are errors. No package dependency (no swift-docc-plugin): the symbol graph is extracted
# from the module `swift build` already made, with the toolchain's `swift symbolgraph-extract`.
#
#   .ci/docs.sh                 # check only (output in a temporary directory)
#   .ci/docs.sh OUTPUT_DIR      # also keep the rendered archive (open it with `docc preview`, or host it)
#
# The graph holds public symbols only (`package` declarations, the engine's API, do not show) and leaves out
# members inherited from the standard library's protocols (`-skip-synthesized-members`), so the pages list
# ActorStore's own API.
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
    -minimum-access-level public -skip-synthesized-members -output-dir "$graphs"

docc convert Sources/ActorStore/ActorStore.docc --additional-symbol-graph-dir "$graphs" --output-dir "$output" \
    --fallback-display-name ActorStore --fallback-bundle-identifier ActorStore --warnings-as-errors
echo "Documentation: $output"
