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
    /// The pushed initial values (unmanaged constructions).
    // `@exclusivity(unchecked)`: the stack is per thread and never accessed re-entrantly while mutated, so the
    // dynamic exclusivity checks (a measurable share of object construction) can never fire.
    @exclusivity(unchecked) var values: ContiguousArray<any _Persistable> = []
    /// The number of pushed positions. Equal to `values.count` except during a managed construction, whose
    /// positions are counted but whose values are not kept (they would be dropped at once).
    @exclusivity(unchecked) var height = 0
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

    /// `body` applied to this thread's stack, without the retain and release that using ``current`` costs
    /// (a measurable share of making an object, which reaches the stack once per property).
    @inline(__always) static func withCurrent<R>(_ body: (ConstructionStack) -> R) -> R {
        if let raw = pthread_getspecific(key) {
            // Guaranteed: the thread's key holds a reference until the thread ends, and `body` runs on it.
            return Unmanaged<ConstructionStack>.fromOpaque(raw)._withUnsafeGuaranteedRef(body)
        }
        return body(current)
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
    @inline(__always) func push<V: _Persistable>(_ value: V) -> Int {
        if !managedConstruction { values.append(value) }
        height &+= 1
        return height &- 1
    }
}
