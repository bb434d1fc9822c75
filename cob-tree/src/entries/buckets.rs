//! The boxed path's index of buckets: the word core maps each key prefix to the number of
//! the [`Slab`] cell holding that prefix's node, and this type is the only way to reach a
//! node, so the rule that makes a cell number safe to read (it was read from the core as
//! current while the reader was pinned, or under its leaf's lock) is kept here, in safe
//! methods.
//!
//! ```text
//!  word core (inline layout of u64 -> u64)        slab: a pool of type-stable cells
//!  prefix : u64  ->  cell : u64   --------------> [ Node { prefix, sorted (K, V)s } ]
//! ```
//!
//! A writer builds its new node in a free cell, writes the cell's number into the core
//! under the leaf's lock (the core's release fence after locking publishes the node with
//! the number), and only after the core write is done retires the node it replaced. A
//! reader's validated read of the core pairs with that fence (its acquire fence), so the
//! node it reaches is fully written; the read saw the node current while the reader was
//! pinned, so the node is not reclaimed before the reader unpins. The core's iterators
//! yield an element of a frozen (retiring) array only while that array is still current,
//! so the same holds for them.

use super::slab::{Node, Slab, View};
use crate::pma::inl::Inl;
use crate::pma::map::Map;
use crate::pma::{Edit, Guard, pin};
use core::ops::Bound;

/// A prefix or a cell number, as the core stores it.
type W = Inl<u64, 1>;

/// The core's iterator over the prefixes of a range of them.
type Prefixes<'a> = crate::pma::iter::Range<'a, W, (Bound<W>, Bound<W>), W, W>;

pub(crate) struct Buckets<K, V> {
    index: Map<W, W>,
    slab: Slab<K, V>,
}

impl<K, V> Buckets<K, V> {
    pub(crate) fn new(leaves: usize, cap: usize) -> Self {
        Buckets {
            index: Map::new(leaves, cap),
            slab: Slab::new(),
        }
    }

    /// Prefixes in the map (buckets).
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    pub(crate) fn leaf_capacity(&self) -> usize {
        self.index.leaf_capacity()
    }

    /// The node of prefix `p` now (`None`: absent), valid while `g` lives.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn get<'g>(&'g self, p: u64, g: &'g Guard) -> Option<&'g Node<K, V>> {
        let (_, c) = self.index.get(&Inl::new(p))?;
        // SAFETY: `c` came from a validated read of the core (`Map::get`), made while `g`
        // was pinned: the node was current then (the contract of `Slab::node`).
        Some(unsafe { self.slab.node(c.get(), g) })
    }

    /// The prefixes from the front (or the back), `range` of them, each with its node.
    pub(crate) fn cursor(&self, range: (Bound<u64>, Bound<u64>)) -> Cursor<'_, K, V> {
        let b = |b: Bound<u64>| b.map(Inl::new);
        Cursor {
            prefixes: crate::pma::iter::Range::new(&self.index, (b(range.0), b(range.1))),
            slab: &self.slab,
        }
    }

    /// Bytes of the core, the cells and what nodes own outside their cells.
    pub(crate) fn heap_bytes(&self) -> usize {
        let g = pin();
        let own = self
            .cursor((Bound::Unbounded, Bound::Unbounded))
            .fold_with_prefix(&g, 0, |n, _, node| n + node.own_bytes());
        self.index.heap_bytes() + self.slab.heap_bytes() + own
    }

    /// Inserts or replaces prefix `p`'s node: `f(Some(node))` if `p` is present,
    /// `f(None)` if absent, run with `p`'s core leaf locked; `f` returns the node to store
    /// (`None`: leave it as it is).
    pub(crate) fn upsert(&self, p: u64, f: impl FnOnce(Option<&Node<K, V>>) -> Option<Node<K, V>>) {
        let mut replaced = false;
        let old = self.index.upsert(Inl::new(p), |cur| {
            let new = match cur {
                Some(c) => {
                    let g = pin();
                    // SAFETY: under `p`'s leaf lock, `c` is the current node of `p` and only
                    // this writer could retire it (after this write).
                    let new = f(Some(unsafe { self.slab.node(c.get(), &g) }))?;
                    replaced = true;
                    new
                }
                // A new prefix (the usual insert): no node to read, so no pin.
                None => f(None)?,
            };
            Some(Inl::new(self.slab.store(new)))
        });
        if replaced && let Some(c) = old {
            // SAFETY: the core's word of `p` now holds the new node's cell (the upsert has
            // returned, the leaf is unlocked): `c` is out of the core, retired once here.
            unsafe { self.slab.retire(c.get()) };
        }
    }

    /// Under the lock of prefix `p`'s core leaf: `f` reads the node and returns the node
    /// to hold instead (`Edit::Set`), `Edit::Remove` to drop the prefix, or `Edit::Keep`.
    /// If `f` panics, nothing changed.
    pub(crate) fn edit(&self, p: u64, f: impl FnOnce(&Node<K, V>) -> Edit<Node<K, V>>) {
        let mut changed = false;
        let r = self.index.edit(&Inl::new(p), |cur| {
            let g = pin();
            // SAFETY: as in `upsert` (under the leaf lock).
            let node = unsafe { self.slab.node(cur.get(), &g) };
            match f(node) {
                Edit::Keep => Edit::Keep,
                Edit::Remove => {
                    changed = true;
                    Edit::Remove
                }
                Edit::Set(new) => {
                    changed = true;
                    Edit::Set(Inl::new(self.slab.store(new)))
                }
            }
        });
        let old = match r {
            Some(Ok((_, c)) | Err(c)) => c,
            None => return,
        };
        if changed {
            // SAFETY: as in `upsert`: `p`'s word was replaced or removed, `old` is out.
            unsafe { self.slab.retire(old.get()) };
        }
    }

    /// Every node, in prefix order, taken out of the (owned) map, which is left empty.
    pub(crate) fn drain(&mut self) -> Vec<Node<K, V>> {
        let cells = self.cells();
        // The core forgets the cells before they are read out, so the drop below cannot
        // see them again.
        drop(self.index.take_array());
        cells
            .into_iter()
            // SAFETY: `&mut self`: no reader; each cell was a prefix's node in the core,
            // which no longer has it, so each is read out once.
            .map(|c| unsafe { self.slab.take(c) })
            .collect()
    }

    /// The cells the core names, in prefix order.
    fn cells(&self) -> Vec<u64> {
        let r = crate::pma::iter::Range::<W, _, W, W>::new(&self.index, ..);
        r.map(|(_, c)| c.get()).collect()
    }
}

impl<K, V> Drop for Buckets<K, V> {
    fn drop(&mut self) {
        for c in self.cells() {
            // SAFETY: the map is being dropped, so no reader holds a node; each cell named
            // by the core holds a live node that nothing else drops (it is not in limbo),
            // read out and dropped once here.
            drop(unsafe { self.slab.take(c) });
        }
    }
}

/// An iterator over the prefixes of a range with their nodes, reading each node under the
/// guard its caller passes (so it can outlive any one pin).
pub(crate) struct Cursor<'a, K, V> {
    prefixes: Prefixes<'a>,
    slab: &'a Slab<K, V>,
}

impl<'a, K, V> Cursor<'a, K, V> {
    /// The next prefix from the front (`back`: from the back) with its node.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn next<'g>(&mut self, back: bool, g: &'g Guard) -> Option<(u64, &'g Node<K, V>)>
    where
        'a: 'g,
    {
        let (p, c) = if back {
            self.prefixes.next_back()?
        } else {
            self.prefixes.next()?
        };
        // SAFETY: the core's iterator yields an element only after validating it in this
        // call (the leaf's version unchanged, and a frozen leaf's array still current), so
        // `c` was `p`'s current node at a moment of this call, while `g` is pinned.
        Some((p.get(), unsafe { self.slab.node(c.get(), g) }))
    }

    /// Feeds every entry of the nodes left between the two ends to `f`, in order: the
    /// core's internal iteration of its values alone (a tight loop over each leaf's run of
    /// cell numbers; the prefixes are not read), each node's kind told by its cell's number.
    /// `prefix(node)` must be the prefix of the node's keys (the core's key of its cell):
    /// the key the core resumes after when it has to seek again.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn fold<'g, B>(
        self,
        g: &'g Guard,
        init: B,
        mut f: impl FnMut(B, &'g (K, V)) -> B,
        prefix: impl Fn(&Node<K, V>) -> u64,
    ) -> B
    where
        'a: 'g,
    {
        let slab = self.slab;
        self.prefixes.fold_values(
            init,
            |acc, c| {
                // SAFETY: as in `next`: the core's `fold_values` validates each value in
                // this call before passing it on, while `g` is pinned.
                match unsafe { slab.view(c.get(), g) } {
                    View::One(e) => f(acc, e),
                    View::Many(es) => es.iter().fold(acc, &mut f),
                }
            },
            |c| {
                // SAFETY: as above: `c` is a value `fold_values` validated and fed (the
                // last one) in this call.
                Inl::new(prefix(unsafe { slab.node(c.get(), g) }))
            },
        )
    }

    /// [`Self::fold`] with each node's prefix.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn fold_with_prefix<'g, B>(
        self,
        g: &'g Guard,
        init: B,
        mut f: impl FnMut(B, u64, &'g Node<K, V>) -> B,
    ) -> B
    where
        'a: 'g,
    {
        let slab = self.slab;
        self.prefixes.fold(init, |acc, (p, c)| {
            // SAFETY: as in `fold`.
            f(acc, p.get(), unsafe { slab.node(c.get(), g) })
        })
    }
}
