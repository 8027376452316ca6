//! A table whose data blocks live in the cold tier while its metadata stays local.
//!
//! A relocated table's bytes from the first metadata block (filter, index, properties) to
//! the end of the file, footer included, are kept in a local *sidecar*; the data blocks
//! before them are read from the cold tier by range. Opening the table (footer, index,
//! filter) therefore never touches the cold tier, and a read fetches only the blocks it
//! needs.

use std::io;
use std::sync::Arc;

use mosaic_env::RandomAccessFile;

/// One file made of a remote head (`[0, tail_start)`) and a local tail (`[tail_start, len)`).
pub struct TieredFile {
    remote: Arc<dyn RandomAccessFile>,
    tail: Arc<dyn RandomAccessFile>,
    tail_start: u64,
}

impl TieredFile {
    /// The file whose first `tail_start` bytes are `remote`'s and the rest `tail`'s. Fails
    /// when `remote` is shorter than `tail_start` (the wrong object, or a truncated one).
    pub fn new(
        remote: Arc<dyn RandomAccessFile>,
        tail: Arc<dyn RandomAccessFile>,
        tail_start: u64,
    ) -> io::Result<TieredFile> {
        if remote.len() < tail_start {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the cold-tier object holds {} bytes, but the table's data blocks take {tail_start}",
                    remote.len()
                ),
            ));
        }
        Ok(TieredFile {
            remote,
            tail,
            tail_start,
        })
    }
}

impl RandomAccessFile for TieredFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|end| *end <= self.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        if offset >= self.tail_start {
            return self.tail.read_exact_at(buf, offset - self.tail_start);
        }
        if end <= self.tail_start {
            return self.remote.read_exact_at(buf, offset);
        }
        // A read across the boundary: the head from the remote, the rest from the tail.
        let (head, rest) = buf.split_at_mut((self.tail_start - offset) as usize);
        self.remote.read_exact_at(head, offset)?;
        self.tail.read_exact_at(rest, 0)
    }

    fn len(&self) -> u64 {
        self.tail_start + self.tail.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bytes(Vec<u8>);

    impl RandomAccessFile for Bytes {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
            let src = self
                .0
                .get(start..start + buf.len())
                .ok_or(io::ErrorKind::UnexpectedEof)?;
            buf.copy_from_slice(src);
            Ok(())
        }

        fn len(&self) -> u64 {
            self.0.len() as u64
        }
    }

    #[test]
    fn reads_are_served_from_the_side_that_holds_them() {
        let whole: Vec<u8> = (0..100u8).collect();
        // The remote object is the whole file; only its head is read through the tiered file.
        let f = TieredFile::new(
            Arc::new(Bytes(whole.clone())),
            Arc::new(Bytes(whole[60..].to_vec())),
            60,
        )
        .unwrap();
        assert_eq!(f.len(), 100);
        for (offset, len) in [(0, 10), (55, 10), (60, 40), (59, 2), (0, 100), (99, 1)] {
            let mut buf = vec![0; len];
            f.read_exact_at(&mut buf, offset as u64).unwrap();
            assert_eq!(buf, whole[offset..offset + len], "{offset}+{len}");
        }
        let mut buf = [0; 2];
        assert!(f.read_exact_at(&mut buf, 99).is_err());
        assert!(f.read_exact_at(&mut buf, u64::MAX).is_err());
        assert!(
            TieredFile::new(Arc::new(Bytes(vec![0; 10])), Arc::new(Bytes(vec![])), 11).is_err()
        );
    }
}
