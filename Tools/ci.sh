#!/bin/sh
# What CI runs for the inspector: build the tool package and run its end-to-end tests (they run the built
# `actorstore` executable on realm files the tests make).
set -eu
cd "$(dirname "$0")/.."
swift build --package-path Tools
swift test --package-path Tools
