import Foundation

/// A read-only engine follows the commits another process appends to its store.
///
/// ```text
///  file:  header | records known at open ... | records the writer appended since | zeros (reserved) |
///                                            ^ appendedEnd                       ^ validEnd of a scan
/// ```
/// The log is append-only, so catching up is a replay of the tail: each ``snapshot()`` (every `read`,
/// `refresh()` and `write` entry of a realm) of a read-only engine first checks the file's size and the
/// record header at the end of what it knows, and replays the complete records after it. A record still
/// being written (its checksum does not match yet) ends the replay; the next call tries again.
///
/// Safety against SIGBUS: bytes are read through the mapping only below a size this call just read with
/// `fstat`, and the writer never shortens the file while another process has it open (it holds the
/// ``PresenceLock`` exclusively to truncate, which this engine's shared hold prevents).
extension StorageEngine {
    /// Replays what other processes committed since this read-only engine last looked, and publishes it.
    /// Does nothing for a writable engine (it is the only writer). Errors leave the engine where it was.
    func followFile() {
        guard configuration.readOnly else { return }
        followLock.withLock { _ in
            do throws(StorageError) { try followFileLocked() } catch {}
        }
    }

    private func followFileLocked() throws(StorageError) {
        let (file, region, start, state, closed) = core.withLock {
            ($0.file, $0.region, $0.appendedEnd, $0.published, $0.isClosed)
        }
        guard !closed else { return }
        let size = try fs.size(of: file)
        guard size >= start + UInt64(Record.overhead) else { return }
        var current = region
        if size > UInt64(region.length) {
            current = try fs.map(file, length: Self.regionLength(for: size)).reading(through: region.cipher)
        }
        let fileBytes = current.bytes(at: 0, count: Int(size))
        // Fast path: nothing after what is known (reserved zeros, or the end of the file).
        if fileBytes[Int(start)..<Int(start) + Record.headerSize].allSatisfy({ $0 == 0 }) { return }
        let cipher = current.cipher
        let scratch = ScratchRows()
        let path = self.path
        let readRow = { (location: RowLocation) throws(StorageError) -> RowView in
            if let cipher {
                return try scratch.keep(cipher: cipher, region: current, location: location, path: path)
            }
            return try RowView(current.bytes(at: Int(location.offset), count: Int(location.length)))
        }
        var next = state
        var known = (state: state, end: start)
        let token = MutationToken.next()
        // A record being written now may look damaged, or be followed by bytes that do: the scan's verdict
        // on the tail is not trusted, only the records it verified.
        _ = try? LogScanner.scan(fileBytes, from: Int(start), path: path) { (entry) throws(StorageError) in
            guard Record.Kind(rawValue: entry.kind) == .commit else {
                known.end = UInt64(entry.end)
                return
            }
            if let cipher {
                defer { scratch.empty() }
                try Replay.apply(
                    encrypted: entry, in: fileBytes, cipher: cipher, to: &next, token: token, path: path,
                    readRow: readRow)
            } else {
                try Replay.apply(
                    commit: UnsafeRawBufferPointer(rebasing: fileBytes[entry.payload]), at: entry.payload.lowerBound,
                    record: entry.offset, to: &next, token: token, path: path, readRow: readRow)
            }
            known = (next, UInt64(entry.end))
        }
        scratch.empty()
        guard known.end > start else { return }
        core.withLock { core in
            guard !core.isClosed, core.appendedEnd == start else { return }
            if current !== core.region {
                core.region = current
                core.nodeStore.update(region: current, end: 0)
            }
            core.published = known.state
            core.tip = known.state
            core.appendedEnd = known.end
            core.durableEnd = known.end
            core.reservedEnd = max(core.reservedEnd, known.end)
        }
    }
}
