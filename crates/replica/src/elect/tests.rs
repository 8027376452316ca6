use mosaic_lsm::RealFs;
use std::path::Path;

use mosaic_types::HostId;

use super::*;

fn host(i: u8) -> HostId {
    HostId([i; 16])
}

#[test]
fn read_counts_fade_so_an_old_burst_is_colder_than_recent_reads() {
    let dir = tempfile::tempdir().unwrap();
    let elect = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
    let hour = 60 * 60 * 1_000_000;
    // Table 1 was read 1,000 times an hour ago and not since; table 2 read 100 times
    // a minute ago.
    elect.hotness(&[(1, 1000), (2, 0)], hour);
    elect.hotness(&[(1, 1000), (2, 100)], 2 * hour - 60_000_000);
    let now = elect.hotness(&[(1, 1000), (2, 100)], 2 * hour);
    assert!(now[0] < now[1], "{now:?}");
    assert!(
        (now[0] - 1000.0 / 64.0).abs() < 1.0,
        "six half-lives: {now:?}"
    );
    // An engine reopened (counts restart from zero) counts its new reads, not a drop.
    let after = elect.hotness(&[(1, 5), (2, 100)], 2 * hour);
    assert!((after[0] - now[0] - 5.0).abs() < 1e-6, "{after:?}");
    // A table gone from the list is forgotten: it comes back cold.
    elect.hotness(&[(2, 100)], 2 * hour);
    assert_eq!(elect.hotness(&[(1, 0)], 2 * hour), vec![0.0]);
}

#[test]
fn fills_from_k_nodes_make_the_parity_a_fresh_encode_would() {
    let dir = tempfile::tempdir().unwrap();
    // One process plays the leader (host 3) and the other parity node (host 4).
    let leader = Elect::open(Arc::new(RealFs), &dir.path().join("leader"), None).unwrap();
    let other = Elect::open(Arc::new(RealFs), &dir.path().join("other"), None).unwrap();
    let nodes = Group {
        data: vec![host(0), host(1), host(2)],
        parity: vec![host(3), host(4)],
    };
    let contents: Vec<Vec<u8>> = (0..3u8)
        .map(|i| {
            (0..(500 + 300 * i as usize))
                .map(|b| (b as u8) ^ i)
                .collect()
        })
        .collect();
    let mut meta = None;
    for (slot, content) in contents.iter().enumerate() {
        let Fill::Pending {
            group,
            from,
            to,
            deltas,
        } = leader
            .prepare_fill(&nodes, slot as u8, content.clone())
            .unwrap()
        else {
            panic!("a new fill is pending");
        };
        assert_eq!(
            (from, to),
            (slot as u64, slot as u64 + 1),
            "one group fills up"
        );
        let mut hashes = Vec::new();
        for (position, node, delta) in deltas {
            let at = if node == host(3) { &leader } else { &other };
            hashes.push((
                position,
                at.apply_parity(&group, position, from, to, &delta).unwrap(),
            ));
        }
        let committed = leader.commit_fill(&group, &hashes).unwrap();
        assert_eq!(committed.epoch, to);
        // A retried request finds the committed group.
        let Fill::Committed(again) = leader
            .prepare_fill(&nodes, slot as u8, content.clone())
            .unwrap()
        else {
            panic!("a committed fill is answered at once");
        };
        assert_eq!(again, committed);
        meta = Some(committed);
    }
    let meta = meta.unwrap();
    let refs: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
    let fresh = Codec::new(3, 5).unwrap().encode(&refs).unwrap();
    let p3 = leader.parity().shard(&meta.group, 3).unwrap().unwrap();
    let p4 = other.parity().shard(&meta.group, 4).unwrap().unwrap();
    assert_eq!(p3.bytes, fresh[0]);
    assert_eq!(p4.bytes, fresh[1]);
    assert!(meta.verify(3, &p3.bytes) && meta.verify(4, &p4.bytes));
    for (slot, content) in contents.iter().enumerate() {
        assert!(meta.verify(slot, content));
    }
}

/// Finishes `fill` on `leader` as if it were every parity node of its group.
fn finish_alone(leader: &Elect, fill: Fill) -> EcMeta {
    match fill {
        Fill::Committed(meta) => meta,
        Fill::Pending {
            group,
            from,
            to,
            deltas,
        } => {
            let hashes: Vec<_> = deltas
                .iter()
                .map(|(p, _, d)| (*p, leader.apply_parity(&group, *p, from, to, d).unwrap()))
                .collect();
            leader.commit_fill(&group, &hashes).unwrap()
        }
    }
}

#[test]
fn emptying_a_replaced_tables_slot_leaves_the_parity_of_the_others_and_the_slot_reusable() {
    let dir = tempfile::tempdir().unwrap();
    let leader = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
    let nodes = Group {
        data: vec![host(0), host(1)],
        parity: vec![host(2)],
    };
    let run = |fill: Fill| finish_alone(&leader, fill);
    let a = vec![3u8; 700];
    let b = vec![5u8; 400];
    let c = vec![9u8; 500];
    run(leader.prepare_fill(&nodes, 0, a.clone()).unwrap());
    let meta = run(leader.prepare_fill(&nodes, 1, b.clone()).unwrap());
    // a was compacted away: its slot is emptied with a's content from the ghost.
    let parity_now = || {
        leader
            .parity()
            .shard(&meta.group, 2)
            .unwrap()
            .unwrap()
            .bytes
    };
    let cleared = run(leader.prepare_clear(&meta.group, 0, a.clone()).unwrap());
    assert_eq!(cleared.epoch, meta.epoch + 1);
    assert_eq!(
        (cleared.shards[0].size, cleared.shards[0].hash),
        (0, [0; 32])
    );
    let parity = parity_now();
    let only_b = Codec::new(2, 3).unwrap().encode(&[&[], &b]).unwrap();
    assert_eq!(&parity[..only_b[0].len()], &only_b[0][..]);
    assert!(parity[only_b[0].len()..].iter().all(|&x| x == 0));
    // Asked again (a lost answer), the clear is answered at once.
    assert!(matches!(
        leader.prepare_clear(&meta.group, 0, a.clone()).unwrap(),
        Fill::Committed(m) if m == cleared
    ));
    // The emptied slot takes the node's next table.
    let refilled = run(leader.prepare_fill(&nodes, 0, c.clone()).unwrap());
    assert_eq!(refilled.group, meta.group);
    assert!(refilled.verify(0, &c) && refilled.verify(1, &b));
    let parity = parity_now();
    assert!(refilled.verify(2, &parity));
    let fresh = Codec::new(2, 3).unwrap().encode(&[&c, &b]).unwrap();
    assert_eq!(&parity[..fresh[0].len()], &fresh[0][..]);
}

#[test]
fn a_table_rewritten_unchanged_takes_over_its_predecessors_slot() {
    let dir = tempfile::tempdir().unwrap();
    let leader = Elect::open(Arc::new(RealFs), &dir.path().join("leader"), None).unwrap();
    let data = Elect::open(Arc::new(RealFs), &dir.path().join("data"), None).unwrap();
    let nodes = Group {
        data: vec![host(0), host(1)],
        parity: vec![host(2)],
    };
    let commit = |fill: Fill| finish_alone(&leader, fill);
    let table = vec![4u8; 900];
    let file = dir.path().join("t.sst");
    std::fs::write(&file, &table).unwrap();
    for id in [18, 21] {
        data.pin(id, &file).unwrap();
    }
    let first = commit(leader.prepare_fill(&nodes, 0, table.clone()).unwrap());
    data.mark_coded(18, 0, &first).unwrap();
    data.mark_listing(18, (b"a".to_vec(), b"z".to_vec()))
        .unwrap();
    // Table 21 has the same bytes: the leader answers with the slot 18 holds.
    let again = leader.prepare_fill(&nodes, 0, table.clone()).unwrap();
    assert!(matches!(&again, Fill::Committed(m) if *m == first));
    data.mark_coded(21, 0, &first).unwrap();
    let coded = data.coded();
    assert_eq!(coded.keys().copied().collect::<Vec<_>>(), vec![21]);
    assert!(data.listed().is_empty());
    assert_eq!(data.unlisted(), vec![21]);
    assert_eq!(data.ghost(21).unwrap(), Some(table));
    assert_eq!(data.ghost(18).unwrap(), None);
}

#[test]
fn ghosts_keep_a_pinned_tables_bytes_after_its_file_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let e = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
    let file = dir.path().join("000007.sst");
    std::fs::write(&file, b"table bytes").unwrap();
    assert_eq!(e.pin(7, &file).unwrap().unwrap(), b"table bytes");
    std::fs::remove_file(&file).unwrap();
    assert_eq!(e.ghost(7).unwrap().unwrap(), b"table bytes");
    assert_eq!(e.pin(8, &dir.path().join("000008.sst")).unwrap(), None);
    // Neither live nor coded: swept.
    e.sweep_ghosts(&std::collections::HashSet::new()).unwrap();
    assert_eq!(e.ghost(7).unwrap(), None);
}

#[test]
fn an_interrupted_fill_resumes_with_the_same_group_and_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = Group {
        data: vec![host(0), host(1)],
        parity: vec![host(2)],
    };
    let content = vec![7u8; 1000];
    let first = {
        let leader = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
        let Fill::Pending { group, deltas, .. } =
            leader.prepare_fill(&nodes, 1, content.clone()).unwrap()
        else {
            panic!()
        };
        // The leader applies its own delta, then "crashes" before committing.
        let (pos, _, d) = &deltas[0];
        leader.apply_parity(&group, *pos, 0, 1, d).unwrap();
        group
    };
    let leader = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
    assert_eq!(leader.parity().intents().unwrap().len(), 1);
    let Fill::Pending {
        group,
        from,
        to,
        deltas,
    } = leader.prepare_fill(&nodes, 1, content.clone()).unwrap()
    else {
        panic!()
    };
    assert_eq!((group, from, to), (first, 0, 1));
    let (pos, _, d) = &deltas[0];
    let hash = leader.apply_parity(&group, *pos, from, to, d).unwrap();
    let meta = leader.commit_fill(&group, &[(*pos, hash)]).unwrap();
    assert!(leader.parity().intents().unwrap().is_empty());
    let single = Codec::new(2, 3).unwrap().encode(&[&[], &content]).unwrap();
    assert!(meta.verify(2, &single[0]), "the delta was applied once");
}

#[test]
fn the_data_state_survives_reopen_and_damage_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
    assert_eq!(e.next_seq().unwrap(), 0);
    assert_eq!(e.next_seq().unwrap(), 1);
    let meta = EcMeta {
        group: [9; 16],
        epoch: 1,
        k: 1,
        n: 2,
        stripe_bytes: Codec::new(1, 2).unwrap().stripe_bytes() as u32,
        coded_len: 64,
        shards: vec![
            ShardMeta {
                hash: [1; 32],
                size: 10,
                node: host(0),
                position: 0,
            },
            ShardMeta {
                hash: [2; 32],
                size: 64,
                node: host(1),
                position: 1,
            },
        ],
    };
    e.mark_coded(42, 0, &meta).unwrap();
    drop(e);
    let e = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
    assert_eq!(e.next_seq().unwrap(), 2);
    assert_eq!(
        e.coded()[&42],
        CodedTable {
            group: [9; 16],
            slot: 0,
            epoch: 1,
            bytes: 10
        }
    );
    e.forget_coded(&[42]).unwrap();
    assert!(e.coded().is_empty());
    let path = dir.path().join(CODED_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[5] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    assert!(Elect::open(Arc::new(RealFs), dir.path(), None).is_err());
}

/// On `fs` under `root`: a leader (host 2, both groups' parity node) and a data node
/// (host 0) whose tables 5 and 7 fill group a (with host 1, which is to leave) and 6 group
/// b (with host 3); 5 and 6 are listed. Returns both and the groups a and b.
fn coded_in_two_groups(fs: Arc<dyn Fs>, root: &Path) -> (Elect, Elect, GroupId, GroupId) {
    let leader = Elect::open(fs.clone(), &root.join("leader"), None).unwrap();
    let data = Elect::open(fs.clone(), &root.join("data"), None).unwrap();
    let a = Group {
        data: vec![host(0), host(1)],
        parity: vec![host(2)],
    };
    let b = Group {
        data: vec![host(0), host(3)],
        parity: vec![host(2)],
    };
    let file = root.join("t.sst");
    let mut groups = Vec::new();
    for (id, nodes, byte) in [(5u64, &a, 1u8), (6, &b, 2), (7, &a, 3)] {
        let table = vec![byte; 700];
        mosaic_lsm::write_atomically(&*fs, &file, &table).unwrap();
        data.pin(id, &file).unwrap();
        let slot = if id == 7 { 1 } else { 0 };
        let meta = finish_alone(&leader, leader.prepare_fill(nodes, slot, table).unwrap());
        data.mark_coded(id, slot, &meta).unwrap();
        groups.push(meta.group);
    }
    for id in [5, 6] {
        data.mark_listing(id, (b"a".to_vec(), b"z".to_vec()))
            .unwrap();
        data.mark_listed(id).unwrap();
    }
    (leader, data, groups[0], groups[1])
}

fn not_host_1(h: &HostId) -> bool {
    *h != host(1)
}

/// What a released group `a` leaves: the data node holds table 6 alone, its list to be
/// sent again; the leader holds group b only.
fn assert_released(leader: &Elect, data: &Elect, b: GroupId) {
    assert_eq!(data.coded().keys().copied().collect::<Vec<_>>(), vec![6]);
    assert_eq!(data.unlisted(), vec![6]);
    assert_eq!(data.listed().keys().copied().collect::<Vec<_>>(), vec![6]);
    assert!(data.dissolved_groups(not_host_1).unwrap().is_empty());
    assert!(leader.dissolved_groups(not_host_1).unwrap().is_empty());
    assert_eq!(leader.parity().groups().unwrap(), vec![b]);
    assert!(leader.parity().shard(&b, 2).unwrap().is_some());
}

/// A group naming a node that left the ring is found by both its data and its parity
/// nodes; releasing it forgets the data node's tables in it (their key lists, and the
/// acknowledgement of every other list, since the secondaries gave up all of this
/// source's lists), deletes the parity node's shards and ECMeta, survives a repeat and a
/// reopen, and leaves groups of remaining nodes alone.
#[test]
fn releasing_a_group_that_lost_a_member_forgets_its_tables_and_parity() {
    let dir = tempfile::tempdir().unwrap();
    let (leader, data, a, b) = coded_in_two_groups(Arc::new(RealFs), dir.path());
    assert!(data.unlisted() == vec![7]);
    assert_eq!(data.dissolved_groups(not_host_1).unwrap(), vec![a]);
    assert_eq!(leader.dissolved_groups(not_host_1).unwrap(), vec![a]);
    assert!(leader.parity().shard(&a, 2).unwrap().is_some());

    assert_eq!(data.release_group(&a, host(0)).unwrap(), 2);
    assert_eq!(data.release_group(&a, host(0)).unwrap(), 0);
    assert_eq!(leader.release_group(&a, host(2)).unwrap(), 0);
    assert!(leader.parity().shard(&a, 2).unwrap().is_none());
    assert!(leader.parity().meta(&a).unwrap().is_none());
    assert_released(&leader, &data, b);
    // Table 5 coded again, in a group of the nodes left, names another group.
    let c = Group {
        data: vec![host(0), host(4)],
        parity: vec![host(2)],
    };
    let again = finish_alone(&leader, leader.prepare_fill(&c, 0, vec![1; 700]).unwrap());
    assert!(again.group != a && again.group != b);

    let reopened = Elect::open(Arc::new(RealFs), &dir.path().join("data"), None).unwrap();
    assert_eq!(
        reopened.coded().keys().copied().collect::<Vec<_>>(),
        vec![6]
    );
    assert_eq!(reopened.unlisted(), vec![6]);
    // The ghosts of the forgotten tables go with the next sweep unless they are live.
    let live: std::collections::HashSet<u64> = [5].into_iter().collect();
    reopened.sweep_ghosts(&live).unwrap();
    assert!(reopened.ghost(5).unwrap().is_some());
    assert!(reopened.ghost(7).unwrap().is_none());
    assert!(reopened.ghost(6).unwrap().is_some());
}

/// A power loss at any file-system call while both nodes release group a leaves either
/// node as before or as after (the data node's tables go in one write, the ECMeta last),
/// and releasing again on the image finishes the job.
#[test]
fn a_release_interrupted_by_a_power_loss_is_finished_by_the_next() {
    let root = Path::new("/r");
    let release = |leader: &Elect, data: &Elect, a: GroupId| {
        data.release_group(&a, host(0)).unwrap();
        leader.release_group(&a, host(2)).unwrap();
    };
    // A dry run counts the calls the release makes; the setup is deterministic.
    let fs = mosaic_env::CrashFs::new();
    let (leader, data, a, _) = coded_in_two_groups(Arc::new(fs.clone()), root);
    let start = fs.ops();
    release(&leader, &data, a);
    let end = fs.ops();
    assert!(end - start > 3, "{start}..{end}");
    let fs = mosaic_env::CrashFs::new();
    fs.crash_at(start + 1..=end, 7, Arc::new(|| 0));
    let (leader, data, a, b) = coded_in_two_groups(Arc::new(fs.clone()), root);
    release(&leader, &data, a);
    let images = fs.take_images();
    assert_eq!(images.len() as u64, end - start);
    for (op, _, image) in images {
        let fs: Arc<dyn Fs> = Arc::new(image);
        let leader = Elect::open(fs.clone(), &root.join("leader"), None).unwrap();
        let data = Elect::open(fs.clone(), &root.join("data"), None).unwrap();
        let coded: Vec<u64> = data.coded().keys().copied().collect();
        assert!(
            coded == vec![5, 6, 7] || coded == vec![6],
            "op {op}: {coded:?}"
        );
        if leader.parity().meta(&a).unwrap().is_none() {
            assert!(leader.parity().shard(&a, 2).unwrap().is_none(), "op {op}");
        }
        // Nodes find the group again as long as they hold a trace of it.
        for (e, me) in [(&leader, host(2)), (&data, host(0))] {
            for g in e.dissolved_groups(not_host_1).unwrap() {
                assert_eq!(g, a, "op {op}");
                e.release_group(&g, me).unwrap();
            }
        }
        if coded.len() == 3 {
            data.release_group(&a, host(0)).unwrap();
        }
        assert_released(&leader, &data, b);
    }
}

/// A data node whose tables in the group were all emptied from their slots meanwhile
/// still sends its other key lists again when the group is let go: the secondaries gave
/// them up all the same (a cleared table's list stays with them).
#[test]
fn a_data_node_with_no_table_left_in_the_group_still_relists() {
    let dir = tempfile::tempdir().unwrap();
    let (leader, data, a, _) = coded_in_two_groups(Arc::new(RealFs), dir.path());
    data.cleared(5).unwrap();
    data.cleared(7).unwrap();
    assert!(data.unlisted().is_empty());
    assert_eq!(data.dissolved_groups(not_host_1).unwrap(), vec![a]);
    assert_eq!(data.release_group(&a, host(0)).unwrap(), 0);
    assert_eq!(data.unlisted(), vec![6]);
    // The parity node lists nothing of its own again.
    assert_eq!(leader.release_group(&a, host(2)).unwrap(), 0);
    assert!(leader.unlisted().is_empty());
}

#[test]
fn a_pending_fill_whose_leader_left_is_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let e = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
    let file = dir.path().join("t.sst");
    std::fs::write(&file, b"bytes").unwrap();
    e.pin(3, &file).unwrap();
    e.note_sent(3, 0, host(9)).unwrap();
    assert_eq!(e.unanswered().unwrap().len(), 1);
    e.forget_pending(3).unwrap();
    assert!(e.unanswered().unwrap().is_empty());
    let reopened = Elect::open(Arc::new(RealFs), dir.path(), None).unwrap();
    assert!(reopened.unanswered().unwrap().is_empty());
}
