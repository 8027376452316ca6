//! Streaming a Rows RESULT: cells are written straight into the output buffer, row after
//! row, so a large page is never held twice.

use super::*;

/// Streams the cells of a Rows RESULT into the output buffer, row after row, each cell
/// as a `[bytes]`. Call [`finish`](Self::finish) to complete the frame; dropping the writer
/// instead removes the partial frame.
#[derive(Debug)]
pub struct RowsWriter<'a> {
    pub(super) out: &'a mut BytesMut,
    pub(super) encoder: ResponseEncoder,
    pub(super) frame_start: usize,
    pub(super) count_pos: usize,
    pub(super) columns: usize,
    pub(super) cells: usize,
    /// Reused for [`CqlValue`] serialization, which writes into a `Vec`.
    pub(super) scratch: Vec<u8>,
    pub(super) finished: bool,
}

impl RowsWriter<'_> {
    /// Appends the next cell: `Some(bytes)` or `None` for null.
    ///
    /// # Panics
    /// If the value is 2 GiB or more, which no frame can hold (a bug upstream).
    #[inline]
    pub fn cell(&mut self, value: Option<&[u8]>) {
        match value {
            Some(v) => {
                let len = int_len(v.len()).expect("a cell value must be under 2 GiB");
                self.out.put_i32(len);
                self.out.extend_from_slice(v);
            }
            None => self.out.put_i32(-1),
        }
        self.cells += 1;
    }

    /// Appends the next cell as a typed value, serialized in place of `[bytes]`.
    pub fn value(&mut self, value: Option<&CqlValue>) {
        match value {
            Some(v) => {
                self.scratch.clear();
                v.write_cql_bytes(&mut self.scratch);
                let scratch = std::mem::take(&mut self.scratch);
                self.cell(Some(&scratch));
                self.scratch = scratch;
            }
            None => self.cell(None),
        }
    }

    /// Appends the next cell by letting `write` put its serialized bytes straight into the
    /// frame; the length prefix is patched afterwards.
    pub fn cell_with(&mut self, write: impl FnOnce(&mut BytesMut)) {
        let len_pos = self.out.len();
        self.out.put_i32(0);
        write(self.out);
        let len = self.out.len() - len_pos - 4;
        let len = int_len(len).expect("a cell value must be under 2 GiB");
        if let Some(slot) = self.out.get_mut(len_pos..len_pos + 4) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
        self.cells += 1;
    }

    /// Complete rows written so far.
    pub fn row_count(&self) -> usize {
        self.cells.checked_div(self.columns).unwrap_or(0)
    }

    /// Bytes of this frame so far (uncompressed), to cut pages by size.
    pub fn frame_len(&self) -> usize {
        self.out.len() - self.frame_start
    }

    /// Patches the row count and the frame length, compressing if negotiated.
    ///
    /// # Panics
    /// If the last row is incomplete (a bug in the caller).
    pub fn finish(mut self) -> Result<(), EncodeError> {
        // is_multiple_of(0) holds only for 0: no cells without columns.
        assert!(
            self.cells.is_multiple_of(self.columns),
            "{} cells do not make whole rows of {} columns",
            self.cells,
            self.columns
        );
        let rows = self.row_count();
        let count = i32::try_from(rows).map_err(|_| EncodeError::TooManyElements {
            what: "rows",
            length: rows,
        })?;
        if let Some(slot) = self.out.get_mut(self.count_pos..self.count_pos + 4) {
            slot.copy_from_slice(&count.to_be_bytes());
        }
        let result = self.encoder.finish(self.out, self.frame_start);
        // On error, Drop removes the partial frame.
        self.finished = result.is_ok();
        result
    }
}

impl Drop for RowsWriter<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.out.truncate(self.frame_start);
        }
    }
}
