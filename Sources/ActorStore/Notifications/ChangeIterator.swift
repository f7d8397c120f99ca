import ActorStorePersistence

/// A change stream's deliveries once it has subscribed: one kind per stream (a query's matches, an object,
/// a collection stored in a property, a whole file). ``ChangeIterator`` drives it.
protocol ChangeFeed: AnyObject {
    /// What one delivery is (a change set, an object change, a commit).
    associatedtype Delivery
    /// The feed's registration with the engine's change hub; the feed cancels it when released.
    var subscription: ChangeSubscription { get }
    /// Waits for the next delivery.
    /// - Returns: the delivery and whether observation ends after it (an observed object was deleted);
    ///   nil once observation ended.
    /// - Throws: the error that ends observation.
    func next() async throws(RealmError) -> (delivery: Delivery, isLast: Bool)?
}

/// A public change sequence (``CollectionChanges``, ``ObjectChanges``, ...): how it subscribes, and what its
/// elements are. Its iterator (``ChangeIterator``) and its closure observation (`observe`) are a
/// ``ChangeIteration``.
protocol ChangeStream: AsyncSequence, Sendable {
    associatedtype Feed: ChangeFeed
    /// Registers with the change hub: from here on, commits are remembered for this iteration.
    func subscribe() throws(RealmError) -> Feed
    /// The element for a delivery, or for the error that ended observation (nil: end without an element).
    static func element(_ delivery: Result<Feed.Delivery, RealmError>) -> Element?
}

/// The state of one iteration of a ``ChangeStream``, the same for every kind: subscribed at the first
/// `next()` (or earlier by ``start()``), then the feed's deliveries until the feed ends, throws, or
/// delivers its last; an error (subscribing included) is delivered once, as the stream's element for it,
/// and ends the iteration.
final class ChangeIteration<Stream: ChangeStream> {
    private enum State {
        /// Not subscribed yet.
        case ready(Stream)
        case observing(Stream.Feed)
        /// Making or subscribing the stream failed: delivered by the next `next()`.
        case failed(RealmError)
        case finished
    }

    private var state: State

    /// An iteration of `stream`, or of a stream that could not be made (its error is the one delivery).
    init(_ stream: Result<Stream, RealmError>) {
        switch stream {
        case .success(let stream): state = .ready(stream)
        case .failure(let error): state = .failed(error)
        }
    }

    /// Subscribes now, so that a closure observation sees every commit after `observe` returns.
    /// - Returns: the subscription; nil when observation failed or ended.
    @discardableResult
    func start() -> ChangeSubscription? {
        switch state {
        case .ready(let stream):
            do throws(RealmError) {
                let feed = try stream.subscribe()
                state = .observing(feed)
                return feed.subscription
            } catch {
                state = .failed(error)
                return nil
            }
        case .observing(let feed): return feed.subscription
        case .failed, .finished: return nil
        }
    }

    /// The next element; nil once observation ended.
    func next() async -> Stream.Element? {
        start()
        switch state {
        case .ready, .finished:
            return nil
        case .failed(let error):
            state = .finished
            return Stream.element(.failure(error))
        case .observing(let feed):
            do throws(RealmError) {
                guard let (delivery, isLast) = try await feed.next() else {
                    state = .finished
                    return nil
                }
                if isLast { state = .finished }
                return Stream.element(.success(delivery))
            } catch {
                state = .finished
                return Stream.element(.failure(error))
            }
        }
    }
}

/// Iterates a change sequence (``CollectionChanges``, ``DetailedCollectionChanges``,
/// ``ValueCollectionChanges``, ``ObjectChanges``, ``RealmChanges``): the iterator every one of them makes.
/// Observation begins at the first ``next()``.
public struct ChangeIterator<Element>: AsyncIteratorProtocol {
    /// The iteration's next element (its ``ChangeIteration``, whose type names the stream).
    private let nextElement: () async -> Element?

    init<Stream: ChangeStream>(_ stream: Stream) where Stream.Element == Element {
        let iteration = ChangeIteration(.success(stream))
        nextElement = { await iteration.next() }
    }

    /// The next element: a change (with coalescing, one covering every commit since the last), or the
    /// error that ended observation where the sequence has a form for it; nil once observation ended.
    public mutating func next() async -> Element? { await nextElement() }
}
