//! The data node's state file (`DIR/CODED`): sealed text, one line per fact.

use std::collections::BTreeMap;

use mosaic_types::HostId;

use super::{CodedTable, DataState, KeyRange, Listing};
use crate::sealed::{hex, seal, unhex, unseal};

pub(super) fn encode_state(state: &DataState) -> Vec<u8> {
    let mut text = format!("mosaic-coded 1\nseq {}\n", state.seq);
    for (id, (slot, leader)) in &state.pending {
        let leader: String = leader.0.iter().map(|b| format!("{b:02x}")).collect();
        text.push_str(&format!("pending {id} {slot} {leader}\n"));
    }
    for (id, c) in &state.coded {
        let group: String = c.group.iter().map(|b| format!("{b:02x}")).collect();
        text.push_str(&format!(
            "{id} {group} {} {} {}\n",
            c.slot, c.epoch, c.bytes
        ));
    }
    for (id, l) in &state.listed {
        let word = if l.acked { "listed" } else { "listing" };
        let (lo, hi) = &l.range;
        text.push_str(&format!("{word} {id} {} {}\n", hex(lo), hex(hi)));
    }
    seal(text)
}

pub(super) fn decode_state(bytes: &[u8]) -> std::result::Result<DataState, String> {
    let mut lines = unseal(bytes, "mosaic-coded 1")?.lines();
    let seq = lines
        .next()
        .and_then(|l| l.strip_prefix("seq "))
        .and_then(|s| s.parse().ok())
        .ok_or("bad seq line")?;
    let mut coded = BTreeMap::new();
    let mut pending = BTreeMap::new();
    let mut listed = BTreeMap::new();
    for line in lines {
        let listing = line
            .strip_prefix("listed ")
            .map(|r| (r, true))
            .or_else(|| line.strip_prefix("listing ").map(|r| (r, false)));
        if let Some((rest, acked)) = listing {
            let f: Vec<&str> = rest.split(' ').collect();
            let parse = || -> Option<(u64, KeyRange)> {
                let [id, lo, hi] = f.as_slice() else {
                    return None;
                };
                Some((id.parse().ok()?, (unhex(lo)?, unhex(hi)?)))
            };
            let (id, range) = parse().ok_or_else(|| format!("bad line {line:?}"))?;
            listed.insert(id, Listing { range, acked });
            continue;
        }
        if let Some(rest) = line.strip_prefix("pending ") {
            let f: Vec<&str> = rest.split(' ').collect();
            let parse = || -> Option<(u64, (u8, HostId))> {
                let [id, slot, leader] = f.as_slice() else {
                    return None;
                };
                let leader = HostId(crate::parity::parse_group(leader)?);
                Some((id.parse().ok()?, (slot.parse().ok()?, leader)))
            };
            let (id, p) = parse().ok_or_else(|| format!("bad line {line:?}"))?;
            pending.insert(id, p);
            continue;
        }
        let f: Vec<&str> = line.split(' ').collect();
        let parse = || -> Option<(u64, CodedTable)> {
            let [id, group, slot, epoch, bytes] = f.as_slice() else {
                return None;
            };
            let group = crate::parity::parse_group(group)?;
            Some((
                id.parse().ok()?,
                CodedTable {
                    group,
                    slot: slot.parse().ok()?,
                    epoch: epoch.parse().ok()?,
                    bytes: bytes.parse().ok()?,
                },
            ))
        };
        let (id, c) = parse().ok_or_else(|| format!("bad line {line:?}"))?;
        coded.insert(id, c);
    }
    Ok(DataState {
        seq,
        coded,
        pending,
        listed,
    })
}
