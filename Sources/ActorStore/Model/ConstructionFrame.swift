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
    /// The pushed initial values (unmanaged constructions). A `let`: a `var` holding a class is retained
    /// and released around every call on it (it could be replaced during the call), once per property of
    /// every object made, about 5% of a bulk insert. Schema discovery sets the values aside with
    /// ``PushedValues/swapContents(with:)`` instead of replacing the buffer.
    let values = PushedValues()
    /// The number of pushed positions. Equal to `values.count` except during a managed construction, whose
    /// positions are counted but whose values are not kept (they would be dropped at once).
    @exclusivity(unchecked) var height = 0
    /// Set while ActorStore creates an object that will become managed at once: its slots are dropped.
    /// Cleared once an object whose values start at ``managedBase`` takes its slots (the managed object, or
    /// one made in its first property initialiser), so that objects its `init` makes after that get their
    /// values.
    var managedConstruction = false
    /// The stack height when the managed construction began.
    var managedBase = -1
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

/// The values on a ``ConstructionStack``: a growable buffer from whose top an object's values move into its
/// slots. An array's `removeLast` would destroy the values just copied out of it (releasing each string
/// and box), and its `append` checks uniqueness and capacity through the standard library's generic
/// paths: together a fifth of making an object.
final class PushedValues {
    // `@exclusivity(unchecked)`: a buffer belongs to one thread's stack (or, set aside, to one schema
    // discovery on that thread), and no access to a field overlaps another. Without it, the two-instance
    // accesses of `swapContents(with:)` make the compiler check every access at run time.
    @exclusivity(unchecked) private var base: UnsafeMutablePointer<any _Persistable>
    @exclusivity(unchecked) private var capacity: Int
    /// The number of values pushed and not taken.
    @exclusivity(unchecked) private(set) var count = 0

    init() {
        capacity = 32
        base = .allocate(capacity: capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    @inline(__always) func append<V: _Persistable>(_ value: V) {
        if count == capacity { grow() }
        (base + count).initialize(to: value)
        count &+= 1
    }

    /// Exchanges the values of `self` and `other`.
    func swapContents(with other: PushedValues) {
        swap(&base, &other.base)
        swap(&capacity, &other.capacity)
        swap(&count, &other.count)
    }

    private func grow() {
        let larger = UnsafeMutablePointer<any _Persistable>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = larger
        capacity *= 2
    }

    /// Removes the last `n` values (`n <= count`) and returns them in a new array of exactly their size, moved,
    /// not copied.
    ///
    /// Up to 12 values by an array literal: the compiler allocates a literal's storage with its type's
    /// metadata looked up once per program, where the standard library's generic allocation (any other
    /// way to make an array of a size known only at run time) asks the runtime's metadata cache on every
    /// call, a measurable share of making an object.
    func takeLast(_ n: Int) -> ContiguousArray<any _Persistable> {
        // What the array's bounds check used to stop: never move values that are not there.
        precondition(n <= count, "the construction stack holds \(count) values, not \(n)")
        count &-= n
        let v = base + count
        switch n {
        case 0: return []
        case 1: return [v.move()]
        case 2: return [v.move(), (v + 1).move()]
        case 3: return [v.move(), (v + 1).move(), (v + 2).move()]
        case 4: return [v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move()]
        case 5: return [v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move(), (v + 4).move()]
        case 6: return [v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move(), (v + 4).move(), (v + 5).move()]
        case 7:
            return [
                v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move(), (v + 4).move(), (v + 5).move(),
                (v + 6).move(),
            ]
        case 8:
            return [
                v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move(), (v + 4).move(), (v + 5).move(),
                (v + 6).move(), (v + 7).move(),
            ]
        case 9:
            return [
                v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move(), (v + 4).move(), (v + 5).move(),
                (v + 6).move(), (v + 7).move(), (v + 8).move(),
            ]
        case 10:
            return [
                v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move(), (v + 4).move(), (v + 5).move(),
                (v + 6).move(), (v + 7).move(), (v + 8).move(), (v + 9).move(),
            ]
        case 11:
            return [
                v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move(), (v + 4).move(), (v + 5).move(),
                (v + 6).move(), (v + 7).move(), (v + 8).move(), (v + 9).move(), (v + 10).move(),
            ]
        case 12:
            return [
                v.move(), (v + 1).move(), (v + 2).move(), (v + 3).move(), (v + 4).move(), (v + 5).move(),
                (v + 6).move(), (v + 7).move(), (v + 8).move(), (v + 9).move(), (v + 10).move(), (v + 11).move(),
            ]
        default:
            return ContiguousArray(unsafeUninitializedCapacity: n) { slots, initialized in
                slots.baseAddress!.moveInitialize(from: v, count: n)
                initialized = n
            }
        }
    }
}
