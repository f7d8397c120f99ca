#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// How `@Persisted` properties find their object without the Objective-C runtime.
///
/// Swift initialises a subclass's stored properties before it calls `super.init()`. So while an `Object`
/// is being constructed, each `@Persisted` wrapper's initialiser runs first and pushes its initial value
/// onto this thread's construction stack, remembering its *position* on the stack; then
/// `ObjectBase.init()` runs and takes the last `n` values (n = the class's number of persisted
/// properties) as the object's property slots, remembering where they started (`slotBase`). A property's
/// slot in its object is `position - slotBase`.
///
/// Nested construction (an object created in another object's property initialiser) takes only its own
/// values off the top, so the outer object's positions stay valid. The stack is per thread; object
/// initialisers are synchronous, so a construction never moves between threads.
final class ConstructionStack {
    var values: ContiguousArray<Any> = []
    /// Set while ActorStore creates an object that will become managed at once: its slots are dropped.
    var managedConstruction = false
    /// The class being discovered, whose first instance (the probe) takes the whole stack.
    var discovering: ObjectIdentifier?
    /// A one-entry cache of `ClassRegistry.info(for:).slotCount`, so constructing many objects of one
    /// class does not take the registry's lock each time.
    var lastClass: ObjectIdentifier?
    var lastSlotCount = 0

    @inline(__always) static var current: ConstructionStack {
        if let raw = pthread_getspecific(key) {
            return Unmanaged<ConstructionStack>.fromOpaque(raw).takeUnretainedValue()
        }
        let stack = ConstructionStack()
        pthread_setspecific(key, Unmanaged.passRetained(stack).toOpaque())
        return stack
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        #if canImport(Darwin)
            pthread_key_create(&key) { Unmanaged<ConstructionStack>.fromOpaque($0).release() }
        #else
            pthread_key_create(&key) { raw in
                if let raw { Unmanaged<ConstructionStack>.fromOpaque(raw).release() }
            }
        #endif
        return key
    }()

    /// Pushes a wrapper's initial value; returns its position.
    @inline(__always) func push(_ value: Any) -> Int {
        values.append(value)
        return values.count - 1
    }
}
