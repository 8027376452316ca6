//! Coding groups that lost a member, reclaimed: once a node left the ring, no group naming
//! it takes another change, and once no node holds a key list naming such a group (the
//! secondaries hold those rows in full again, `Covered::dissolved`), nothing reads it
//! either. Its members then let it go: a data node forgets its tables in it (a live one
//! is coded again, in a group of the ring of now) and has its other coded tables' key
//! lists sent again (the secondaries gave up every list of this source); a parity node
//! deletes its parity shards. See `docs/layouts.md`, "A group that loses a member".

use mosaic_types::HostId;

use super::{Elect, GroupId};
use mosaic_lsm::Result;

impl Elect {
    /// The groups this node holds an ECMeta of (as a data or a parity node) that name a
    /// node `member` does not accept: one that left the ring.
    pub fn dissolved_groups(&self, member: impl Fn(&HostId) -> bool) -> Result<Vec<GroupId>> {
        let mut out = Vec::new();
        for group in self.parity.groups()? {
            if let Some(meta) = self.parity.meta(&group)? {
                if !meta.shards.iter().all(|s| member(&s.node)) {
                    out.push(group);
                }
            }
        }
        Ok(out)
    }

    /// Lets `group` go, once no node holds a key list naming it: this node's tables in it
    /// are no longer data shards (their ghosts go with the next sweep unless the table is
    /// live and picked again); when the group's ECMeta names this node (`me`) in a data
    /// slot, every other coded table's key list is to be sent again (the secondaries gave
    /// up all of this source's lists, those of tables whose slot in the group was emptied
    /// meanwhile included); and the group's parity shards, intent and ECMeta are deleted.
    /// A crash midway is finished by the next call (the ECMeta goes last). Returns how
    /// many of this node's tables were data shards of it.
    pub fn release_group(&self, group: &GroupId, me: HostId) -> Result<usize> {
        let data_member = self
            .parity
            .meta(group)?
            .is_some_and(|m| m.shards.iter().take(usize::from(m.k)).any(|s| s.node == me));
        let mut data = self.data.lock();
        let ids: Vec<u64> = data
            .coded
            .iter()
            .filter(|(_, c)| c.group == *group)
            .map(|(id, _)| *id)
            .collect();
        let relist = data_member && data.listed.values().any(|l| l.acked);
        if !ids.is_empty() || relist {
            let mut next = data.clone();
            for id in &ids {
                next.coded.remove(id);
                next.listed.remove(id);
            }
            if data_member {
                for l in next.listed.values_mut() {
                    l.acked = false;
                }
            }
            self.save(&next)?;
            *data = next;
        }
        drop(data);
        self.lineage.forget(&ids)?;
        self.parity.drop_group(group)?;
        Ok(ids.len())
    }

    /// Forgets that table `id` was sent for coding without an answer (its leader left the
    /// ring, taking the change with it); the table may be picked again.
    pub fn forget_pending(&self, id: u64) -> Result<()> {
        let mut data = self.data.lock();
        if !data.pending.contains_key(&id) {
            return Ok(());
        }
        let mut next = data.clone();
        next.pending.remove(&id);
        self.save(&next)?;
        *data = next;
        Ok(())
    }
}
