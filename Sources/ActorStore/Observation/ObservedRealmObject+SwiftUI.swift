#if canImport(SwiftUI)
    import SwiftUI

    extension ObservedRealmObject {
        /// A SwiftUI binding to a property of the observed object: reading it reads ``object`` (so the view
        /// re-renders when the property changes), setting it writes the new value on the realm (see
        /// ``write(_:)``) — Realm Swift's `$dog.name`, for controls such as `TextField` and `Toggle`.
        ///
        /// ```swift
        /// struct DogEditor: View {
        ///     let dog: ObservedRealmObject<Dog>
        ///     var body: some View {
        ///         TextField("Name", text: dog.binding(\.name))
        ///         Stepper("Age \(dog.object?.age ?? 0)", value: dog.binding(\.age))
        ///     }
        /// }
        /// ```
        ///
        /// The displayed value follows the realm: after a set, the control shows the new value once the
        /// commit reaches the view (a few tens of microseconds later). While the object is deleted the binding
        /// reads the property type's default and sets nothing.
        /// - Parameters:
        ///   - keyPath: A `@Persisted` property of the object.
        ///   - onError: Called on the main actor with the error of a write that failed (the object was deleted,
        ///     the disk is full); a binding cannot throw.
        /// - Important: Use it on the main actor, in a view, with a view made on the main actor.
        @MainActor
        public func binding<Value: _PersistableScalar & Sendable>(
            _ keyPath: ReferenceWritableKeyPath<T, Value>, onError: @escaping @MainActor (any Error) -> Void = { _ in }
        ) -> Binding<Value> {
            // Safety (nonisolated(unsafe)): SwiftUI calls a binding's get and set on the main actor, where this
            // method runs and where the view lives (it was made there), so the view is only ever used there.
            nonisolated(unsafe) let view = self
            // Safety (nonisolated(unsafe)): a key path is an immutable value; a property key path (the only kind
            // `ObservedRealmObject` objects expose through `@Persisted`) captures no other values.
            nonisolated(unsafe) let keyPath = keyPath
            return Binding(
                get: { view.object.map { $0[dynamicMember: keyPath] } ?? Value._rlmScalarDefault },
                set: { newValue in
                    Task { @MainActor in
                        do {
                            try await view.write { $0[keyPath: keyPath] = newValue }
                        } catch {
                            onError(error)
                        }
                    }
                })
        }
    }
#endif
