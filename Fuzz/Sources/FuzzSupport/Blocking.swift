import Dispatch

/// Holds a value set by a task and read by the thread that waited for it.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// Runs `body` in a detached task and blocks the calling thread until it finishes: libFuzzer calls the
/// targets synchronously, while the store's API is async. The calling thread is libFuzzer's, never one
/// of the concurrency pool's, so waiting cannot starve the task.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}
