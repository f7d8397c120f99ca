/// Non-generic entry points to the row index, for the object layer.
///
/// `PersistentBTree` is generic; called from another module it runs unspecialised (type metadata built at
/// run time, comparisons through protocol witnesses), which made iterating and looking up rows several
/// times slower from ActorStore than from inside the engine. These concrete wrappers are compiled — and
/// specialised — here.
///
/// A cursor given the region its rows are read from lets go of the file's pages behind it (a ``PageWindow``):
/// rows come in key order, which for rows appended in that order is file order, and without it a scan of a
/// whole table keeps every page of the file it passed resident for as long as the process maps the file
/// (about 40 MiB of rows for the 1M objects of the JSON export's benchmark).
package struct RowCursor {
    private var iterator: PersistentBTree<ObjectKey, RowLocation>.Iterator
    /// The region the caller reads the rows from, when the cursor drops the pages it passed.
    private let region: MappedRegion?
    private var window = PageWindow()

    /// A cursor over `rows`; with `region`, the region the caller reads them from, it drops the pages of the
    /// rows it has passed (see the type's comment). The caller must be done with a row's bytes when it
    /// asks for the next row but one (a later read is correct, only slower).
    package init(_ rows: PersistentBTree<ObjectKey, RowLocation>, releasingPagesOf region: MappedRegion? = nil) {
        iterator = rows.makeIterator()
        self.region = region
    }

    /// The next row in key order, or nil at the end.
    package mutating func next() -> (key: ObjectKey, location: RowLocation)? {
        guard let (key, location) = iterator.next() else { return nil }
        if let region, let passed = window.read(at: location.offset, length: UInt64(location.length)) {
            region.dropResidentPages(passed)
        }
        return (key, location)
    }
}

extension DatabaseState {
    /// Where row `key` of `table` is, or nil if there is no such row. O(log n).
    package func rowLocation(_ table: TableID, _ key: ObjectKey) -> RowLocation? {
        tables.rowLocation(table, key)
    }

    /// The number of rows of `table` (0 if there is no such table). O(1).
    package func rowCount(_ table: TableID) -> Int { tables.rowCount(table) }

    /// The rows of `table` in key order (empty if there is no such table); with `region` (the region the
    /// caller reads them from), the cursor drops the file's pages behind it (see ``RowCursor``).
    package func rowCursor(_ table: TableID, releasingPagesOf region: MappedRegion? = nil) -> RowCursor {
        RowCursor(tables[table]?.rows ?? PersistentBTree(), releasingPagesOf: region)
    }

    /// The row at rank `offset` of `table` (0-based, key order). O(log n).
    package func row(_ table: TableID, at offset: Int) -> (key: ObjectKey, location: RowLocation)? {
        tables.row(table, at: offset)
    }

    /// The rank of row `key` in `table`, or nil. O(log n).
    package func rowOffset(_ table: TableID, _ key: ObjectKey) -> Int? {
        tables.rowOffset(table, key)
    }

    /// The object whose primary key is `value`, or nil. O(log n).
    package func object(_ table: TableID, primaryKey value: Value) -> ObjectKey? {
        guard let key = IndexKey(value) else { return nil }
        return tables.object(table, primaryKey: key)?.object
    }
}

/// The pages a long read of a mapped file has passed, to drop (``MappedRegion/dropResidentPages(_:)``).
///
/// Without it, a scan keeps every page of the file it passed resident for as long as the process maps the
/// file. Every ``span`` bytes of reads in ascending file order, ``read(at:length:)`` returns the range from
/// the window's first read up to (not including) the previous read, whose bytes the reader may still use.
/// Only a window its reads fill to an eighth at least is returned (a table's rows and a tree's leaves lie
/// among other records: checkpoints every few MiB of log, other tables), so that a scan does not drop long
/// stretches of the file it skipped; a read out of file order starts the window again. Dropping is always
/// safe: the pages stay in the page cache, and a later read maps them again.
package struct PageWindow {
    /// The file offset of the window's first read, and of the last read.
    private var start: UInt64 = .max
    private var previous: UInt64 = 0
    /// The bytes read in the window.
    private var bytes: UInt64 = 0
    /// How many bytes of the file a window spans before its pages are dropped.
    package static let span: UInt64 = 4 << 20

    package init() {}

    /// Records a read of `length` bytes at `offset`; returns the byte range to drop, if the window is full.
    package mutating func read(at offset: UInt64, length: UInt64) -> Range<Int>? {
        defer {
            previous = offset
            bytes &+= length
        }
        guard start != .max, offset >= previous else {
            start = offset
            bytes = 0
            return nil
        }
        guard offset - start >= Self.span else { return nil }
        let passed = bytes * 8 >= offset - start ? Int(start)..<Int(previous) : nil
        start = previous
        bytes = 0
        return passed
    }
}
