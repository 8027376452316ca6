//! The memtable's skiplist: entries laid out in an arena, one writer at a time, readers
//! without locks.
//!
//! This is the shape of RocksDB's `InlineSkipList`. A node is one arena allocation: a
//! 16-byte header (key length, value length, height), the node's `height` forward
//! pointers, then the key and the value bytes. Nothing is allocated per entry on the heap
//! and nothing is freed until the whole list is dropped, so an insert costs one bump of the
//! arena pointer, and a search touches each node it passes once (its pointers and its key
//! are in the same cache lines).
//!
//! Writers take a mutex (the engine's commit path inserts from one thread at a time, so it
//! is never contended there); readers take nothing. A writer fills a node completely before
//! it links it, level 0 first, each link a release store; readers follow links with acquire
//! loads. A reader therefore sees a node either not at all or whole, and the list stays
//! sorted at every instant. Nodes are never unlinked or changed once linked.
//!
//! Keys are internal keys ordered by [`compare_internal`]. An internal key is inserted once
//! (its sequence number makes it unique); inserting a key the list already holds leaves the
//! list unchanged.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::key::compare_internal;

/// The tallest tower. With a branching factor of 4, twelve levels index 4^12 (16.7 M)
/// entries at full speed, more than a memtable holds.
const MAX_HEIGHT: usize = 12;
/// One node in this many is promoted to the next level.
const BRANCHING: u64 = 4;
/// Bytes before a node's forward pointers.
const HEADER_BYTES: usize = 16;
/// Bytes per forward pointer.
const POINTER_BYTES: usize = std::mem::size_of::<AtomicPtr<Node>>();
/// The first arena chunk; each next one is twice the size of the last, up to
/// [`CHUNK_BYTES_MAX`], so a memtable of a table that takes few writes stays small.
const CHUNK_BYTES_MIN: usize = 16 << 10;
const CHUNK_BYTES_MAX: usize = 1 << 20;

/// A node's header. Its forward pointers, key and value follow it in the arena.
#[repr(C, align(8))]
struct Node {
    key_len: u32,
    value_len: u32,
    height: u32,
    _reserved: u32,
}

const _: () = assert!(std::mem::size_of::<Node>() == HEADER_BYTES);

/// The bytes a node of `height` levels holding `data_len` bytes takes in the arena.
fn node_bytes(height: usize, data_len: usize) -> usize {
    HEADER_BYTES + height * POINTER_BYTES + data_len
}

/// A linked node of a [`SkipList`]. It is valid as long as the list it came from is alive;
/// whoever holds one must keep that list alive (the memtable's iterators hold an `Arc` of
/// their memtable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NodeRef(NonNull<Node>);

// SAFETY: a linked node is never written again except through its atomic forward pointers,
// and its memory lives as long as the list; sending or sharing the pointer is as safe as
// sharing the list, which is `Sync`.
unsafe impl Send for NodeRef {}
// SAFETY: as for `Send`.
unsafe impl Sync for NodeRef {}

impl NodeRef {
    fn header(&self) -> &Node {
        // SAFETY: the node was fully written before it was linked (or is the head) and is
        // kept alive by its list, which the caller of every public accessor keeps alive.
        unsafe { self.0.as_ref() }
    }

    /// The forward pointer at `level` (below the node's height).
    fn next_slot(&self, level: usize) -> &AtomicPtr<Node> {
        debug_assert!(level < self.header().height as usize);
        // SAFETY: the node was allocated with `height` 8-aligned pointer slots right after
        // its header; `level` is below the height at every call site.
        unsafe {
            &*(self
                .0
                .as_ptr()
                .cast::<u8>()
                .add(HEADER_BYTES + level * POINTER_BYTES)
                .cast::<AtomicPtr<Node>>())
        }
    }

    fn next(&self, level: usize) -> Option<NodeRef> {
        NonNull::new(self.next_slot(level).load(Ordering::Acquire)).map(NodeRef)
    }

    fn data(&self) -> &[u8] {
        let h = self.header();
        let len = h.key_len as usize + h.value_len as usize;
        // SAFETY: the node's key and value bytes follow its pointers; they were written
        // before the node was linked and are never written again.
        unsafe {
            std::slice::from_raw_parts(
                self.0
                    .as_ptr()
                    .cast::<u8>()
                    .add(HEADER_BYTES + h.height as usize * POINTER_BYTES),
                len,
            )
        }
    }

    /// The node's key. The caller keeps the node's list alive for `'a`.
    ///
    /// # Safety
    ///
    /// The list this node belongs to must outlive `'a`.
    pub(super) unsafe fn key<'a>(self) -> &'a [u8] {
        let key_len = self.header().key_len as usize;
        let data = self.data();
        // SAFETY: the caller guarantees the list, and so the node's bytes, outlive 'a.
        unsafe { std::slice::from_raw_parts(data.as_ptr(), key_len) }
    }

    /// The node's value. The caller keeps the node's list alive for `'a`.
    ///
    /// # Safety
    ///
    /// The list this node belongs to must outlive `'a`.
    pub(super) unsafe fn value<'a>(self) -> &'a [u8] {
        let key_len = self.header().key_len as usize;
        let data = self.data();
        let value = data.get(key_len..).unwrap_or_default();
        // SAFETY: the caller guarantees the list, and so the node's bytes, outlive 'a.
        unsafe { std::slice::from_raw_parts(value.as_ptr(), value.len()) }
    }

    /// The node after this one at level 0 (`None` at the end).
    ///
    /// # Safety
    ///
    /// The list this node belongs to must be alive.
    pub(super) unsafe fn successor(self) -> Option<NodeRef> {
        self.next(0)
    }
}

/// Bump allocation in chunks that are freed only with the list.
struct Arena {
    /// Every chunk, as 8-byte words so each is 8-aligned; a chunk's length stays 0 (the
    /// memory is written through raw pointers and holds only plain bytes and pointers).
    chunks: Vec<Vec<u64>>,
    /// The free part of the current chunk.
    free: *mut u8,
    free_bytes: usize,
    /// The size of the last regular chunk.
    chunk_bytes: usize,
    /// Bytes of every chunk together.
    allocated: usize,
    /// The state of the tower-height generator (xorshift64).
    rng: u64,
}

impl Arena {
    /// `bytes` bytes, 8-aligned, uninitialized.
    fn alloc(&mut self, bytes: usize) -> NonNull<u8> {
        let bytes = bytes.next_multiple_of(8);
        if bytes > self.free_bytes {
            let next = (self.chunk_bytes * 2).clamp(CHUNK_BYTES_MIN, CHUNK_BYTES_MAX);
            if bytes > next / 4 {
                // A large entry gets a chunk of its own; the current chunk stays current.
                return self.new_chunk(bytes);
            }
            self.chunk_bytes = next;
            self.free = self.new_chunk(next).as_ptr();
            self.free_bytes = next;
        }
        let p = self.free;
        // SAFETY: `bytes <= free_bytes`, so the result is within the current chunk or one
        // past its end.
        self.free = unsafe { p.add(bytes) };
        self.free_bytes -= bytes;
        // SAFETY: `p` points into a live chunk, never null.
        unsafe { NonNull::new_unchecked(p) }
    }

    fn new_chunk(&mut self, bytes: usize) -> NonNull<u8> {
        let mut chunk: Vec<u64> = Vec::with_capacity(bytes.div_ceil(8));
        let p = chunk.as_mut_ptr().cast::<u8>();
        self.allocated += chunk.capacity() * 8;
        // Moving the vector into the list does not move its heap buffer.
        self.chunks.push(chunk);
        // SAFETY: a vector's buffer pointer is never null.
        unsafe { NonNull::new_unchecked(p) }
    }

    fn random_height(&mut self) -> usize {
        let mut height = 1;
        while height < MAX_HEIGHT {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if !self.rng.is_multiple_of(BRANCHING) {
                break;
            }
            height += 1;
        }
        height
    }
}

/// A sorted set of internal keys, each with a value.
pub(super) struct SkipList {
    head: NodeRef,
    /// The tallest tower linked so far (readers start their search there).
    height: AtomicUsize,
    len: AtomicUsize,
    arena: Mutex<Arena>,
}

// SAFETY: the arena's raw pointers are touched only under its mutex; nodes are immutable
// once linked except for atomic pointers; readers need nothing else (see the module doc).
unsafe impl Send for SkipList {}
// SAFETY: as for `Send`.
unsafe impl Sync for SkipList {}

impl SkipList {
    /// An empty list.
    pub(super) fn new() -> Self {
        let mut arena = Arena {
            chunks: Vec::new(),
            free: std::ptr::null_mut(),
            free_bytes: 0,
            chunk_bytes: CHUNK_BYTES_MIN / 2,
            allocated: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        };
        let head = arena.alloc(node_bytes(MAX_HEIGHT, 0)).cast::<Node>();
        // SAFETY: the allocation holds a header and MAX_HEIGHT pointers; all are written
        // here before anything can read them.
        unsafe {
            head.as_ptr().write(Node {
                key_len: 0,
                value_len: 0,
                height: MAX_HEIGHT as u32,
                _reserved: 0,
            });
            let slots = head.as_ptr().cast::<u8>().add(HEADER_BYTES);
            for level in 0..MAX_HEIGHT {
                slots
                    .add(level * POINTER_BYTES)
                    .cast::<AtomicPtr<Node>>()
                    .write(AtomicPtr::new(std::ptr::null_mut()));
            }
        }
        Self {
            head: NodeRef(head),
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            arena: Mutex::new(arena),
        }
    }

    /// Entries held.
    pub(super) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Bytes the arena has taken from the allocator.
    #[cfg(test)]
    pub(super) fn allocated_bytes(&self) -> usize {
        self.arena.lock().allocated
    }

    /// Inserts the entry whose bytes are `parts` concatenated, the first `key_len` of them
    /// its key. Returns false, changing nothing, if the key is already held.
    pub(super) fn insert(&self, parts: &[&[u8]], key_len: usize) -> bool {
        let data_len: usize = parts.iter().map(|p| p.len()).sum();
        debug_assert!(key_len <= data_len);
        let mut arena = self.arena.lock();
        let height = arena.random_height();
        let node = arena.alloc(node_bytes(height, data_len)).cast::<Node>();
        // SAFETY: the allocation is node_bytes(height, data_len) bytes, 8-aligned: a
        // header, `height` pointer slots, then the data. No reader can reach the node
        // before it is linked below.
        unsafe {
            node.as_ptr().write(Node {
                key_len: key_len as u32,
                value_len: (data_len - key_len) as u32,
                height: height as u32,
                _reserved: 0,
            });
            let base = node.as_ptr().cast::<u8>().add(HEADER_BYTES);
            for level in 0..height {
                base.add(level * POINTER_BYTES)
                    .cast::<AtomicPtr<Node>>()
                    .write(AtomicPtr::new(std::ptr::null_mut()));
            }
            let mut at = base.add(height * POINTER_BYTES);
            for part in parts {
                std::ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
        }
        let node = NodeRef(node);
        // SAFETY: the node is this list's and was fully written above.
        let key = unsafe { node.key() };
        // Predecessors at every level; levels above the current height start at the head.
        let mut prev = [self.head; MAX_HEIGHT];
        let top = self.height.load(Ordering::Relaxed);
        let mut x = self.head;
        for level in (0..top).rev() {
            while let Some(next) = x.next(level) {
                // SAFETY: `next` is linked in this list, which `self` keeps alive.
                if compare_internal(unsafe { next.key() }, key).is_lt() {
                    x = next;
                } else {
                    break;
                }
            }
            prev[level] = x;
        }
        if let Some(next) = x.next(0) {
            // SAFETY: as above.
            if compare_internal(unsafe { next.key() }, key).is_eq() {
                // The arena keeps the unlinked bytes until the list is dropped.
                return false;
            }
        }
        if height > top {
            self.height.store(height, Ordering::Relaxed);
        }
        for (level, p) in prev.iter().enumerate().take(height) {
            let succ = p.next_slot(level).load(Ordering::Relaxed);
            node.next_slot(level).store(succ, Ordering::Relaxed);
            p.next_slot(level).store(node.0.as_ptr(), Ordering::Release);
        }
        self.len.fetch_add(1, Ordering::Release);
        drop(arena);
        true
    }

    /// The first node whose key is at or after `key` (strictly after when `inclusive` is
    /// false).
    pub(super) fn seek(&self, key: &[u8], inclusive: bool) -> Option<NodeRef> {
        let mut x = self.head;
        let mut level = self.height.load(Ordering::Relaxed);
        while level > 0 {
            level -= 1;
            while let Some(next) = x.next(level) {
                // SAFETY: `next` is linked in this list, which `self` keeps alive.
                let ord = compare_internal(unsafe { next.key() }, key);
                if ord.is_lt() || (!inclusive && ord.is_eq()) {
                    x = next;
                } else {
                    break;
                }
            }
        }
        x.next(0)
    }

    /// The first node.
    pub(super) fn first(&self) -> Option<NodeRef> {
        self.head.next(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{internal_key, Seqno, ValueKind};
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn ikey(user: &[u8], seqno: u64) -> Vec<u8> {
        internal_key(user, 7, Seqno(seqno), ValueKind::Put)
    }

    /// Every (key, value) from `node` on, in list order.
    fn walk(list: &SkipList, mut node: Option<NodeRef>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let _ = list;
        let mut out = Vec::new();
        while let Some(n) = node {
            // SAFETY: `list` is alive for the whole walk.
            unsafe {
                out.push((n.key().to_vec(), n.value().to_vec()));
                node = n.successor();
            }
        }
        out
    }

    struct Model(BTreeMap<OrdKey, Vec<u8>>);
    #[derive(PartialEq, Eq)]
    struct OrdKey(Vec<u8>);
    impl PartialOrd for OrdKey {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for OrdKey {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            compare_internal(&self.0, &other.0)
        }
    }

    proptest! {
        #[test]
        fn inserts_and_seeks_agree_with_a_sorted_map(
            entries in prop::collection::vec(
                (prop::collection::vec(0u8..4, 0..4), 0u64..40, prop::collection::vec(any::<u8>(), 0..600)),
                0..300,
            ),
            probes in prop::collection::vec((prop::collection::vec(0u8..4, 0..4), 0u64..40, any::<bool>()), 0..40),
        ) {
            let list = SkipList::new();
            let mut model = Model(BTreeMap::new());
            for (user, seqno, value) in &entries {
                let key = ikey(user, *seqno);
                let fresh = !model.0.contains_key(&OrdKey(key.clone()));
                prop_assert_eq!(list.insert(&[&key, value], key.len()), fresh);
                if fresh {
                    model.0.insert(OrdKey(key), value.clone());
                }
            }
            prop_assert_eq!(list.len(), model.0.len());
            let all: Vec<(Vec<u8>, Vec<u8>)> =
                model.0.iter().map(|(k, v)| (k.0.clone(), v.clone())).collect();
            prop_assert_eq!(walk(&list, list.first()), all.clone());
            for (user, seqno, inclusive) in probes {
                let probe = ikey(&user, seqno);
                let want: Vec<_> = all
                    .iter()
                    .filter(|(k, _)| {
                        let o = compare_internal(k, &probe);
                        o.is_gt() || (inclusive && o.is_eq())
                    })
                    .cloned()
                    .collect();
                prop_assert_eq!(walk(&list, list.seek(&probe, inclusive)), want);
            }
        }
    }

    #[test]
    fn large_entries_get_chunks_of_their_own_and_small_ones_share() {
        let list = SkipList::new();
        let big = vec![9u8; 3 * CHUNK_BYTES_MAX];
        let key = ikey(b"big", 1);
        assert!(list.insert(&[&key, &big], key.len()));
        for i in 0..1000u32 {
            let key = ikey(&i.to_be_bytes(), 2);
            assert!(list.insert(&[&key, b"v"], key.len()));
        }
        let got = walk(&list, list.seek(&crate::key::seek_key(b"big"), true));
        assert_eq!(got.first().map(|(_, v)| v.len()), Some(big.len()));
        // 1000 small nodes (~60 bytes each) fit in a few growing chunks, not 1000.
        let allocated = list.allocated_bytes();
        assert!(allocated < big.len() + 200_000, "{allocated}");
    }

    #[test]
    fn readers_see_a_sorted_list_and_every_entry_linked_before_they_started() {
        let list = Arc::new(SkipList::new());
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|t| {
                let (list, done) = (list.clone(), done.clone());
                mosaic_env::thread::spawn_named(format!("reader-{t}"), move || {
                    let mut rounds = 0;
                    while !done.load(Ordering::Acquire) || rounds < 2 {
                        let before = list.len();
                        let keys = walk(&list, list.first());
                        assert!(keys.len() >= before, "{} < {before}", keys.len());
                        for pair in keys.windows(2) {
                            assert!(compare_internal(&pair[0].0, &pair[1].0).is_lt());
                        }
                        for (k, v) in &keys {
                            // Each value is its key's first 4 bytes repeated: whole nodes only.
                            assert_eq!(&v[..4], &k[..4]);
                        }
                        rounds += 1;
                    }
                })
                .unwrap()
            })
            .collect();
        let mut x = 1u32;
        for seqno in 0..20_000u64 {
            x = x.wrapping_mul(2_654_435_761).wrapping_add(1);
            let user = x.to_be_bytes();
            let key = ikey(&user, seqno);
            let value = user.repeat(8);
            list.insert(&[&key, &value], key.len());
        }
        done.store(true, Ordering::Release);
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(walk(&list, list.first()).len(), 20_000);
    }
}
