//! The boxed path's buckets (the module holding the boxed path's `unsafe`): type-stable
//! slots, each an atomic pointer to an immutable [`Node`], the sorted entries that share
//! one key prefix.
//!
//! A slot is never freed while the map lives (it is reused for another prefix once its own
//! was removed), so a reader holding a stale slot number reads a live slot; it checks the
//! node's prefix, and a node of another prefix cannot hold its key. Slots live in chunks
//! of doubling size, each made once (`OnceLock`), so finding a slot is two loads and no
//! chunk ever moves.
//!
//! A node is never changed once published: a writer (serialised with every other writer
//! of the prefix by the core leaf that owns it) builds a new node and swaps it in, then
//! retires the old one to [`Limbo`]. Readers load a slot's pointer under a [`Guard`]
//! (an epoch pin) and read the node without any lock and without writing shared memory.

// The word core's epoch pin: under loom/Miri it protects nothing, since nodes, like arrays,
// are then freed only when the map drops.
use super::{Guard, pin};
use crate::sync::{AtomicBool, AtomicPtr, Ordering, lock_std};
use std::sync::{Arc, Mutex, OnceLock};

/// Slots in the first chunk; chunk `c` has `FIRST_CHUNK << c`.
pub const FIRST_CHUNK: usize = 16;
/// Chunks (enough for `FIRST_CHUNK * (2^CHUNKS - 1)` slots).
const CHUNKS: usize = 40;

/// The entries of one node, sorted by key; one inline (no second allocation) in the
/// common case of a prefix that only one key has.
pub(crate) enum Entries<K, V> {
    One((K, V)),
    Many(Box<[(K, V)]>),
}

/// One bucket: its prefix and its (never empty) sorted entries.
pub(crate) struct Node<K, V> {
    pub(crate) prefix: u64,
    entries: Entries<K, V>,
}

impl<K, V> Node<K, V> {
    /// A node of `prefix` holding the one entry `e` (one allocation).
    pub(crate) fn one(prefix: u64, e: (K, V)) -> Box<Self> {
        Box::new(Node {
            prefix,
            entries: Entries::One(e),
        })
    }

    /// A node of `prefix` holding `e` (sorted, not empty).
    pub(crate) fn new(prefix: u64, mut e: Vec<(K, V)>) -> Box<Self> {
        debug_assert!(!e.is_empty());
        let entries = if e.len() == 1 {
            Entries::One(e.pop().expect("one entry"))
        } else {
            Entries::Many(e.into_boxed_slice())
        };
        Box::new(Node { prefix, entries })
    }

    #[inline(always)]
    pub(crate) fn entries(&self) -> &[(K, V)] {
        match &self.entries {
            Entries::One(e) => core::slice::from_ref(e),
            Entries::Many(b) => b,
        }
    }

    /// The entries, by value (the node was owned).
    pub(crate) fn into_entries(self) -> Vec<(K, V)> {
        match self.entries {
            Entries::One(e) => vec![e],
            Entries::Many(b) => b.into_vec(),
        }
    }

    fn bytes(&self) -> usize {
        let many = match &self.entries {
            Entries::One(_) => 0,
            Entries::Many(b) => core::mem::size_of_val(&**b),
        };
        core::mem::size_of::<Self>() + many
    }
}

/// One chunk of slots.
type Chunk<K, V> = Box<[AtomicPtr<Node<K, V>>]>;

pub(crate) struct Slab<K, V> {
    chunks: [OnceLock<Chunk<K, V>>; CHUNKS],
    /// Free slots, and the number of slots ever handed out.
    free: Mutex<(Vec<u64>, u64)>,
    limbo: Limbo<K, V>,
    /// The slots own their nodes, and readers on other threads get `&K`/`&V` while
    /// writers on other threads clone and drop them: `Send` when `K` and `V` are, `Sync`
    /// when they are `Send + Sync` (exactly `RwLock<(K, V)>`'s auto traits).
    _owns: core::marker::PhantomData<std::sync::RwLock<(K, V)>>,
}

/// Chunk and offset of slot `s`.
#[inline(always)]
fn place(s: u64) -> (usize, usize) {
    let i = s as usize / FIRST_CHUNK + 1;
    let c = (usize::BITS - 1 - i.leading_zeros()) as usize;
    (c, s as usize - FIRST_CHUNK * ((1 << c) - 1))
}

impl<K, V> Slab<K, V> {
    pub(crate) fn new() -> Self {
        Slab {
            chunks: [const { OnceLock::new() }; CHUNKS],
            free: Mutex::new((Vec::new(), 0)),
            limbo: Limbo::new(),
            _owns: core::marker::PhantomData,
        }
    }

    #[inline(always)]
    fn slot(&self, s: u64) -> &AtomicPtr<Node<K, V>> {
        let (c, o) = place(s);
        // Every slot number in the map was handed out by `alloc`, which made its chunk.
        &self.chunks[c]
            .get()
            .expect("CobTree: slot of an unmade chunk")[o]
    }

    /// The node in slot `s` now (`None`: the slot is free), valid while `_g` lives.
    #[inline(always)]
    pub(crate) fn load<'g>(&'g self, s: u64, _g: &'g Guard) -> Option<&'g Node<K, V>> {
        let p = self.slot(s).load(Ordering::Acquire);
        // SAFETY: a non-null slot pointer is a `Box<Node>` published by `alloc`/`replace`
        // (release stores, matched by the acquire load above, so the node's contents are
        // visible). A node is freed only (a) when the map drops, which needs it owned, so
        // not while `self` is borrowed, or (b) by `Limbo::collect`, after crossbeam-epoch
        // reported that every thread pinned when the node was unlinked from its slot has
        // unpinned; this thread was pinned (`_g`) before it loaded `p`, so either the
        // unlink came after its pin or it could not have loaded `p`. Nodes are never
        // written after publication, so a shared reference is sound.
        unsafe { p.as_ref() }
    }

    /// A free slot, now holding `node`.
    pub(crate) fn alloc(&self, node: Box<Node<K, V>>) -> u64 {
        let s = {
            let mut f = lock_std(&self.free);
            match f.0.pop() {
                Some(s) => s,
                None => {
                    f.1 += 1;
                    f.1 - 1
                }
            }
        };
        let (c, _) = place(s);
        self.chunks[c].get_or_init(|| {
            (0..FIRST_CHUNK << c)
                .map(|_| AtomicPtr::new(core::ptr::null_mut()))
                .collect()
        });
        let old = self.slot(s).swap(Box::into_raw(node), Ordering::AcqRel);
        debug_assert!(old.is_null(), "CobTree: a free slot held a node");
        s
    }

    /// Publishes `node` in slot `s` (whose writers the caller serialises) and retires the
    /// node it replaces.
    pub(crate) fn replace(&self, s: u64, node: Box<Node<K, V>>) {
        let old = self.slot(s).swap(Box::into_raw(node), Ordering::AcqRel);
        self.retire(old);
    }

    /// Empties slot `s` (its prefix was removed from the index), retires its node and
    /// returns the slot to the free list.
    pub(crate) fn release(&self, s: u64) {
        let old = self.slot(s).swap(core::ptr::null_mut(), Ordering::AcqRel);
        self.retire(old);
        lock_std(&self.free).0.push(s);
    }

    /// `p` came out of a slot by a swap: this thread owns it now (it was `Box::into_raw`'d
    /// when published and is in no slot any more), but readers may still hold references
    /// to it, so it stays a raw pointer (a `Box` would claim it unique) until `Limbo` frees
    /// it.
    fn retire(&self, p: *mut Node<K, V>) {
        if let Some(p) = core::ptr::NonNull::new(p) {
            self.limbo.retire(Retired(p));
        }
    }

    /// The entries of every node still in a slot, taking them out (the map is owned).
    pub(crate) fn take(&mut self, s: u64) -> Option<Box<Node<K, V>>> {
        let p = self.slot(s).swap(core::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: as in `retire`; and `&mut self` means no reader holds a reference.
        (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
    }

    /// Bytes of the chunks and of the nodes (not what keys and values own themselves).
    pub(crate) fn heap_bytes(&self) -> usize {
        let g = pin();
        let mut n = self.limbo.bytes();
        for c in self.chunks.iter().filter_map(OnceLock::get) {
            n += core::mem::size_of_val(&**c);
            for p in c.iter() {
                let p = p.load(Ordering::Acquire);
                // SAFETY: as in `load` (pinned by `g` before the load).
                if let Some(node) = unsafe { p.as_ref() } {
                    n += node.bytes();
                }
            }
        }
        drop(g);
        n
    }
}

impl<K, V> Drop for Slab<K, V> {
    fn drop(&mut self) {
        for c in self.chunks.iter_mut().filter_map(OnceLock::get_mut) {
            for p in c.iter() {
                let p = p.swap(core::ptr::null_mut(), Ordering::Relaxed);
                if !p.is_null() {
                    // SAFETY: the map is being dropped, so no reader holds a reference;
                    // the slot's pointer is a `Box::into_raw` that no one else frees.
                    drop(unsafe { Box::from_raw(p) });
                }
            }
        }
    }
}

/// Retired nodes, freed on a writer's thread once no reader can hold them (or with the
/// map).
///
/// A node is never dropped by crossbeam-epoch itself: a deferred function only sets the
/// node's flag (no allocation, no user code), and a later retire on the map frees the
/// flagged nodes. So keys and values drop on a thread that uses the map (a map of
/// non-`Send` types never has a key or value dropped on another thread), and the map's
/// drop frees every node still waiting.
struct Limbo<K, V> {
    /// The waiting nodes with their flags, and the count at which to scan them next.
    nodes: Mutex<(Vec<Waiting<K, V>>, usize)>,
}

/// A retired node and the flag the epoch collector sets once no reader can hold it.
type Waiting<K, V> = (Arc<AtomicBool>, Retired<K, V>);

/// A node out of its slot that readers may still be reading; freed when this drops, which
/// `Limbo` lets happen only once its flag is set, or when the map drops.
struct Retired<K, V>(core::ptr::NonNull<Node<K, V>>);

// SAFETY: a `Retired` owns its node (it drops it once): sending it sends the keys and values.
unsafe impl<K: Send, V: Send> Send for Retired<K, V> {}

impl<K, V> Retired<K, V> {
    fn node(&self) -> &Node<K, V> {
        // SAFETY: the node is alive until this `Retired` drops, and nobody writes it.
        unsafe { self.0.as_ref() }
    }
}

impl<K, V> Drop for Retired<K, V> {
    fn drop(&mut self) {
        // SAFETY: the pointer is a `Box::into_raw` owned by this `Retired` alone; it drops
        // only when no reader can hold a reference any more (`Limbo::retire` frees only
        // flagged nodes, which crossbeam-epoch flags after every thread pinned at the
        // retirement unpinned) or when the map drops (no reader borrows it then).
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// Waiting nodes below which a retire does not scan for ready ones.
const LIMBO_SCAN: usize = 64;

impl<K, V> Limbo<K, V> {
    fn new() -> Self {
        Limbo {
            nodes: Mutex::new((Vec::new(), LIMBO_SCAN)),
        }
    }

    fn retire(&self, b: Retired<K, V>) {
        let flag = Arc::new(AtomicBool::new(false));
        #[cfg(not(any(loom, miri)))]
        {
            let f = Arc::clone(&flag);
            crossbeam_epoch::pin().defer(move || f.store(true, Ordering::Release));
        }
        let freed = {
            let mut n = lock_std(&self.nodes);
            n.0.push((flag, b));
            if n.0.len() < n.1 {
                return;
            }
            // Amortised: scan again once as many more nodes wait as are left now.
            let (ready, left): (Vec<_>, Vec<_>) = core::mem::take(&mut n.0)
                .into_iter()
                .partition(|(f, _)| f.load(Ordering::Acquire));
            n.1 = (2 * left.len()).max(LIMBO_SCAN);
            n.0 = left;
            ready
        };
        // Outside the lock: the nodes' drops run user code.
        drop(freed);
    }

    fn bytes(&self) -> usize {
        lock_std(&self.nodes)
            .0
            .iter()
            .map(|(_, b)| b.node().bytes())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_dense() {
        let mut next = (0, 0);
        for s in 0..10_000u64 {
            let p = place(s);
            assert_eq!(p, next, "slot {s}");
            next = if p.1 + 1 == FIRST_CHUNK << p.0 {
                (p.0 + 1, 0)
            } else {
                (p.0, p.1 + 1)
            };
        }
    }
}
