//! Arbitrary bytes as a write-ahead log and as a manifest: the record reader, the batch
//! decoder and the version-edit decoder must never panic, and every record they accept must
//! decode to operations whose lengths fit the record.

use std::path::Path;

use mosaic_lsm::version::VersionEdit;
use mosaic_lsm::wal::{decode_batches, Records};

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let path = Path::new("fuzz.wal");
    let mut records = Records::new(data, path);
    for (offset, payload) in records.by_ref() {
        assert!(offset as usize + payload.len() <= data.len());
        if let Some(ops) = decode_batches(payload) {
            let bytes: usize = ops.iter().map(|o| o.key.len() + o.value.len()).sum();
            assert!(bytes <= payload.len());
        }
        let _ = VersionEdit::decode(payload);
    }
    if let Some(d) = records.dropped() {
        assert!(d.offset + d.bytes == data.len() as u64);
    }
    let _ = decode_batches(data);
    let _ = VersionEdit::decode(data);
}
