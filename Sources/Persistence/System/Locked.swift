import Foundation

/// A value protected by a lock: `withLock` gives exclusive access to it.
///
/// Why not `Synchronization.Mutex`: on Linux it waits with raw futex calls, which ThreadSanitizer cannot
/// see, so every correctly locked access is reported as a race and the sanitizer becomes useless for the
/// whole engine. This lock is a pthread mutex (`NSLock`), which ThreadSanitizer understands; uncontended
/// it costs a few nanoseconds more. Never hold it across an `await` (`withLock` takes a synchronous body).
package final class Locked<Value>: @unchecked Sendable {
    // Safety (@unchecked Sendable): `value` is read and written only inside `withLock`, between `lock()`
    // and `unlock()` of `lock`, so no two threads ever access it at once.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
