//! The write-ahead log: every write batch is appended here before it is applied to the
//! memtable, so a crash loses nothing that was acknowledged under the chosen sync mode.
//!
//! Record framing (also used by the manifest): `u32 LE payload length ‖ u32 LE bitwise NOT of
//! the length ‖ u32 LE crc32c over (length bytes ‖ payload) ‖ payload`. The doubled length
//! tells a torn record (a crash cut the file inside it: the header is short or the payload
//! runs past the end) from a damaged one (a flipped length no longer matches its complement,
//! or the checksum fails). Reading stops at the end of the file or the first torn or damaged
//! record, and says what it dropped and what kind of damage it was ([`Damage`]). A WAL is
//! never appended to after a failed write: the engine switches to a new file, so a torn
//! record can only ever be the last one in its file. Replay tolerates a torn record in any
//! file and a damaged last record in the newest one — what crashes and power losses leave
//! of writes never acknowledged — and refuses to open on any other damage, naming the file
//! and offset ([`WalDrop::refusal`]), unless the operator chose to skip it (the damaged
//! file is then kept in [`DAMAGED_DIR`]).
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

/// What kind of damage ended the reading of a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// A record cut short by the end of the file: what a crash during an append, or an
    /// append that failed, leaves behind. Never acknowledged.
    Torn,
    /// The file's last record is damaged, or the rest of the file is zeros: what a power
    /// loss can leave of appends that were not synced yet — harmless only at the end of
    /// the newest file (every older one was synced whole before the next was started).
    Tail,
    /// A damaged record with data after it: the writes of every record from there on are
    /// unreadable, acknowledged ones included.
    Corrupt,
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
    /// Its kind.
    pub damage: Damage,
}

impl WalDrop {
    /// Whether replay may drop this and go on: a torn record in any file (files are synced
    /// whole when the next one starts, so a torn record in an older one is an append that
    /// failed and was never acknowledged), a damaged tail only in the newest file (`newest`),
    /// corruption never.
    pub fn tolerable(&self, newest: bool) -> bool {
        match self.damage {
            Damage::Torn => true,
            Damage::Tail => newest,
            Damage::Corrupt => false,
        }
    }

    /// The error that stops an open at this drop (when it is not tolerable and the
    /// operator did not choose to skip damaged logs).
    pub fn refusal(&self) -> Error {
        Error::corruption(
            &self.file,
            self.offset,
            format!(
                "{} — the write-ahead log is damaged before its end, so writes that may have \
                 been acknowledged ({} bytes from here on) cannot be replayed; refusing to \
                 start. Restore the file, or skip the damage, losing those writes, with the \
                 engine's ignore_wal_corruption option (mosaic: [storage] \
                 wal_ignore_replay_errors = true): the file is then kept in {DAMAGED_DIR}/",
                self.reason, self.bytes
            ),
        )
    }
}

/// Where a replay that skipped damage (by the operator's choice) keeps the damaged log
/// file, under the log's directory.
pub const DAMAGED_DIR: &str = "damaged";

/// Moves the damaged log `file` into `DAMAGED_DIR` beside it (kept for inspection and
/// recovery by hand, never replayed again) and syncs both directories.
pub(crate) fn keep_damaged(fs: &dyn mosaic_env::Fs, file: &Path) -> Result<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let damaged = dir.join(DAMAGED_DIR);
    fs.create_dir_all(&damaged)
        .map_err(|e| Error::io("creating directory", &damaged, e))?;
    let to = damaged.join(file.file_name().unwrap_or_default());
    fs.rename(file, &to)
        .map_err(|e| Error::io("moving a damaged log to", &to, e))?;
    for d in [&damaged, dir] {
        fs.sync_dir(d)
            .map_err(|e| Error::io("syncing directory", d, e))?;
    }
    Ok(to)
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

    /// Ends the reading at the record at `offset`, which the caller found corrupt (its
    /// checksum holds, its content does not decode: a bug or a forgery, never a crash).
    pub fn stop_at(&mut self, offset: u64, reason: String) {
        self.pos = usize::try_from(offset)
            .unwrap_or(self.data.len())
            .min(self.data.len());
        self.stop(reason, Damage::Corrupt);
    }

    /// What was dropped, once iteration has ended.
    pub fn dropped(&self) -> Option<&WalDrop> {
        self.dropped.as_ref()
    }

    fn stop(&mut self, reason: String, damage: Damage) -> Option<(u64, &'a [u8])> {
        self.dropped = Some(WalDrop {
            file: self.path.to_path_buf(),
            offset: self.pos as u64,
            bytes: (self.data.len() - self.pos) as u64,
            reason,
            damage,
        });
        None
    }

    /// A tail when `after` (the bytes from some point of the damaged record on) is all
    /// zeros — a file extended but never written — else corruption.
    fn zeros_or_corrupt(after: &[u8]) -> Damage {
        if after.iter().all(|b| *b == 0) {
            Damage::Tail
        } else {
            Damage::Corrupt
        }
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
            return self.stop(
                format!("torn record header ({} bytes)", rest.len()),
                Damage::Torn,
            );
        };
        let (len_bytes, rest_header) = header.split_at(4);
        let (check_bytes, crc_bytes) = rest_header.split_at(4);
        let len32 = u32::from_le_bytes(len_bytes.try_into().ok()?);
        let check = u32::from_le_bytes(check_bytes.try_into().ok()?);
        let stored = u32::from_le_bytes(crc_bytes.try_into().ok()?);
        if check != !len32 {
            return self.stop(
                format!(
                    "corrupt record header: length {len32} does not match its check {check:#010x}"
                ),
                Self::zeros_or_corrupt(rest),
            );
        }
        let len = len32 as usize;
        if len > RECORD_LEN_MAX {
            return self.stop(
                format!("record length {len} exceeds the maximum"),
                Self::zeros_or_corrupt(rest),
            );
        }
        let Some(payload) = rest.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + len) else {
            return self.stop(
                format!(
                    "torn record: {len} bytes announced, {} present",
                    rest.len() - RECORD_HEADER_LEN
                ),
                Damage::Torn,
            );
        };
        let actual = crc32c::crc32c_append(crc32c::crc32c(len_bytes), payload);
        if actual != stored {
            // The file's last record (its intact header says so), or zeros from here on:
            // unsynced appends a power loss garbled.
            let damage = if rest.len() == RECORD_HEADER_LEN + len {
                Damage::Tail
            } else {
                Self::zeros_or_corrupt(rest.get(RECORD_HEADER_LEN..).unwrap_or_default())
            };
            return self.stop(
                format!("checksum mismatch: expected {stored:#010x}, found {actual:#010x}"),
                damage,
            );
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
    fn damage_is_told_apart_by_what_a_crash_can_leave() {
        // Records at 0 ("first", 17 bytes), 17 ("second", 18) and 35 ("third", 17).
        let data = framed(&[b"first", b"second", b"third"]);
        let damage = |bytes: &[u8]| {
            let mut r = Records::new(bytes, Path::new("x.wal"));
            r.by_ref().for_each(drop);
            r.dropped().map(|d| (d.offset, d.damage))
        };
        let flipped = |pos: usize| {
            let mut b = data.clone();
            b[pos] ^= 0x10;
            damage(&b)
        };
        assert_eq!(damage(&data), None);
        for cut in [1, 11, 20, 40, 51] {
            let torn = damage(&data[..cut]).unwrap();
            assert_eq!(torn.1, Damage::Torn, "cut at {cut}");
        }
        // The last record garbled (checksum or payload): a power loss's unsynced tail.
        assert_eq!(flipped(35 + 9), Some((35, Damage::Tail)));
        assert_eq!(flipped(50), Some((35, Damage::Tail)));
        // Its length, or any earlier record: data after the damage may be acknowledged.
        assert_eq!(flipped(35), Some((35, Damage::Corrupt)));
        assert_eq!(flipped(17 + 13), Some((17, Damage::Corrupt)));
        assert_eq!(flipped(2), Some((0, Damage::Corrupt)));
        // A file extended with zeros (never written), after the records or over the last.
        let mut zeros = data.clone();
        zeros.extend([0u8; 100]);
        assert_eq!(damage(&zeros), Some((52, Damage::Tail)));
        let mut zeroed = data.clone();
        zeroed[17 + 12..].fill(0);
        assert_eq!(damage(&zeroed), Some((17, Damage::Tail)));
        // What replay tolerates where.
        let drop_of = |damage| WalDrop {
            file: "x.wal".into(),
            offset: 0,
            bytes: 1,
            reason: String::new(),
            damage,
        };
        assert!(drop_of(Damage::Torn).tolerable(false));
        assert!(drop_of(Damage::Tail).tolerable(true));
        assert!(!drop_of(Damage::Tail).tolerable(false));
        assert!(!drop_of(Damage::Corrupt).tolerable(true));
        assert!(matches!(
            drop_of(Damage::Corrupt).refusal(),
            Error::Corruption { offset: 0, .. }
        ));
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
