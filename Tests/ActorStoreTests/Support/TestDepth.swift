import Foundation
import Testing

/// How deep the randomized tests go, from the environment (see the README's Tests section). The default run
/// samples; CI also runs the full versions (`.ci/run`). A test's own count variable (`ACTORSTORE_DIFF_CASES`,
/// `ACTORSTORE_FUZZ_ITERATIONS`, `ACTORSTORE_NOTIFY_COMMITS`) still wins over both.
enum TestDepth {
    /// `ACTORSTORE_LONG=1`: the long randomized runs at full length (query differential, parser fuzz,
    /// notification oracle).
    static let long = flag("ACTORSTORE_LONG")

    /// `count` from the environment variable `variable` if set, else `long` with `ACTORSTORE_LONG=1`, else
    /// `sampled`.
    static func count(_ variable: String, long: Int, sampled: Int) -> Int {
        ProcessInfo.processInfo.environment[variable].flatMap { Int($0) } ?? (Self.long ? long : sampled)
    }

    static func flag(_ name: String) -> Bool { ProcessInfo.processInfo.environment[name] == "1" }

    /// The seeds of a randomized test: the one in the environment variable `variable` (to replay a run the
    /// test printed), else `count` random ones.
    static func seeds(_ variable: String, count: Int) -> [UInt64] {
        if let seed = ProcessInfo.processInfo.environment[variable].flatMap(UInt64.init) { return [seed] }
        return (0..<count).map { _ in UInt64.random(in: 1...UInt64.max / 2) }
    }
}

extension Tag {
    /// Regression tests for what the outside reliability campaign of 2026-11-26 found (`shared/repro`).
    @Tag static var reliabilityCampaign: Self
}
