//! The write-ahead log: every write batch is appended here before it is applied to the
//! memtable, so a crash loses nothing that was acknowledged under the chosen sync mode.
//!
//! Record framing (also used by the manifest): `u32 LE payload length ‖ u32 LE bitwise NOT of
//! the length ‖ u32 LE crc32c over (length bytes ‖ payload) ‖ payload`. The doubled length
//! tells a torn record (a crash cut the file inside it: the header is short or the payload
//! runs past the end) from a damaged one (a flipped length no longer matches its complement,
//! or the checksum fails). Recovery reads records until the end of the file or the first
//! torn or corrupt record, and reports what it dropped. A WAL is never appended to after a failed write: the engine
//! switches to a new file, so a torn record can only ever be the last one in its file.
#![deny(clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use mosaic_env::WritableFile;

use crate::error::{Error, Result};
use crate::key::{Seqno, ValueKind};

/// Bytes of framing before each record's payload.
pub const RECORD_HEADER_LEN: usize = 12;
/// The largest record accepted by the reader (a sanity bound on a corrupt length field).
pub const RECORD_LEN_MAX: usize = 1 << 30;

/// How writes reach stable storage before they are acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// Every write is synced on its own before it is acknowledged.
    PerWrite,
    /// Writes arriving together are synced once, then all acknowledged (group commit).
    Batch,
    /// Writes are acknowledged once in the OS; the log is synced every `interval_ms`
    /// (Cassandra's default). A process crash loses nothing; a power loss may lose the
    /// last interval.
    Periodic {
        /// Milliseconds between syncs.
        interval_ms: u64,
    },
}

impl Default for SyncMode {
    fn default() -> Self {
        SyncMode::Periodic {
            interval_ms: 10_000,
        }
    }
}

/// Appends a framed record holding `payload` to `out`.
pub fn frame_record(out: &mut Vec<u8>, payload: &[u8]) {
    frame_with(out, |buf| buf.extend_from_slice(payload));
}

/// Appends a framed record whose payload `write` appends to `out` in place (no copy of the
/// payload): the header is reserved first and filled in afterwards.
pub fn frame_with(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0u8; RECORD_HEADER_LEN]);
    write(out);
    let payload_len = out.len() - start - RECORD_HEADER_LEN;
    let len = (payload_len as u32).to_le_bytes();
    let payload = out.get(start + RECORD_HEADER_LEN..).unwrap_or_default();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&len), payload);
    let mut header = [0u8; RECORD_HEADER_LEN];
    header[..4].copy_from_slice(&len);
    header[4..8].copy_from_slice(&(!(payload_len as u32)).to_le_bytes());
    header[8..].copy_from_slice(&crc.to_le_bytes());
    if let Some(slot) = out.get_mut(start..start + RECORD_HEADER_LEN) {
        slot.copy_from_slice(&header);
    }
}

/// Why reading a log stopped before its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalDrop {
    /// The log file.
    pub file: PathBuf,
    /// Offset of the first record not replayed.
    pub offset: u64,
    /// Bytes from there to the end of the file, all dropped.
    pub bytes: u64,
    /// What was wrong with the record.
    pub reason: String,
}

/// The records of a log, and what was dropped at its end, if anything.
pub struct Records<'a> {
    data: &'a [u8],
    pos: usize,
    path: &'a Path,
    dropped: Option<WalDrop>,
}

impl<'a> Records<'a> {
    /// Reads records from the bytes of the file at `path`.
    pub fn new(data: &'a [u8], path: &'a Path) -> Self {
        Self {
            data,
            pos: 0,
            path,
            dropped: None,
        }
    }

    /// What was dropped, once iteration has ended.
    pub fn dropped(&self) -> Option<&WalDrop> {
        self.dropped.as_ref()
    }

    fn stop(&mut self, reason: String) -> Option<(u64, &'a [u8])> {
        self.dropped = Some(WalDrop {
            file: self.path.to_path_buf(),
            offset: self.pos as u64,
            bytes: (self.data.len() - self.pos) as u64,
            reason,
        });
        None
    }
}

impl<'a> Iterator for Records<'a> {
    /// (offset of the record, payload)
    type Item = (u64, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.dropped.is_some() || self.pos >= self.data.len() {
            return None;
        }
        let rest = self.data.get(self.pos..)?;
        let Some(header) = rest.get(..RECORD_HEADER_LEN) else {
            return self.stop(format!("torn record header ({} bytes)", rest.len()));
        };
        let (len_bytes, rest_header) = header.split_at(4);
        let (check_bytes, crc_bytes) = rest_header.split_at(4);
        let len32 = u32::from_le_bytes(len_bytes.try_into().ok()?);
        let check = u32::from_le_bytes(check_bytes.try_into().ok()?);
        let stored = u32::from_le_bytes(crc_bytes.try_into().ok()?);
        if check != !len32 {
            return self.stop(format!(
                "corrupt record header: length {len32} does not match its check {check:#010x}"
            ));
        }
        let len = len32 as usize;
        if len > RECORD_LEN_MAX {
            return self.stop(format!("record length {len} exceeds the maximum"));
        }
        let Some(payload) = rest.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + len) else {
            return self.stop(format!(
                "torn record: {len} bytes announced, {} present",
                rest.len() - RECORD_HEADER_LEN
            ));
        };
        let actual = crc32c::crc32c_append(crc32c::crc32c(len_bytes), payload);
        if actual != stored {
            return self.stop(format!(
                "checksum mismatch: expected {stored:#010x}, found {actual:#010x}"
            ));
        }
        let offset = self.pos as u64;
        self.pos += RECORD_HEADER_LEN + len;
        Some((offset, payload))
    }
}

/// Appends framed records to a log file.
pub struct WalWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    unsynced: bool,
}

impl WalWriter {
    /// Starts a log in a freshly created file.
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf) -> Self {
        Self {
            file,
            path,
            unsynced: false,
        }
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.file.is_empty()
    }

    /// Appends already framed records (see [`frame_record`]) with one write.
    pub fn append_framed(&mut self, framed: &[u8]) -> Result<()> {
        self.unsynced = true;
        self.file
            .append(framed)
            .map_err(|e| Error::io("appending to", &self.path, e))
    }

    /// Syncs what was appended, if anything is unsynced.
    pub fn sync(&mut self) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        self.file
            .sync_data()
            .map_err(|e| Error::io("syncing", &self.path, e))?;
        self.unsynced = false;
        Ok(())
    }
}

/// One operation of a write batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchOp {
    /// What the operation does.
    pub kind: ValueKind,
    /// The caller's timestamp.
    pub ts: u64,
    /// The key.
    pub key: Vec<u8>,
    /// The value or merge operand (empty for deletes).
    pub value: Vec<u8>,
}

/// Writes applied atomically: all or none survive a crash.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteBatch {
    pub(crate) ops: Vec<BatchOp>,
    pub(crate) bytes: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn push(&mut self, kind: ValueKind, key: &[u8], ts: u64, value: &[u8]) {
        self.push_owned(kind, key.to_vec(), ts, value.to_vec());
    }

    fn push_owned(&mut self, kind: ValueKind, key: Vec<u8>, ts: u64, value: Vec<u8>) {
        self.bytes += key.len() + value.len();
        self.ops.push(BatchOp {
            kind,
            ts,
            key,
            value,
        });
    }

    /// Sets `key` to `value` as of `ts`.
    pub fn put(&mut self, key: &[u8], ts: u64, value: &[u8]) {
        self.push(ValueKind::Put, key, ts, value);
    }

    /// Deletes `key` as of `ts`.
    pub fn delete(&mut self, key: &[u8], ts: u64) {
        self.push(ValueKind::Delete, key, ts, &[]);
    }

    /// Adds a merge operand for `key` at `ts`.
    pub fn merge(&mut self, key: &[u8], ts: u64, operand: &[u8]) {
        self.push(ValueKind::Merge, key, ts, operand);
    }

    /// [`WriteBatch::merge`] taking the key and operand as they are, without copying them.
    pub fn merge_owned(&mut self, key: Vec<u8>, ts: u64, operand: Vec<u8>) {
        self.push_owned(ValueKind::Merge, key, ts, operand);
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Key and value bytes in the batch.
    pub fn size_bytes(&self) -> usize {
        self.bytes
    }

    /// The operations.
    pub fn ops(&self) -> &[BatchOp] {
        &self.ops
    }

    /// The batch with every key replaced by `f`'s answer for it (the first error stops).
    pub fn map_keys<E>(
        self,
        mut f: impl FnMut(&[u8]) -> std::result::Result<Vec<u8>, E>,
    ) -> std::result::Result<WriteBatch, E> {
        let mut out = WriteBatch::new();
        for op in self.ops {
            let key = f(&op.key)?;
            out.push_owned(op.kind, key, op.ts, op.value);
        }
        Ok(out)
    }
}

/// Encodes the WAL payload of batches whose first operation gets `first`:
/// `u64 LE first seqno ‖ u32 LE op count ‖ ops`, each op `u8 kind ‖ u64 LE ts ‖ u32 LE key
/// length ‖ key ‖ u32 LE value length ‖ value`.
pub fn encode_batches<'a>(
    out: &mut Vec<u8>,
    first: Seqno,
    batches: impl Iterator<Item = &'a WriteBatch> + Clone,
) {
    let count: usize = batches.clone().map(|b| b.ops.len()).sum();
    out.extend_from_slice(&first.0.to_le_bytes());
    out.extend_from_slice(&(count as u32).to_le_bytes());
    for op in batches.flat_map(|b| b.ops.iter()) {
        encode_op(out, op);
    }
}

/// The first byte of a node engine's WAL record: its format's version. (Per-table WALs,
/// the format before the node engine, live in the tables' directories and have none.)
const PARTITIONED_TAG: u8 = 0xE1;

/// Encodes the node engine's WAL payload for batches of several partitions, the first
/// operation getting `first`: `u8 0xE1 ‖ u64 LE first seqno ‖ u32 LE batch count ‖` per
/// batch `u32 LE partition id ‖ u32 LE op count ‖ ops` (ops as in [`encode_batches`]).
pub fn encode_partitioned<'a>(
    out: &mut Vec<u8>,
    first: Seqno,
    batches: impl Iterator<Item = (u32, &'a WriteBatch)> + Clone,
) {
    out.push(PARTITIONED_TAG);
    out.extend_from_slice(&first.0.to_le_bytes());
    out.extend_from_slice(&(batches.clone().count() as u32).to_le_bytes());
    for (partition, batch) in batches {
        out.extend_from_slice(&partition.to_le_bytes());
        out.extend_from_slice(&(batch.ops.len() as u32).to_le_bytes());
        for op in &batch.ops {
            encode_op(out, op);
        }
    }
}

/// Bytes an encoded operation takes besides its key and value: kind, timestamp and the two
/// lengths.
pub const OP_HEADER_BYTES: usize = 1 + 8 + 4 + 4;

fn encode_op(out: &mut Vec<u8>, op: &BatchOp) {
    out.push(op.kind as u8);
    out.extend_from_slice(&op.ts.to_le_bytes());
    out.extend_from_slice(&(op.key.len() as u32).to_le_bytes());
    out.extend_from_slice(&op.key);
    out.extend_from_slice(&(op.value.len() as u32).to_le_bytes());
    out.extend_from_slice(&op.value);
}

/// Decodes a payload written by [`encode_partitioned`] into `(partition, op)` pairs in
/// sequence order; `None` if it is malformed.
pub fn decode_partitioned(payload: &[u8]) -> Option<Vec<(u32, DecodedOp<'_>)>> {
    let mut c = Cursor {
        data: payload,
        pos: 0,
    };
    if *c.take(1)?.first()? != PARTITIONED_TAG {
        return None;
    }
    let mut seqno = c.u64()?;
    let batches = c.u32()? as usize;
    // Each batch takes at least 8 bytes, each op OP_HEADER_BYTES: refuse counts the payload
    // cannot hold.
    if batches > payload.len() / 8 {
        return None;
    }
    let mut ops = Vec::new();
    for _ in 0..batches {
        let partition = c.u32()?;
        let count = c.u32()? as usize;
        if count > payload.len() / OP_HEADER_BYTES {
            return None;
        }
        for _ in 0..count {
            ops.push((partition, decode_op(&mut c, Seqno(seqno))?));
            seqno = seqno.checked_add(1)?;
        }
    }
    (c.pos == payload.len()).then_some(ops)
}

fn decode_op<'a>(c: &mut Cursor<'a>, seqno: Seqno) -> Option<DecodedOp<'a>> {
    let kind = ValueKind::from_u8(*c.take(1)?.first()?)?;
    let ts = c.u64()?;
    let klen = c.u32()? as usize;
    let key = c.take(klen)?;
    let vlen = c.u32()? as usize;
    let value = c.take(vlen)?;
    Some(DecodedOp {
        seqno,
        kind,
        ts,
        key,
        value,
    })
}

/// One decoded operation, borrowing the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodedOp<'a> {
    /// Its sequence number.
    pub seqno: Seqno,
    /// What it does.
    pub kind: ValueKind,
    /// The caller's timestamp.
    pub ts: u64,
    /// The key.
    pub key: &'a [u8],
    /// The value.
    pub value: &'a [u8],
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// Decodes a WAL payload; `None` if it is malformed (the checksum matched, so this means a
/// bug or a deliberate forgery, reported as corruption by the caller).
pub fn decode_batches(payload: &[u8]) -> Option<Vec<DecodedOp<'_>>> {
    let mut c = Cursor {
        data: payload,
        pos: 0,
    };
    let first = c.u64()?;
    let count = c.u32()? as usize;
    // Each op takes at least OP_HEADER_BYTES: refuse counts the payload cannot hold.
    if count > payload.len() / OP_HEADER_BYTES {
        return None;
    }
    let mut ops = Vec::with_capacity(count);
    for i in 0..count as u64 {
        ops.push(decode_op(&mut c, Seqno(first.checked_add(i)?))?);
    }
    (c.pos == payload.len()).then_some(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_owned_merge_is_the_same_batch_entry() {
        let mut copied = WriteBatch::new();
        copied.merge(b"key", 7, b"operand");
        let mut owned = WriteBatch::new();
        owned.merge_owned(b"key".to_vec(), 7, b"operand".to_vec());
        assert_eq!(owned, copied);
        assert_eq!(owned.size_bytes(), 10);
    }

    fn framed(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in payloads {
            frame_record(&mut out, p);
        }
        out
    }

    #[test]
    fn records_round_trip() {
        let data = framed(&[b"a", b"", b"hello world"]);
        let path = Path::new("x.wal");
        let mut r = Records::new(&data, path);
        let got: Vec<_> = r.by_ref().map(|(_, p)| p.to_vec()).collect();
        assert_eq!(got, vec![b"a".to_vec(), vec![], b"hello world".to_vec()]);
        assert!(r.dropped().is_none());
    }

    #[test]
    fn a_torn_tail_is_dropped_and_reported() {
        let data = framed(&[b"first", b"second record"]);
        let path = Path::new("x.wal");
        for cut in 1..(data.len() - 17) {
            let mut r = Records::new(&data[..data.len() - cut], path);
            let got: Vec<_> = r.by_ref().map(|(_, p)| p.to_vec()).collect();
            assert_eq!(got, vec![b"first".to_vec()]);
            let d = r.dropped().unwrap();
            assert_eq!(d.offset, 17);
            assert!(d.reason.starts_with("torn"), "{}", d.reason);
        }
    }

    #[test]
    fn a_flipped_byte_stops_replay_at_that_record() {
        let data = framed(&[b"first", b"second", b"third"]);
        for i in 17..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0x40;
            let mut r = Records::new(&bad, Path::new("x.wal"));
            let got: Vec<_> = r.by_ref().map(|(_, p)| p.to_vec()).collect();
            assert_eq!(got[0], b"first".to_vec());
            assert!(got.len() <= 2);
            assert!(got
                .iter()
                .all(|p| [&b"first"[..], b"second", b"third"].contains(&&p[..])));
            if got.len() == 1 {
                let d = r.dropped().unwrap();
                assert!(
                    !d.reason.starts_with("torn"),
                    "a flipped byte is not a torn tail"
                );
            }
        }
    }

    #[test]
    fn batches_round_trip() {
        let mut a = WriteBatch::new();
        a.put(b"k1", 5, b"v1");
        a.delete(b"k2", 6);
        let mut b = WriteBatch::new();
        b.merge(b"k3", 7, b"op");
        let mut out = Vec::new();
        encode_batches(&mut out, Seqno(100), [&a, &b].into_iter());
        let ops = decode_batches(&out).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[0].seqno, Seqno(100));
        assert_eq!(ops[1].kind, ValueKind::Delete);
        assert_eq!(ops[2].seqno, Seqno(102));
        assert_eq!(ops[2].value, b"op");
        assert!(decode_batches(&out[..out.len() - 1]).is_none());
    }

    proptest! {
        #[test]
        fn garbage_never_panics_the_readers(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let path = Path::new("g.wal");
            for (_, payload) in Records::new(&data, path) {
                let _ = decode_batches(payload);
            }
            let _ = decode_batches(&data);
        }
    }
}
