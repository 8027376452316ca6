//! A SELECT's paging state: where a page stopped (the engine key of the last row
//! returned, the LIMIT left, the rows already returned from that row's partition), sealed
//! with a checksum so a state this node did not make is refused.

use bytes::{BufMut, Bytes, BytesMut};

use crate::frame::ErrorResponse;

/// What a result built without paging may still take, in bytes as a Rows result encodes
/// them (4 bytes of length per cell, then its value): the rows of a plain SELECT and the
/// group rows of a GROUP BY alike, so neither is materialised past
/// `unpaged_result_size_bytes_max`. Paged results are bounded by their page size instead.
pub(super) struct ResultBudget {
    /// The bytes left (`None`: paged, unbounded here).
    left: Option<usize>,
    /// A row did not fit: the read stopped there and the query is refused.
    pub(super) exceeded: bool,
}

impl ResultBudget {
    /// The budget of a result paged by `page_size` (`None`: unpaged, `max` bytes).
    pub(super) fn new(page_size: Option<u64>, max: usize) -> ResultBudget {
        ResultBudget {
            left: page_size.is_none().then_some(max),
            exceeded: false,
        }
    }

    /// Counts `row` against the budget; false (and `exceeded` set) when it does not fit.
    pub(super) fn take(&mut self, row: &[Option<Bytes>]) -> bool {
        let Some(left) = &mut self.left else {
            return true;
        };
        let bytes = row
            .iter()
            .map(|c| 4 + c.as_ref().map_or(0, Bytes::len))
            .fold(0usize, usize::saturating_add);
        match left.checked_sub(bytes) {
            Some(rest) => {
                *left = rest;
                true
            }
            None => {
                self.exceeded = true;
                false
            }
        }
    }
}

/// Where a page stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PagingState {
    pub(super) last_key: Vec<u8>,
    pub(super) limit_left: u64,
    pub(super) partition_rows: u64,
}

const PAGING_VERSION: u8 = 1;

impl PagingState {
    pub(super) fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(self.last_key.len() + 32);
        b.put_u8(PAGING_VERSION);
        b.put_u32(self.last_key.len() as u32);
        b.put_slice(&self.last_key);
        b.put_u64(self.limit_left);
        b.put_u64(self.partition_rows);
        super::super::seal_paging_state(b)
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<PagingState, ErrorResponse> {
        let bad = super::super::bad_paging_state;
        let body = super::super::unseal_paging_state(bytes)?;
        let (&version, rest) = body.split_first().ok_or_else(bad)?;
        if version != PAGING_VERSION {
            return Err(bad());
        }
        let (len, rest) = rest.split_at_checked(4).ok_or_else(bad)?;
        let len = u32::from_be_bytes(len.try_into().map_err(|_| bad())?) as usize;
        let (key, rest) = rest.split_at_checked(len).ok_or_else(bad)?;
        let (limit, rest) = rest.split_at_checked(8).ok_or_else(bad)?;
        let (prows, rest) = rest.split_at_checked(8).ok_or_else(bad)?;
        if !rest.is_empty() {
            return Err(bad());
        }
        Ok(PagingState {
            last_key: key.to_vec(),
            limit_left: u64::from_be_bytes(limit.try_into().map_err(|_| bad())?),
            partition_rows: u64::from_be_bytes(prows.try_into().map_err(|_| bad())?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_state_round_trips_and_rejects_garbage() {
        let s = PagingState {
            last_key: vec![1, 2, 3],
            limit_left: 7,
            partition_rows: 2,
        };
        let b = s.encode();
        assert_eq!(PagingState::decode(&b).unwrap(), s);
        let mut bad = b.to_vec();
        bad[2] ^= 1;
        assert!(PagingState::decode(&bad).is_err());
        assert!(PagingState::decode(&[]).is_err());
        assert!(PagingState::decode(&[1, 2, 3]).is_err());
    }
}
