#!/bin/sh
# What CI runs: the quick comparison against GRDB (release build; under 2 minutes once built).
# It exits non-zero if any workload's results disagree between the engines.
set -eu
cd "$(dirname "$0")/.."
exec swift run -c release --package-path Benchmarks actorstore-bench --quick "$@"
