#!/bin/sh
# What CI runs for Benchmarks/ (release builds; about a minute of runs once built):
#  - object-bench --quick: the object layer at 100,000 objects. A missed target is a finding; only an error
#    (a wrong result, a failed call) makes it exit non-zero.
#  - actorstore-bench --quick: the comparison against GRDB. It exits non-zero if any workload's results disagree
#    between the engines. Arguments given to this script go to it (e.g. --only W3).
set -eu
cd "$(dirname "$0")/.."
swift run -c release --package-path Benchmarks object-bench --quick
exec swift run -c release --package-path Benchmarks actorstore-bench --quick "$@"
