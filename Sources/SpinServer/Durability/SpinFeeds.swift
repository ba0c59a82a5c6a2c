import SpinCore
import SpinConcurrency

/// The `SpinFeed` of every hosted Spin, by name: where acknowledgements wait for
/// durability and streams subscribe. The seam between "applied" and "acknowledged" on
/// the event path (accept → apply → durable → acknowledge and stream).
///
/// With a journal (`immediate` false) a feed releases what its journal says is durable;
/// without one (a server that keeps its Spins in memory) applied is as durable as it gets.
package final class SpinFeeds: Sendable {
    package let retain: Int
    package let immediate: Bool
    private let feeds = Protected<[String: SpinFeed]>([:])

    package init(retain: Int, immediate: Bool) {
        self.retain = retain
        self.immediate = immediate
    }

    /// The feed of Spin `name`, made on first use.
    package func feed(_ name: String) -> SpinFeed {
        feeds.withLock { feeds in
            if let feed = feeds[name] { return feed }
            let feed = SpinFeed(name: name, retain: retain, immediate: immediate)
            feeds[name] = feed
            return feed
        }
    }

    /// A new feed for Spin `name`, in place of the one it had, which is `end`ed with
    /// `error` (a cluster node starts serving the Spin again after another node did).
    @discardableResult
    package func replace(_ name: String, ending error: DurabilityError) -> SpinFeed {
        let feed = SpinFeed(name: name, retain: retain, immediate: immediate)
        let old = feeds.withLock { feeds in
            defer { feeds[name] = feed }
            return feeds[name]
        }
        old?.end(error)
        return feed
    }

    /// The feed a Spin that wakes goes on with: the one it had (its streams stay open
    /// while it sleeps), or a new one in place of one that has ended (the placeholder a
    /// cluster node leaves when it stops serving the Spin, `retire`: the node serves it
    /// again now, and the ended feed would refuse everything sent to it as stopped).
    package func continuing(_ name: String) -> SpinFeed {
        feeds.withLock { feeds in
            if let feed = feeds[name], !feed.hasEnded { return feed }
            let feed = SpinFeed(name: name, retain: retain, immediate: immediate)
            feeds[name] = feed
            return feed
        }
    }

    /// A cluster node stops serving Spin `name`: its feed is `end`ed with `error`, and an
    /// ended feed takes its place until the node serves the Spin again (`replace`), so
    /// that whatever still reaches the Spin here meanwhile is refused as stopped (see
    /// `EventAcknowledgement.refusal(of:_:retryAfter:)`) and its stream closes: both
    /// follow the Spin to its owner.
    /// A Spin made at run time that wakes here again takes a new one (`continuing`).
    package func retire(_ name: String, ending error: DurabilityError) {
        replace(name, ending: error).end(error)
    }

    /// Spin `name` is deleted: its feed is `end`ed with `error` and forgotten (a Spin made
    /// again with the name gets a new one).
    package func remove(_ name: String, ending error: DurabilityError) {
        feeds.withLock { $0.removeValue(forKey: name) }?.end(error)
    }

    /// Spin `name` sleeps: its feed is forgotten unless a stream watches it (the stream
    /// stays open, and the feed goes on when the Spin wakes).
    /// A stream that took the feed before and subscribes after finds it ended and closes
    /// (1001): its client opens it again, on the Spin woken.
    package func dropUnwatched(_ name: String) {
        let dropped = feeds.withLock { feeds -> SpinFeed? in
            guard let feed = feeds[name], !feed.isWatched else { return nil }
            feeds[name] = nil
            return feed
        }
        dropped?.end(.asleep(spin: name))
    }

    /// Whether a stream watches Spin `name`'s feed now.
    package func isWatched(_ name: String) -> Bool {
        feeds.withLock { $0[name]?.isWatched ?? false }
    }

    /// The Spins whose storage is failing now (not those this node stopped serving).
    package var failing: [String] {
        feeds.withLock { feeds in feeds.values.filter { $0.isFailing && !$0.hasEnded }.map(\.name).sorted() }
    }
}
