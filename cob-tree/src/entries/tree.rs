//! Bounded B+trees over the entries that share one key prefix, ordered by their full `Ord`.
//!
//! ```text
//!  root (an AtomicPtr in the bucket's cell)
//!    |
//!    v
//!  inner: | height len | s0 s1 .. s(n-2) | kid0 kid1 .. kid(n-1) |   kids: AtomicPtr
//!            s_i = the smallest key under kid i+1 (a copy of it, or a reference to its cell)
//!    |
//!    v
//!  leaf:  | 0 | version: seq live | order: o0 o1 .. o(live-1) | slot0 slot1 .. slot(used-1) |
//!            o_i: the slot of the i-th smallest live entry (one byte each, in 4 atomic words)
//!            slot: the entry itself (inline layout) or (word, cell) (cell layout), written
//!            once, before any order names it; later writes append (used grows)
//! ```
//!
//! A leaf holds at most [`TREE_LEAF_SLOTS`] entries and an inner node at most
//! [`TREE_FANOUT`] children (fewer when the map was made with smaller leaves), every node
//! but the root at least a quarter of that: a tree of `n` entries is `O(log n)` deep.
//!
//! **Writers** of one tree are serialised by the caller (the word core's leaf lock of the
//! tree's prefix). A leaf's slots are written once: a write that fits writes its new slot
//! past the leaf's used ones (an insert, or a replacement of a value) and publishes the
//! leaf's new order (a seqlock: the version made odd, the order words stored, the version
//! made even with the new live count, release); a removal only publishes an order without
//! the slot. Only when the leaf has no unused slot left does a write build a new leaf (its
//! live slots, compacted, or two halves when it is full), and, when leaves split or merge
//! or a separator changes, new inner nodes up to the highest one that changes (inner nodes
//! are never changed once published, but for their child slots); it stores the new node in
//! its parent's child slot (or the root) with a release store, and only then retires the
//! nodes it replaced. So a write copies at most two leaves' worth of slots, plus inner
//! nodes' separators and children when it splits or merges them, and never clones a key
//! or a value (the cell layout copies only words); most writes copy one slot.
//!
//! **Readers** pin the epoch, load the root and the child slots with acquire loads, and read
//! the nodes they reach: no lock, no write to shared memory. A leaf's order is read as a
//! seqlock reader does (version, order words, acquire fence, version again; again if a
//! writer was publishing), and the slots it names were written before it was published and
//! are never written again, so a reader holds consistent references into the leaf. A node
//! reached while pinned was in the tree at that moment (a retired node's child slots are
//! never written again), so it is retired after that moment and freed only after the
//! reader unpins.
//!
//! Slots and separators are copied bitwise and never dropped by the tree: the inline layout
//! is used only when neither `K` nor `V` needs dropping (`Slots::INLINE`), and the cell
//! layout's are words.

use super::slab::Slab;
use crate::pma::Guard;
use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, Ordering, fence, spin_wait};
use core::borrow::Borrow;
use core::cell::UnsafeCell;
use core::cmp::Ordering as Cmp;
use core::marker::PhantomData;
use core::mem::{ManuallyDrop, MaybeUninit};
use core::ptr::{self, NonNull};

/// Most entries in one leaf of a prefix's tree (a map made with smaller leaves uses its
/// leaf capacity, at least 4).
pub const TREE_LEAF_SLOTS: usize = 32;
/// Most children of one inner node of a prefix's tree (as [`TREE_LEAF_SLOTS`]).
pub const TREE_FANOUT: usize = 32;
/// Deepest tree a cursor can walk: with at least two children per inner node and one
/// entry per leaf, `2^MAX_HEIGHT` entries.
const MAX_HEIGHT: usize = 24;

const _: () = assert!(TREE_LEAF_SLOTS >= 4 && TREE_FANOUT >= 4);
// A leaf's order is one byte per slot in whole words; its live count fits below `BUSY`.
const _: () = assert!(TREE_LEAF_SLOTS.is_multiple_of(8) && TREE_LEAF_SLOTS <= 64);
const ORDER_WORDS: usize = TREE_LEAF_SLOTS / 8;
/// A leaf version's live count (its low bits).
const LIVE: u64 = 0x7f;
/// Set in a leaf's version while its writer publishes a new order.
const BUSY: u64 = 0x80;
/// One step of a leaf version's sequence number (above the live count and `BUSY`).
const SEQ: u64 = 0x100;
const _: () = assert!(TREE_LEAF_SLOTS <= u16::MAX as usize && TREE_FANOUT <= u16::MAX as usize);

/// The first field of every node: what it is and how full.
#[repr(C)]
pub(crate) struct Head {
    /// 0 for a leaf; an inner node's children have height `height - 1`.
    height: u32,
    /// Slots of a leaf; children of an inner node.
    len: u32,
}

#[repr(C)]
struct Leaf<S> {
    head: Head,
    /// `seq * SEQ | BUSY (while publishing) | live`: a seqlock over `order`.
    ver: AtomicU64,
    /// Slots written so far (the writer's count, under the tree's lock; readers never read
    /// it): slots from here on are unwritten.
    used: AtomicU32,
    /// The live slots' numbers in key order, byte `i` of the little-endian words the
    /// `i`-th; bytes past the live count mean nothing.
    order: [AtomicU64; ORDER_WORDS],
    /// Written once each (before an order names them), then only read.
    slots: [UnsafeCell<MaybeUninit<S>>; TREE_LEAF_SLOTS],
}

/// A leaf's live slots in key order, as read at one moment (the seqlock's validated read).
#[derive(Clone, Copy)]
pub(crate) struct Order {
    n: usize,
    idx: [u8; TREE_LEAF_SLOTS],
}

impl Order {
    const EMPTY: Order = Order {
        n: 0,
        idx: [0; TREE_LEAF_SLOTS],
    };

    #[inline(always)]
    fn len(&self) -> usize {
        self.n
    }

    #[inline(always)]
    fn live(&self) -> &[u8] {
        &self.idx[..self.n]
    }

    /// This order with `slot` at position `at` (the ones from `at` move up).
    fn insert(&self, at: usize, slot: u8) -> Order {
        let mut o = *self;
        o.idx.copy_within(at..self.n, at + 1);
        o.idx[at] = slot;
        o.n += 1;
        o
    }

    /// This order without position `at`.
    fn remove(&self, at: usize) -> Order {
        let mut o = *self;
        o.idx.copy_within(at + 1..self.n, at);
        o.n -= 1;
        o
    }
}

impl<S> Leaf<S> {
    /// The order now: a seqlock read (retried while a writer publishes, or if one did
    /// meanwhile). The slots it names stay as they are for as long as the leaf lives.
    #[inline(always)]
    fn order(&self) -> Order {
        let mut spins = 0;
        loop {
            let v = self.ver.load(Ordering::Acquire);
            if v & BUSY == 0 {
                let n = (v & LIVE) as usize;
                let mut o = Order {
                    n,
                    idx: [0; TREE_LEAF_SLOTS],
                };
                for w in 0..n.div_ceil(8) {
                    let x = self.order[w].load(Ordering::Relaxed);
                    o.idx[w * 8..w * 8 + 8].copy_from_slice(&x.to_le_bytes());
                }
                fence(Ordering::Acquire);
                if self.ver.load(Ordering::Relaxed) == v {
                    return o;
                }
            }
            spin_wait(&mut spins);
        }
    }

    /// Slot `i`.
    ///
    /// # Safety
    ///
    /// Slot `i` was written before this call: it is named by an order read from this leaf
    /// (written before that order was published), or the caller wrote it.
    #[inline(always)]
    unsafe fn slot(&self, i: u8) -> &S {
        // SAFETY: the caller's contract: the slot is initialised, and it is never written
        // again while the leaf lives (only unwritten slots are written, `append`), so a
        // shared reference for as long as `self` is borrowed is sound.
        unsafe { &*self.slots[i as usize].get().cast::<S>() }
    }

    /// The `i`-th slot of order `o` (read from this leaf).
    #[inline(always)]
    fn at(&self, o: &Order, i: usize) -> &S {
        // SAFETY: `o` was read from this leaf (every caller's), so it names written slots.
        unsafe { self.slot(o.idx[i]) }
    }

    /// Writes a bitwise copy of `s` into the first unwritten slot; its number. The caller
    /// (the tree's only writer) checked that one is left.
    ///
    /// # Safety
    ///
    /// `s` is a valid slot the layout allows to copy bitwise; the caller holds the tree's
    /// lock.
    unsafe fn append(&self, s: &S) -> u8 {
        let i = self.used.load(Ordering::Relaxed) as usize;
        assert!(i < TREE_LEAF_SLOTS, "CobTree: leaf slots exhausted");
        // SAFETY: slot `i` was never written (the count only grows) and no order names it,
        // so no reader reads it; the writer is alone (the caller's lock). The copy is
        // published to readers by `publish`'s release store of the version.
        unsafe { ptr::copy_nonoverlapping(s, self.slots[i].get().cast::<S>(), 1) };
        self.used.store(i as u32 + 1, Ordering::Relaxed);
        i as u8
    }

    /// Publishes order `o` (the tree's only writer, under its lock): the seqlock's write.
    fn publish(&self, o: &Order) {
        let v = self.ver.load(Ordering::Relaxed);
        self.ver.store(v | BUSY, Ordering::Relaxed);
        fence(Ordering::Release);
        for w in 0..o.n.div_ceil(8) {
            let mut b = [0u8; 8];
            b.copy_from_slice(&o.idx[w * 8..w * 8 + 8]);
            self.order[w].store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        self.ver
            .store(((v & !(LIVE | BUSY)) + SEQ) | o.n as u64, Ordering::Release);
    }

    /// Slots written so far (the writer's count).
    fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed) as usize
    }
}

#[repr(C)]
struct Inner<P> {
    head: Head,
    seps: [MaybeUninit<P>; TREE_FANOUT - 1],
    kids: [AtomicPtr<Head>; TREE_FANOUT],
}

/// How many slots and children a map's tree nodes take (at most the arrays' sizes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caps {
    leaf: usize,
    inner: usize,
}

impl Caps {
    /// Node capacities for a map whose core leaves hold `cap` prefixes (tests use tiny ones).
    pub(crate) fn for_leaf_capacity(cap: usize) -> Self {
        Caps {
            leaf: cap.clamp(4, TREE_LEAF_SLOTS),
            inner: cap.clamp(4, TREE_FANOUT),
        }
    }

    fn min(cap: usize) -> usize {
        (cap / 4).max(2)
    }
}

/// A query: the key looked for and its word (the cell layout's first comparison).
pub(crate) struct Probe<'q, Q: ?Sized> {
    pub(crate) word: u64,
    pub(crate) key: &'q Q,
}

impl<Q: ?Sized> Clone for Probe<'_, Q> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Q: ?Sized> Copy for Probe<'_, Q> {}

/// How a tree's leaves hold entries.
///
/// # Safety
///
/// `Slot` and `Sep` values are copied bitwise and the copies are never dropped: an
/// implementation's types must be sound to duplicate that way (plain words, or types with
/// no drop glue).
pub(crate) unsafe trait Layout<K, V>: 'static {
    type Slot;
    type Sep;
    /// Whether slots hold entries themselves (else they name cells).
    const INLINE: bool;
    /// The separator that stands for slot `s` (a bitwise copy of its key, or its cell).
    fn sep(s: &Self::Slot) -> Self::Sep;
    fn slot_word(s: &Self::Slot) -> u64;
    fn sep_word(p: &Self::Sep) -> u64;
    /// The entry of slot `s`.
    ///
    /// # Safety
    ///
    /// `s` was read from a node reached while `g` was pinned, or under the tree's lock.
    unsafe fn entry<'g>(slab: &'g Slab<K, V>, s: &'g Self::Slot, g: &'g Guard) -> &'g (K, V);
    /// The key separator `p` stands for.
    ///
    /// # Safety
    ///
    /// As [`Self::entry`].
    unsafe fn sep_key<'g>(slab: &'g Slab<K, V>, p: &'g Self::Sep, g: &'g Guard) -> &'g K;
    /// A slot for entry `e` of word `w` (cell layout: the entry goes into a new cell).
    fn make(slab: &Slab<K, V>, w: u64, e: (K, V)) -> Self::Slot;
    /// A slot for the entry of one-entry cell `c` (word `w`): the cell itself (cell layout),
    /// or a copy of its entry (inline layout; the caller then retires the cell).
    ///
    /// # Safety
    ///
    /// `c` is a live one-entry cell read under the lock of its prefix while `g` is pinned.
    unsafe fn adopt(slab: &Slab<K, V>, w: u64, c: u64, g: &Guard) -> Self::Slot;
    /// The cell a slot names (cell layout).
    fn cell_of(s: &Self::Slot) -> Option<u64>;
    /// A one-entry cell holding slot `s`'s entry: the cell it names (cell layout), or a new
    /// cell holding a copy of it (inline layout).
    ///
    /// # Safety
    ///
    /// `s` is a live slot of a tree, read under its lock while `g` is pinned.
    unsafe fn to_cell(slab: &Slab<K, V>, s: &Self::Slot, g: &Guard) -> u64;
    /// A slot taken out of an owned tree: its entry (inline layout), or the cell holding it.
    fn into_entry(s: Self::Slot) -> Result<(K, V), u64>;
}

/// Entries inline in the leaves: for `K` and `V` that need no drop, copied bitwise.
pub(crate) struct Inline<K, V>(PhantomData<fn() -> (K, V)>);

// SAFETY: `Slot = (K, V)` and `Sep = K` are only used when neither needs dropping
// (`Trees::new` asserts it), so a bitwise copy that is never dropped leaks nothing and
// frees nothing twice.
unsafe impl<K: 'static, V: 'static> Layout<K, V> for Inline<K, V> {
    type Slot = (K, V);
    type Sep = K;
    const INLINE: bool = true;
    #[inline]
    fn sep(s: &(K, V)) -> K {
        // SAFETY: `K` has no drop glue (see the impl's proof): the copy and the original
        // never both drop anything.
        unsafe { ptr::read(&s.0) }
    }
    #[inline(always)]
    fn slot_word(_: &(K, V)) -> u64 {
        0
    }
    #[inline(always)]
    fn sep_word(_: &K) -> u64 {
        0
    }
    #[inline(always)]
    unsafe fn entry<'g>(_: &'g Slab<K, V>, s: &'g (K, V), _: &'g Guard) -> &'g (K, V) {
        s
    }
    #[inline(always)]
    unsafe fn sep_key<'g>(_: &'g Slab<K, V>, p: &'g K, _: &'g Guard) -> &'g K {
        p
    }
    #[inline(always)]
    fn make(_: &Slab<K, V>, _: u64, e: (K, V)) -> (K, V) {
        e
    }
    unsafe fn adopt(slab: &Slab<K, V>, _: u64, c: u64, g: &Guard) -> (K, V) {
        // SAFETY: the caller's contract: a live one-entry cell.
        let e = unsafe { slab.entry(c, g) };
        // SAFETY: `K` and `V` have no drop glue, so the copy and the cell's entry never
        // both drop anything.
        unsafe { ptr::read(e) }
    }
    fn cell_of(_: &(K, V)) -> Option<u64> {
        None
    }
    unsafe fn to_cell(slab: &Slab<K, V>, s: &(K, V), _: &Guard) -> u64 {
        // SAFETY: a copy of a live slot; no drop glue (as in `adopt`).
        slab.store(super::slab::Node::one(unsafe { ptr::read(s) }))
    }
    fn into_entry(s: (K, V)) -> Result<(K, V), u64> {
        Ok(s)
    }
}

/// Entries in the slab's cells; a slot is `[word, cell]` (the cell's number, untagged).
pub(crate) struct Cells<K, V>(PhantomData<fn() -> (K, V)>);

// SAFETY: slots and separators are two plain words.
unsafe impl<K: 'static, V: 'static> Layout<K, V> for Cells<K, V> {
    type Slot = [u64; 2];
    type Sep = [u64; 2];
    const INLINE: bool = false;
    #[inline(always)]
    fn sep(s: &[u64; 2]) -> [u64; 2] {
        *s
    }
    #[inline(always)]
    fn slot_word(s: &[u64; 2]) -> u64 {
        s[0]
    }
    #[inline(always)]
    fn sep_word(p: &[u64; 2]) -> u64 {
        p[0]
    }
    #[inline(always)]
    unsafe fn entry<'g>(slab: &'g Slab<K, V>, s: &'g [u64; 2], g: &'g Guard) -> &'g (K, V) {
        // SAFETY: the slot was in a node reached while `g` was pinned (or under the lock):
        // its cell held that entry then, and a cell named by a tree is retired only after
        // the node that names it is replaced (the caller's contract).
        unsafe { slab.entry(s[1], g) }
    }
    #[inline(always)]
    unsafe fn sep_key<'g>(slab: &'g Slab<K, V>, p: &'g [u64; 2], g: &'g Guard) -> &'g K {
        // SAFETY: as in `entry`: a separator names the cell of the smallest entry under its
        // child, and before that entry leaves the tree the separator is made to name the
        // next one (`Trees::apply`), so it names a live cell while it is in the tree.
        &unsafe { slab.entry(p[1], g) }.0
    }
    #[inline(always)]
    fn make(slab: &Slab<K, V>, w: u64, e: (K, V)) -> [u64; 2] {
        [w, slab.store(super::slab::Node::one(e))]
    }
    unsafe fn adopt(_: &Slab<K, V>, w: u64, c: u64, _: &Guard) -> [u64; 2] {
        [w, c]
    }
    fn cell_of(s: &[u64; 2]) -> Option<u64> {
        Some(s[1])
    }
    unsafe fn to_cell(_: &Slab<K, V>, s: &[u64; 2], _: &Guard) -> u64 {
        s[1]
    }
    fn into_entry(s: [u64; 2]) -> Result<(K, V), u64> {
        Err(s[1])
    }
}

/// A root: the pointer to a tree's top node, in its bucket's cell.
pub(crate) struct Root(AtomicPtr<Head>);

impl Root {
    fn new(n: NonNull<Head>) -> Self {
        Root(AtomicPtr::new(n.as_ptr()))
    }
}

/// Nodes replaced by a write, to be freed once no reader can hold them: the first few
/// inline (a write usually replaces one leaf), the rest in a vector.
pub(crate) struct Garbage {
    few: [DeadNode; 4],
    n: usize,
    more: Vec<DeadNode>,
}

/// A node out of its tree: freed (its slots not dropped) by [`DeadNode::free`]. Plain
/// data; whoever frees it frees it once.
#[derive(Clone, Copy)]
pub(crate) struct DeadNode {
    node: NonNull<Head>,
    free: unsafe fn(NonNull<Head>),
    bytes: usize,
}

// SAFETY: a dead node is plain memory: freeing it drops no key or value (slots are never
// dropped), so it may be freed on any thread.
unsafe impl Send for DeadNode {}
// SAFETY: as above; nothing reads it through a shared `DeadNode`.
unsafe impl Sync for DeadNode {}

impl DeadNode {
    /// Frees the node.
    ///
    /// # Safety
    ///
    /// No reader can hold the node any more, and this is its only `DeadNode`.
    pub(crate) unsafe fn free(self) {
        // SAFETY: the caller's contract; `free` is the node's own type's.
        unsafe { (self.free)(self.node) }
    }

    /// Bytes the node takes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// What an unused place of [`Garbage`] holds.
unsafe fn free_nothing(_: NonNull<Head>) {}

impl Garbage {
    pub(crate) fn new() -> Self {
        let none = DeadNode {
            node: NonNull::dangling(),
            free: free_nothing,
            bytes: 0,
        };
        Garbage {
            few: [none; 4],
            n: 0,
            more: Vec::new(),
        }
    }

    fn push(&mut self, d: DeadNode) {
        if self.n < self.few.len() {
            self.few[self.n] = d;
            self.n += 1;
        } else {
            self.more.push(d);
        }
    }

    /// Whether no node was replaced.
    pub(crate) fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The dead nodes, each once.
    pub(crate) fn into_nodes(self) -> impl Iterator<Item = DeadNode> {
        let Garbage { few, n, more } = self;
        few.into_iter().take(n).chain(more)
    }
}

/// What a write asks for at its key: keep the tree as it is, put this slot (insert or
/// replace), or remove the key's slot.
pub(crate) enum Change<S> {
    Keep,
    Put(S),
    Remove,
}

/// The trees of one map: its slab (the cell layout's entries) and node capacities.
pub(crate) struct Trees<'a, K, V, L> {
    slab: &'a Slab<K, V>,
    caps: Caps,
    _l: PhantomData<L>,
}

/// An inner node's separators (`len - 1` of them).
#[inline(always)]
fn seps<P>(n: &Inner<P>) -> &[P] {
    // SAFETY: as in `slots`: the first `len - 1` separators were written before the node
    // was published (`alloc_inner`) and are never written again.
    unsafe { core::slice::from_raw_parts(n.seps.as_ptr().cast::<P>(), n.head.len as usize - 1) }
}

/// Views a node by its head.
enum Node<'n, S, P> {
    Leaf(&'n Leaf<S>),
    Inner(&'n Inner<P>),
}

/// The node `h` points to.
///
/// # Safety
///
/// `h` is a live node of a tree of slots `S` and separators `P` (made by `alloc_leaf` or
/// `alloc_inner` of those types), alive for `'n`.
#[inline(always)]
unsafe fn node<'n, S, P>(h: NonNull<Head>) -> Node<'n, S, P> {
    // SAFETY: the caller's contract: the node is alive for `'n` and its head is never
    // written after publication; the height tells its type (a leaf's is 0), and both
    // types start with their `Head` (`repr(C)`), so the cast keeps the allocation's
    // provenance and points at the right type.
    if unsafe { h.as_ref() }.height == 0 {
        // SAFETY: as above: a leaf.
        Node::Leaf(unsafe { h.cast::<Leaf<S>>().as_ref() })
    } else {
        // SAFETY: as above: an inner node.
        Node::Inner(unsafe { h.cast::<Inner<P>>().as_ref() })
    }
}

/// A kid pointer as loaded (never null in a published inner node's first `len` slots).
#[inline(always)]
fn kid(n: &Inner<impl Sized>, i: usize) -> NonNull<Head> {
    NonNull::new(n.kids[i].load(Ordering::Acquire)).expect("CobTree: a tree kid is never null")
}

/// A new leaf holding bitwise copies of `srcs`, in order.
///
/// # Safety
///
/// Each pointer is valid for reads of one `S`, and `srcs.len() <= TREE_LEAF_SLOTS`.
unsafe fn alloc_leaf<S>(srcs: &[*const S]) -> NonNull<Head> {
    let fill = |f: &mut Fill<S>| {
        for s in srcs {
            // SAFETY: the caller's contract: a valid slot.
            f.push(unsafe { &**s });
        }
    };
    // SAFETY: `fill` copies valid slots (the caller's contract).
    unsafe { alloc_leaf_with::<S>(srcs.len(), fill) }
}

/// A new node's slot array being written, front to back.
struct Fill<S> {
    dst: *mut S,
    n: usize,
}

impl<S> Fill<S> {
    /// Appends bitwise copies of `src`: slots of a tree, or a new slot the caller does not
    /// drop (the layout allows bitwise copies that are never dropped).
    fn extend(&mut self, src: &[S]) {
        assert!(
            self.n + src.len() <= TREE_LEAF_SLOTS,
            "CobTree: leaf overflow"
        );
        // SAFETY: `dst` is the new leaf's array of `TREE_LEAF_SLOTS` slots, written only
        // here, within bounds (asserted); `src` is valid for reads and does not overlap a
        // new allocation.
        let to = self.dst.wrapping_add(self.n);
        // SAFETY: as above.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), to, src.len()) };
        self.n += src.len();
    }

    fn push(&mut self, s: &S) {
        self.extend(core::slice::from_ref(s));
    }
}

/// A new leaf of `len` slots, which `fill` writes (checked: exactly `len`).
///
/// # Safety
///
/// What `fill` copies are valid slots of the layout (bitwise copies it allows).
unsafe fn alloc_leaf_with<S>(len: usize, fill: impl FnOnce(&mut Fill<S>)) -> NonNull<Head> {
    debug_assert!(len <= TREE_LEAF_SLOTS);
    let mut b: Box<MaybeUninit<Leaf<S>>> = Box::new_uninit();
    let p = b.as_mut_ptr();
    // SAFETY: (this block and each below) `p` is the new, exclusively owned allocation; the
    // head, version, count and order are written, and the first `len` slots (valid `S`s,
    // the caller's contract); the rest stay uninitialised, which `MaybeUninit` allows.
    let head = unsafe { &raw mut (*p).head };
    // SAFETY: as above.
    unsafe {
        head.write(Head {
            height: 0,
            len: len as u32,
        })
    };
    // SAFETY: as above.
    let ver = unsafe { &raw mut (*p).ver };
    // SAFETY: as above.
    unsafe { ver.write(AtomicU64::new(len as u64)) };
    // SAFETY: as above.
    let used = unsafe { &raw mut (*p).used };
    // SAFETY: as above.
    unsafe { used.write(AtomicU32::new(len as u32)) };
    let mut idx = [0u8; TREE_LEAF_SLOTS];
    for (i, x) in idx.iter_mut().enumerate() {
        *x = i as u8;
    }
    let order = core::array::from_fn::<_, ORDER_WORDS, _>(|w| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&idx[w * 8..w * 8 + 8]);
        AtomicU64::new(u64::from_le_bytes(b))
    });
    // SAFETY: as above.
    let order_p = unsafe { &raw mut (*p).order };
    // SAFETY: as above.
    unsafe { order_p.write(order) };
    // SAFETY: as above (`UnsafeCell<MaybeUninit<S>>` has `S`'s layout).
    let dst = unsafe { &raw mut (*p).slots }.cast::<S>();
    let mut f = Fill { dst, n: 0 };
    fill(&mut f);
    assert_eq!(f.n, len, "CobTree: a leaf written short");
    // SAFETY: every field is initialised: the head, version, count and order above, the
    // slots are `MaybeUninit`.
    let leaf = unsafe { b.assume_init() };
    NonNull::from(Box::leak(leaf)).cast()
}

/// A new inner node of height `height` with children `kids` and separators `seps`
/// (`seps.len() + 1 == kids.len()`), bitwise copies. One child only for a node that is
/// never published (an underflowing node a write joins with its sibling, or a root that
/// gives way to its child).
///
/// # Safety
///
/// Each separator pointer is valid for reads of one `P`; `1 <= kids.len() <=
/// TREE_FANOUT`.
unsafe fn alloc_inner<P>(height: u32, seps: &[*const P], kids: &[NonNull<Head>]) -> NonNull<Head> {
    debug_assert!(!kids.is_empty() && kids.len() <= TREE_FANOUT && seps.len() + 1 == kids.len());
    let mut b: Box<MaybeUninit<Inner<P>>> = Box::new_uninit();
    let p = b.as_mut_ptr();
    // SAFETY: (this block and each below) as in `alloc_leaf`: the new allocation is written field
    // by field, within its arrays (`seps.len() < kids.len() <= TREE_FANOUT`); every kid
    // slot is initialised (the unused ones null), the separators past `seps.len()` stay
    // uninitialised (`MaybeUninit`).
    let head = unsafe { &raw mut (*p).head };
    // SAFETY: as above.
    unsafe {
        head.write(Head {
            height,
            len: kids.len() as u32,
        })
    };
    // SAFETY: as above.
    let dst = unsafe { &raw mut (*p).seps }.cast::<P>();
    for (i, s) in seps.iter().enumerate() {
        // SAFETY: as above.
        unsafe { ptr::copy_nonoverlapping(*s, dst.wrapping_add(i), 1) };
    }
    // SAFETY: as above.
    let k = unsafe { &raw mut (*p).kids }.cast::<AtomicPtr<Head>>();
    for i in 0..TREE_FANOUT {
        let v = kids.get(i).map_or(ptr::null_mut(), |n| n.as_ptr());
        // SAFETY: as above.
        unsafe { k.wrapping_add(i).write(AtomicPtr::new(v)) };
    }
    // SAFETY: every field is initialised (above).
    let inner = unsafe { b.assume_init() };
    NonNull::from(Box::leak(inner)).cast()
}

/// Frees a leaf of slots `S` (its slots are not dropped).
///
/// # Safety
///
/// `h` was made by `alloc_leaf::<S>`, is freed once, and no reader can hold it.
unsafe fn free_leaf<S>(h: NonNull<Head>) {
    // SAFETY: the caller's contract: the box `alloc_leaf` leaked, given back once.
    drop(unsafe { Box::from_raw(h.cast::<Leaf<S>>().as_ptr()) });
}

/// Frees an inner node of separators `P`.
///
/// # Safety
///
/// As [`free_leaf`], for `alloc_inner::<P>`.
unsafe fn free_inner<P>(h: NonNull<Head>) {
    // SAFETY: as in `free_leaf`.
    drop(unsafe { Box::from_raw(h.cast::<Inner<P>>().as_ptr()) });
}

/// One step of a path from the root: an inner node and the child taken.
#[derive(Clone, Copy)]
struct Step<'n, P> {
    node: &'n Inner<P>,
    /// The node's pointer as the tree holds it (what frees it: a pointer made from `node`
    /// would only allow reads).
    ptr: NonNull<Head>,
    at: usize,
}

/// Where a key is, or would go, in a tree: the path of inner nodes from the root with the
/// child taken in each, the leaf and the slot.
pub(crate) struct Spot<'r, S, P> {
    path: [MaybeUninit<Step<'r, P>>; MAX_HEIGHT],
    depth: usize,
    leaf: Option<&'r Leaf<S>>,
    leaf_ptr: NonNull<Head>,
    /// The leaf's order (read under the lock: it is the leaf's until this write).
    order: Order,
    at: Result<usize, usize>,
}

impl<S, P> Spot<'_, S, P> {
    /// A spot for [`Trees::find`] to fill.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        Spot {
            path: [const { MaybeUninit::uninit() }; MAX_HEIGHT],
            depth: 0,
            leaf: None,
            leaf_ptr: NonNull::dangling(),
            order: Order::EMPTY,
            at: Err(0),
        }
    }
}

/// What replaces a node after a write below it.
enum Up<P> {
    /// One new node.
    One(NonNull<Head>),
    /// Two new nodes and the separator between them (a split).
    Two(NonNull<Head>, ManuallyDrop<P>, NonNull<Head>),
}

/// The outcome of [`Trees::write`].
pub(crate) struct Wrote<S> {
    /// The slot the write took out of the tree (replaced or removed), a bitwise copy: the
    /// caller retires its cell (cell layout) or forgets it (inline layout).
    pub(crate) out: Option<ManuallyDrop<S>>,
    /// Whether an entry was added.
    pub(crate) added: bool,
}

impl<'a, K, V, L> Trees<'a, K, V, L>
where
    K: Ord + 'static,
    V: 'static,
    L: Layout<K, V>,
{
    pub(crate) fn new(slab: &'a Slab<K, V>, caps: Caps) -> Self {
        assert!(
            !L::INLINE || !(core::mem::needs_drop::<K>() || core::mem::needs_drop::<V>()),
            "CobTree: the inline tree layout is only for keys and values that need no drop"
        );
        Trees {
            slab,
            caps,
            _l: PhantomData,
        }
    }

    // ----- comparisons -----------------------------------------------------------------

    /// Slot `s` against probe `q`.
    ///
    /// # Safety
    ///
    /// As [`Layout::entry`].
    #[inline(always)]
    unsafe fn cmp_slot<'g, Q: ?Sized + Ord>(
        &self,
        s: &'g L::Slot,
        q: Probe<'_, Q>,
        g: &'g Guard,
    ) -> Cmp
    where
        K: Borrow<Q>,
    {
        match L::slot_word(s).cmp(&q.word) {
            // SAFETY: the caller's contract.
            Cmp::Equal => unsafe { L::entry(self.slab, s, g) }.0.borrow().cmp(q.key),
            o => o,
        }
    }

    /// Separator `p` against probe `q`.
    ///
    /// # Safety
    ///
    /// As [`Layout::entry`].
    #[inline(always)]
    unsafe fn cmp_sep<'g, Q: ?Sized + Ord>(
        &self,
        p: &'g L::Sep,
        q: Probe<'_, Q>,
        g: &'g Guard,
    ) -> Cmp
    where
        K: Borrow<Q>,
    {
        match L::sep_word(p).cmp(&q.word) {
            // SAFETY: the caller's contract.
            Cmp::Equal => unsafe { L::sep_key(self.slab, p, g) }.borrow().cmp(q.key),
            o => o,
        }
    }

    /// The child of `n` whose keys may include `q`: the number of separators `<= q`.
    ///
    /// # Safety
    ///
    /// `n` was reached while `g` was pinned, or under the lock.
    #[inline(always)]
    unsafe fn route<'g, Q: ?Sized + Ord>(
        &self,
        n: &'g Inner<L::Sep>,
        q: Probe<'_, Q>,
        g: &'g Guard,
    ) -> usize
    where
        K: Borrow<Q>,
    {
        // SAFETY: the caller's contract covers the separators of `n`.
        seps(n).partition_point(|p| unsafe { self.cmp_sep(p, q, g) } != Cmp::Greater)
    }

    /// Where `q` is in order `o` of leaf `l` (`Ok`) or would go (`Err`): a position in
    /// the order.
    ///
    /// # Safety
    ///
    /// As [`Self::route`]; `o` was read from `l`.
    #[inline(always)]
    unsafe fn search<'g, Q: ?Sized + Ord>(
        &self,
        l: &'g Leaf<L::Slot>,
        o: &Order,
        q: Probe<'_, Q>,
        g: &'g Guard,
    ) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        o.live().binary_search_by(|&i| {
            // SAFETY: `o` was read from `l` (the caller's contract), so it names written
            // slots.
            let s = unsafe { l.slot(i) };
            // SAFETY: the caller's contract covers the slots of `l` that `o` names.
            unsafe { self.cmp_slot(s, q, g) }
        })
    }

    // ----- reads -----------------------------------------------------------------------

    /// The entry equal to `q` in the tree of `root`, while `g` lives.
    ///
    /// # Safety
    ///
    /// `root` is a live tree's root of this layout, reached while `g` was pinned (or under
    /// its lock): its node stays alive while `g` lives.
    #[inline]
    pub(crate) unsafe fn get<'g, Q: ?Sized + Ord>(
        &self,
        root: &'g Root,
        q: Probe<'_, Q>,
        g: &'g Guard,
    ) -> Option<&'g (K, V)>
    where
        K: Borrow<Q>,
        'a: 'g,
    {
        let mut h = NonNull::new(root.0.load(Ordering::Acquire))?;
        loop {
            // SAFETY: `h` was loaded from the root or a child slot of a node reached while
            // `g` was pinned, so it was in the tree then: retired after that, freed only
            // after `g` unpins (the module's reader argument).
            match unsafe { node::<L::Slot, L::Sep>(h) } {
                Node::Inner(n) => {
                    // SAFETY: as above.
                    let i = unsafe { self.route(n, q, g) };
                    h = kid(n, i);
                }
                Node::Leaf(l) => {
                    let o = l.order();
                    // SAFETY: as above.
                    let i = unsafe { self.search(l, &o, q, g) }.ok()?;
                    // SAFETY: as above.
                    return Some(unsafe { L::entry(self.slab, l.at(&o, i), g) });
                }
            }
        }
    }

    /// Feeds every entry of the tree of `root`, in order, to `f` (a recursive walk of the
    /// nodes as they are while it runs).
    ///
    /// # Safety
    ///
    /// As [`Self::get`].
    #[inline]
    pub(crate) unsafe fn fold<'g, B>(
        &self,
        root: &'g Root,
        g: &'g Guard,
        init: B,
        f: &mut impl FnMut(B, &'g (K, V)) -> B,
    ) -> B
    where
        'a: 'g,
    {
        let mut last = None;
        match NonNull::new(root.0.load(Ordering::Acquire)) {
            // SAFETY: the caller's contract.
            Some(h) => unsafe { self.fold_node(h, g, init, f, &mut last) },
            None => init,
        }
    }

    /// `last`: the last entry fed so far; each leaf's entries not past it are skipped (a
    /// key that moved between neighbouring leaves may show in both, see
    /// [`Cursor::step`]).
    ///
    /// # Safety
    ///
    /// `h` was reached while `g` was pinned (as in [`Self::get`]).
    unsafe fn fold_node<'g, B>(
        &self,
        h: NonNull<Head>,
        g: &'g Guard,
        init: B,
        f: &mut impl FnMut(B, &'g (K, V)) -> B,
        last: &mut Option<&'g (K, V)>,
    ) -> B
    where
        'a: 'g,
    {
        // SAFETY: the caller's contract.
        match unsafe { node::<'g, L::Slot, L::Sep>(h) } {
            Node::Leaf(l) => {
                let o = l.order();
                // SAFETY: the caller's contract covers the leaf's slots, and the order read
                // from it names written ones.
                let at = |k: usize| unsafe { L::entry(self.slab, l.at(&o, k), g) };
                let mut from = 0;
                if let Some(p) = *last {
                    while from < o.len() && at(from).0 <= p.0 {
                        from += 1;
                    }
                }
                if from < o.len() {
                    *last = Some(at(o.len() - 1));
                }
                (from..o.len()).fold(init, |acc, k| f(acc, at(k)))
            }
            Node::Inner(n) => (0..n.head.len as usize).fold(init, |acc, i| {
                // SAFETY: a child of a node reached while `g` was pinned.
                unsafe { self.fold_node(kid(n, i), g, acc, f, last) }
            }),
        }
    }

    /// A cursor at one end of the tree of `root` (`back`: after its last entry), or at a
    /// bound: `from` is the first (front) or last (back) key to include, `Bound`-style.
    ///
    /// # Safety
    ///
    /// As [`Self::get`].
    pub(crate) unsafe fn cursor<'g, Q: ?Sized + Ord>(
        &self,
        root: &'g Root,
        back: bool,
        from: core::ops::Bound<Probe<'_, Q>>,
        g: &'g Guard,
    ) -> Cursor<'g, L::Slot, L::Sep>
    where
        K: Borrow<Q>,
    {
        use core::ops::Bound::*;
        let mut c = Cursor::empty();
        let Some(mut h) = NonNull::new(root.0.load(Ordering::Acquire)) else {
            return c;
        };
        loop {
            // SAFETY: as in `get`.
            match unsafe { node::<'g, L::Slot, L::Sep>(h) } {
                Node::Inner(n) => {
                    let at = match from {
                        Unbounded if back => n.head.len as usize - 1,
                        Unbounded => 0,
                        // SAFETY: as in `get`.
                        Included(q) | Excluded(q) => unsafe { self.route(n, q, g) },
                    };
                    c.push(n, at);
                    h = kid(n, at);
                }
                Node::Leaf(l) => {
                    let o = l.order();
                    let at = match from {
                        Unbounded if back => o.len(),
                        Unbounded => 0,
                        Included(q) | Excluded(q) => {
                            // Back from `Included` and front from `Excluded`: past the
                            // slots `<= q`; the others: past the slots `< q`.
                            let past_equal = back == matches!(from, Included(_));
                            o.live().partition_point(|&i| {
                                // SAFETY: `o` was read from `l`: a written slot.
                                let s = unsafe { l.slot(i) };
                                // SAFETY: as in `get`, the leaf's slots its order names.
                                let c = unsafe { self.cmp_slot(s, q, g) };
                                c == Cmp::Less || (past_equal && c == Cmp::Equal)
                            })
                        }
                    };
                    c.leaf = Some(l);
                    c.order = o;
                    c.at = at;
                    return c;
                }
            }
        }
    }

    // ----- writes (the caller holds the tree's lock) -------------------------------------

    /// A new tree of the two slots `a < b`; its root.
    pub(crate) fn pair(&self, a: L::Slot, b: L::Slot) -> Root {
        let (a, b) = (ManuallyDrop::new(a), ManuallyDrop::new(b));
        // SAFETY: two valid slots; 2 <= TREE_LEAF_SLOTS. The locals are never dropped: the
        // leaf's copies replace them.
        Root::new(unsafe { alloc_leaf::<L::Slot>(&[&*a, &*b]) })
    }

    /// The one slot of the tree if it has one entry (the caller collapses such a tree).
    ///
    /// # Safety
    ///
    /// `root` is a live tree's root of this layout, under its lock.
    pub(crate) unsafe fn single<'r>(&self, root: &'r Root) -> Option<&'r L::Slot> {
        let h = NonNull::new(root.0.load(Ordering::Acquire))?;
        // SAFETY: the caller's contract: the root's node is live while the lock is held.
        match unsafe { node::<'r, L::Slot, L::Sep>(h) } {
            Node::Leaf(l) => {
                let o = l.order();
                debug_assert!(o.len() >= 1, "CobTree: a tree keeps at least one entry");
                (o.len() == 1).then(|| l.at(&o, 0))
            }
            Node::Inner(_) => None,
        }
    }

    /// Where `q` is (or would go) in the tree of `root`: the path to its leaf and its slot,
    /// written into `spot` (a fresh one: [`Spot::new`]; the caller's, so the path is not
    /// moved).
    ///
    /// # Safety
    ///
    /// `root` is a live tree's root of this layout, and the caller holds its lock (no other
    /// writer) until the spot is applied or dropped; `g` is pinned.
    #[inline(always)]
    pub(crate) unsafe fn find<'r, Q: ?Sized + Ord>(
        &self,
        root: &'r Root,
        q: Probe<'_, Q>,
        g: &Guard,
        spot: &mut Spot<'r, L::Slot, L::Sep>,
    ) where
        K: Borrow<Q>,
    {
        debug_assert!(spot.depth == 0 && spot.leaf.is_none());
        let mut h =
            NonNull::new(root.0.load(Ordering::Acquire)).expect("CobTree: a tree has a root");
        loop {
            // SAFETY: under the lock every node of the tree is live (only this writer
            // retires nodes, after the spot is applied).
            match unsafe { node::<'r, L::Slot, L::Sep>(h) } {
                Node::Inner(n) => {
                    // SAFETY: as above.
                    let at = unsafe { self.route(n, q, g) };
                    assert!(
                        spot.depth < MAX_HEIGHT,
                        "CobTree: tree deeper than {MAX_HEIGHT}"
                    );
                    spot.path[spot.depth].write(Step {
                        node: n,
                        at,
                        ptr: h,
                    });
                    spot.depth += 1;
                    h = kid(n, at);
                }
                Node::Leaf(l) => {
                    spot.leaf = Some(l);
                    spot.leaf_ptr = h;
                    spot.order = l.order();
                    // SAFETY: as above.
                    spot.at = unsafe { self.search(l, &spot.order, q, g) };
                    return;
                }
            }
        }
    }

    /// The entry at `spot`, if its key is there.
    ///
    /// # Safety
    ///
    /// `spot` was found under the lock still held, with `g` pinned.
    pub(crate) unsafe fn entry_at<'r>(
        &self,
        spot: &Spot<'r, L::Slot, L::Sep>,
        g: &'r Guard,
    ) -> Option<&'r (K, V)>
    where
        'a: 'r,
    {
        let l = spot.leaf.expect("a found spot has a leaf");
        let i = spot.at.ok()?;
        // SAFETY: under the lock, a live slot of the leaf.
        Some(unsafe { L::entry(self.slab, l.at(&spot.order, i), g) })
    }

    /// Changes the tree at `spot` as `change` says: the nodes it replaced go to `garbage`.
    ///
    /// # Safety
    ///
    /// `spot` was found in the tree of `root` under the lock, which is still held, and the
    /// tree did not change since; `g` is pinned.
    pub(crate) unsafe fn apply(
        &self,
        root: &Root,
        spot: &mut Spot<'_, L::Slot, L::Sep>,
        change: Change<L::Slot>,
        g: &Guard,
        garbage: &mut Garbage,
    ) -> Wrote<L::Slot> {
        let _ = g;
        let leaf = spot.leaf.expect("a found spot has a leaf");
        let found = spot.at;
        let ord = spot.order;
        let n = ord.len();
        // The slot leaving the tree is the smallest of its leaf: the separator that names
        // its cell (cell layout) first names the slot that takes its place, so no separator
        // names a cell once it is retired. Found by position, not by comparing keys.
        if !L::INLINE && found == Ok(0) {
            let next = match &change {
                Change::Put(new) => Some(new as *const L::Slot),
                Change::Remove => (n > 1).then(|| leaf.at(&ord, 1) as *const L::Slot),
                Change::Keep => None,
            };
            if let Some(next) = next {
                // SAFETY: under the lock, the spot's path is the live tree's; `next` is a
                // live slot of the leaf or the new one.
                unsafe { self.rename_sep(root, spot, next, garbage) };
            }
        }
        // SAFETY: the first `depth` steps were written by `find` (and kept current by
        // `rename_sep`).
        let path: &[Step<'_, L::Sep>] =
            unsafe { core::slice::from_raw_parts(spot.path.as_ptr().cast(), spot.depth) };
        let mut wrote = Wrote {
            out: None,
            added: false,
        };
        // Whether the leaf has an unwritten slot this write may use (a map made with small
        // leaves uses as many as its leaf capacity, so tests reach every path).
        let room = leaf.used() < self.caps.leaf;
        let mut srcs: [*const L::Slot; TREE_LEAF_SLOTS + 1];
        let up = match (change, found) {
            (Change::Keep, _) | (Change::Remove, Err(_)) => return wrote,
            (Change::Put(new), Ok(i)) => {
                let new = ManuallyDrop::new(new);
                // SAFETY: slot `i` of the order is live in the leaf (bitwise copy; the
                // caller retires it).
                wrote.out = Some(ManuallyDrop::new(unsafe { ptr::read(leaf.at(&ord, i)) }));
                if room {
                    // SAFETY: a valid slot (never dropped here: the leaf's copy is the
                    // tree's); under the lock.
                    let j = unsafe { leaf.append(&new) };
                    let mut o = ord;
                    o.idx[i] = j;
                    leaf.publish(&o);
                    return wrote;
                }
                // SAFETY: `n` slots: the leaf's live ones, slot `i` then replaced by `new`
                // (bitwise; the old leaf keeps its own copies, never dropped).
                Up::One(unsafe {
                    alloc_leaf_with::<L::Slot>(n, |f| {
                        for k in 0..n {
                            f.push(if k == i { &new } else { leaf.at(&ord, k) });
                        }
                    })
                })
            }
            (Change::Put(new), Err(i)) if n < self.caps.leaf => {
                wrote.added = true;
                let new = ManuallyDrop::new(new);
                if room {
                    // SAFETY: as above.
                    let j = unsafe { leaf.append(&new) };
                    leaf.publish(&ord.insert(i, j));
                    return wrote;
                }
                // SAFETY: `n + 1 <= caps.leaf` slots: the leaf's before `i`, `new`, the
                // leaf's from `i` on (bitwise copies).
                Up::One(unsafe {
                    alloc_leaf_with::<L::Slot>(n + 1, |f| {
                        for k in 0..n {
                            if k == i {
                                f.push(&new);
                            }
                            f.push(leaf.at(&ord, k));
                        }
                        if i == n {
                            f.push(&new);
                        }
                    })
                })
            }
            (Change::Put(new), Err(i)) => {
                wrote.added = true;
                let new = ManuallyDrop::new(new);
                srcs = [ptr::null(); TREE_LEAF_SLOTS + 1];
                for (j, src) in srcs.iter_mut().enumerate().take(n + 1) {
                    *src = match j.cmp(&i) {
                        Cmp::Less => leaf.at(&ord, j),
                        Cmp::Equal => &*new,
                        Cmp::Greater => leaf.at(&ord, j - 1),
                    };
                }
                // SAFETY: as above; the leaf's slots and `new`, `n + 1` of them.
                unsafe { self.leaves_of(&srcs[..=n]) }
            }
            (Change::Remove, Ok(i)) => {
                // SAFETY: slot `i` of the order is live in the leaf.
                wrote.out = Some(ManuallyDrop::new(unsafe { ptr::read(leaf.at(&ord, i)) }));
                if path.is_empty() || n > Caps::min(self.caps.leaf) {
                    // No underflow (or the root): the leaf stays, its order without `i`.
                    leaf.publish(&ord.remove(i));
                    return wrote;
                }
                // SAFETY: the leaf's live slots but slot `i` (bitwise copies).
                Up::One(unsafe {
                    alloc_leaf_with::<L::Slot>(n - 1, |f| {
                        for k in (0..n).filter(|&k| k != i) {
                            f.push(leaf.at(&ord, k));
                        }
                    })
                })
            }
        };
        garbage.push_leaf::<L::Slot>(spot.leaf_ptr);
        // SAFETY: under the lock, the path's nodes are the live tree's.
        unsafe { self.rise(root, path, up, garbage) };
        wrote
    }

    /// The spot of the first (`back`: the last) entry of the tree of `root`.
    ///
    /// # Safety
    ///
    /// As [`Self::find`].
    pub(crate) unsafe fn end<'r>(&self, root: &'r Root, back: bool) -> Spot<'r, L::Slot, L::Sep> {
        let mut spot = Spot {
            path: [const { MaybeUninit::uninit() }; MAX_HEIGHT],
            depth: 0,
            leaf: None,
            leaf_ptr: NonNull::dangling(),
            order: Order::EMPTY,
            at: Err(0),
        };
        let mut h =
            NonNull::new(root.0.load(Ordering::Acquire)).expect("CobTree: a tree has a root");
        loop {
            // SAFETY: as in `find`.
            match unsafe { node::<'r, L::Slot, L::Sep>(h) } {
                Node::Inner(n) => {
                    let at = if back { n.head.len as usize - 1 } else { 0 };
                    assert!(
                        spot.depth < MAX_HEIGHT,
                        "CobTree: tree deeper than {MAX_HEIGHT}"
                    );
                    spot.path[spot.depth].write(Step {
                        node: n,
                        at,
                        ptr: h,
                    });
                    spot.depth += 1;
                    h = kid(n, at);
                }
                Node::Leaf(l) => {
                    spot.leaf = Some(l);
                    spot.leaf_ptr = h;
                    spot.order = l.order();
                    let len = spot.order.len();
                    spot.at = if len == 0 {
                        Err(0)
                    } else {
                        Ok(if back { len - 1 } else { 0 })
                    };
                    return spot;
                }
            }
        }
    }

    /// The separator that names the first slot of `spot`'s leaf (the deepest step of its
    /// path that is not a first child; none if the leaf is the tree's first) names `next`
    /// instead: its node is rebuilt and published in its parent's child slot, and `spot`'s
    /// path now goes through the new node.
    ///
    /// # Safety
    ///
    /// Under the lock; `spot` is the live tree's; `next` points to a valid slot.
    unsafe fn rename_sep<'r>(
        &self,
        root: &Root,
        spot: &mut Spot<'r, L::Slot, L::Sep>,
        next: *const L::Slot,
        garbage: &mut Garbage,
    ) {
        // SAFETY: the first `depth` steps were written by `find`.
        let path: &[Step<'_, L::Sep>] =
            unsafe { core::slice::from_raw_parts(spot.path.as_ptr().cast(), spot.depth) };
        let Some(d) = path.iter().rposition(|st| st.at > 0) else {
            return;
        };
        let Step { node: n, at, ptr } = path[d];
        // SAFETY: the caller's contract.
        let sep = ManuallyDrop::new(L::sep(unsafe { &*next }));
        let ps = seps(n);
        let len = n.head.len as usize;
        let mut ss: [*const L::Sep; TREE_FANOUT] = [ptr::null(); TREE_FANOUT];
        let mut ks: [NonNull<Head>; TREE_FANOUT] = [NonNull::dangling(); TREE_FANOUT];
        for j in 0..len {
            ks[j] = kid(n, j);
            if j + 1 < len {
                ss[j] = if j + 1 == at { &*sep } else { &ps[j] };
            }
        }
        // SAFETY: the node's own children and separators, one replaced.
        let new = unsafe { alloc_inner::<L::Sep>(n.head.height, &ss[..len - 1], &ks[..len]) };
        if d == 0 {
            root.0.store(new.as_ptr(), Ordering::Release);
        } else {
            let Step {
                node: p, at: pa, ..
            } = path[d - 1];
            p.kids[pa].store(new.as_ptr(), Ordering::Release);
        }
        garbage.push_inner::<L::Sep>(ptr);
        let new_ptr = new;
        // SAFETY: `new` is live (just published) for as long as the lock is held.
        let Node::Inner(new) = (unsafe { node::<'r, L::Slot, L::Sep>(new) }) else {
            unreachable!("an inner node")
        };
        spot.path[d].write(Step {
            node: new,
            at,
            ptr: new_ptr,
        });
    }

    /// `f` sees the entry equal to `q` (or `None`) and says what to do; the tree changes
    /// accordingly ([`Self::find`] then [`Self::apply`]).
    ///
    /// # Safety
    ///
    /// As [`Self::find`].
    pub(crate) unsafe fn write<Q: ?Sized + Ord>(
        &self,
        root: &Root,
        q: Probe<'_, Q>,
        g: &Guard,
        garbage: &mut Garbage,
        f: impl FnOnce(Option<&(K, V)>) -> Change<L::Slot>,
    ) -> Wrote<L::Slot>
    where
        K: Borrow<Q>,
    {
        let mut spot = Spot::new();
        // SAFETY: the caller's contract.
        unsafe { self.find(root, q, g, &mut spot) };
        // SAFETY: the spot just found, under the lock.
        let change = f(unsafe { self.entry_at(&spot, g) });
        // SAFETY: as above; the tree did not change since (`f` cannot reach it).
        unsafe { self.apply(root, &mut spot, change, g, garbage) }
    }

    /// One leaf of `srcs` if they fit, else two halves and the separator between them.
    ///
    /// # Safety
    ///
    /// Each pointer is valid for reads of a slot; `srcs.len() <= 2 * self.caps.leaf`.
    unsafe fn leaves_of(&self, srcs: &[*const L::Slot]) -> Up<L::Sep> {
        if srcs.len() <= self.caps.leaf {
            // SAFETY: the caller's contract.
            return Up::One(unsafe { alloc_leaf(srcs) });
        }
        let mid = srcs.len() / 2;
        // SAFETY: (this block and each below) the caller's contract; each half fits in a leaf.
        let a = unsafe { alloc_leaf(&srcs[..mid]) };
        // SAFETY: as above.
        let b = unsafe { alloc_leaf(&srcs[mid..]) };
        // SAFETY: as above: a valid slot.
        let sep = L::sep(unsafe { &*srcs[mid] });
        Up::Two(a, ManuallyDrop::new(sep), b)
    }

    /// Inner nodes of height `height` for children `kids` and separators `seps`: one if they
    /// fit, else two halves and the separator between them (the middle one moves up).
    ///
    /// # Safety
    ///
    /// Each separator pointer is valid for reads; `2 <= kids.len() <= 2 * self.caps.inner`,
    /// `seps.len() + 1 == kids.len()`.
    unsafe fn inners_of(
        &self,
        height: u32,
        seps: &[*const L::Sep],
        kids: &[NonNull<Head>],
    ) -> Up<L::Sep> {
        if kids.len() <= self.caps.inner {
            // SAFETY: the caller's contract.
            return Up::One(unsafe { alloc_inner(height, seps, kids) });
        }
        let mid = kids.len() / 2;
        // SAFETY: (this block and each below) the caller's contract; each half has at least 2 children
        // and fits.
        let a = unsafe { alloc_inner(height, &seps[..mid - 1], &kids[..mid]) };
        // SAFETY: as above.
        let b = unsafe { alloc_inner(height, &seps[mid..], &kids[mid..]) };
        // SAFETY: as above: a valid separator, copied bitwise (the layout allows it).
        let sep = unsafe { ptr::read(seps[mid - 1]) };
        Up::Two(a, ManuallyDrop::new(sep), b)
    }

    /// Puts what replaced the node at the end of `path` (the leaf below the last step) in
    /// place, climbing as far as nodes split or underflow: a single node that does not
    /// underflow goes into its parent's child slot (or the root); anything else rebuilds
    /// the parent.
    ///
    /// # Safety
    ///
    /// Under the lock; `path` is the live tree's path to the replaced node.
    unsafe fn rise(
        &self,
        root: &Root,
        path: &[Step<'_, L::Sep>],
        mut up: Up<L::Sep>,
        garbage: &mut Garbage,
    ) {
        let mut d = path.len();
        loop {
            match up {
                Up::One(n) if d == 0 => {
                    // A root inner node left with one child gives way to it.
                    // SAFETY: `n` is a node this write made, not yet published.
                    let n = match unsafe { node::<L::Slot, L::Sep>(n) } {
                        Node::Inner(i) if i.head.len == 1 => {
                            let k = kid(i, 0);
                            // SAFETY: made by `alloc_inner` here, never published.
                            unsafe { free_inner::<L::Sep>(n) };
                            k
                        }
                        _ => n,
                    };
                    root.0.store(n.as_ptr(), Ordering::Release);
                    return;
                }
                Up::Two(a, sep, b) if d == 0 => {
                    // SAFETY: the old root's height is `a`'s.
                    let height = unsafe { a.as_ref() }.height + 1;
                    // SAFETY: one separator, two children.
                    let n = unsafe { alloc_inner(height, &[&*sep], &[a, b]) };
                    root.0.store(n.as_ptr(), Ordering::Release);
                    return;
                }
                _ => {}
            }
            let Step { node: p, at, ptr } = path[d - 1];
            let ps = seps(p);
            let len = p.head.len as usize;
            match up {
                Up::One(n) if !self.under(n) => {
                    // In place: the parent's separators do not change.
                    p.kids[at].store(n.as_ptr(), Ordering::Release);
                    return;
                }
                Up::One(n) => {
                    // `n` underflows: merge with or borrow from a sibling, rebuilding `p`.
                    garbage.push_inner::<L::Sep>(ptr);
                    // SAFETY: under the lock; `n` is this write's, the sibling `p`'s.
                    up = unsafe { self.rebalance(p, at, n, garbage) };
                    d -= 1;
                }
                Up::Two(a, sep, b) => {
                    garbage.push_inner::<L::Sep>(ptr);
                    // `p` with child `at` replaced by `a`, `sep`, `b`.
                    let mut ss: [*const L::Sep; TREE_FANOUT] = [ptr::null(); TREE_FANOUT];
                    let mut ks: [NonNull<Head>; TREE_FANOUT + 1] =
                        [NonNull::dangling(); TREE_FANOUT + 1];
                    for j in 0..at {
                        ks[j] = kid(p, j);
                        ss[j] = &ps[j];
                    }
                    ks[at] = a;
                    ks[at + 1] = b;
                    ss[at] = &*sep;
                    for j in at + 1..len {
                        ks[j + 1] = kid(p, j);
                        ss[j] = &ps[j - 1];
                    }
                    // SAFETY: `len + 1` children, `len` separators (the parent's, live, and
                    // `sep`), at most `TREE_FANOUT + 1 <= 2 * caps.inner`.
                    up = unsafe { self.inners_of(p.head.height, &ss[..len], &ks[..len + 1]) };
                    d -= 1;
                }
            }
        }
    }

    /// Whether node `n` (just made) has fewer entries or children than a non-root node may.
    fn under(&self, n: NonNull<Head>) -> bool {
        // SAFETY: `n` is a node this write made.
        let h = unsafe { n.as_ref() };
        let cap = if h.height == 0 {
            self.caps.leaf
        } else {
            self.caps.inner
        };
        (h.len as usize) < Caps::min(cap)
    }

    /// Child `at` of `p` became `n`, which underflows: `n` and a sibling merge, or share
    /// their contents evenly; the new `p` (which may underflow in turn).
    ///
    /// # Safety
    ///
    /// Under the lock; `p` is live; `n` was made by this write (and is consumed: freed or
    /// built into the result).
    unsafe fn rebalance(
        &self,
        p: &Inner<L::Sep>,
        at: usize,
        n: NonNull<Head>,
        garbage: &mut Garbage,
    ) -> Up<L::Sep> {
        let len = p.head.len as usize;
        let ps = seps(p);
        // The pair (left, right) of children `li`, `li + 1`: `n` and its right sibling, or
        // its left sibling and `n` when it is the last child.
        let li = if at + 1 < len { at } else { at - 1 };
        let (left, right) = if li == at {
            (n, kid(p, at + 1))
        } else {
            (kid(p, at - 1), n)
        };
        // SAFETY: both are nodes of this height, live while the lock is held: the sibling
        // is `p`'s child, `n` was made by this write.
        let joined = unsafe { self.join(left, &ps[li], right) };
        // The sibling is `p`'s live child (retired); `n` is this write's, never published,
        // and `join` copied what it needed (its children are not freed).
        let (ours, sibling) = if li == at {
            (left, right)
        } else {
            (right, left)
        };
        // SAFETY: as said: `n`, never published, freed once.
        unsafe { free_node::<L::Slot, L::Sep>(ours) };
        // SAFETY: the sibling is a live node of the tree.
        unsafe { garbage.push_node::<L::Slot, L::Sep>(sibling) };
        // `p` with children `li`, `li + 1` (and the separator between them) replaced by
        // what `join` made.
        let mut ss: [*const L::Sep; TREE_FANOUT] = [ptr::null(); TREE_FANOUT];
        let mut ks: [NonNull<Head>; TREE_FANOUT] = [NonNull::dangling(); TREE_FANOUT];
        let (mut nk, mut ns) = (0, 0);
        for (j, sep) in ps.iter().enumerate().take(li) {
            ks[nk] = kid(p, j);
            ss[ns] = sep;
            (nk, ns) = (nk + 1, ns + 1);
        }
        match &joined {
            Up::One(m) => {
                ks[nk] = *m;
                nk += 1;
            }
            Up::Two(a, sep, b) => {
                ks[nk] = *a;
                ss[ns] = &**sep;
                ks[nk + 1] = *b;
                (nk, ns) = (nk + 2, ns + 1);
            }
        }
        for j in li + 2..len {
            ss[ns] = &ps[j - 1];
            ks[nk] = kid(p, j);
            (nk, ns) = (nk + 1, ns + 1);
        }
        debug_assert_eq!(ns + 1, nk);
        // SAFETY: `nk >= 1` children and `nk - 1` separators (live ones of `p`, or
        // `join`'s). A lone child is left to the level above (a root gives way to it; any
        // other node underflows and is joined with its sibling).
        Up::One(unsafe { alloc_inner(p.head.height, &ss[..ns], &ks[..nk]) })
    }

    /// Siblings `left` and `right` (with separator `sep` between them in their parent) as
    /// one node if their contents fit, else two nodes sharing them evenly and the
    /// separator between those.
    ///
    /// # Safety
    ///
    /// Both are live nodes of the same height of this tree (under the lock).
    unsafe fn join(&self, left: NonNull<Head>, sep: &L::Sep, right: NonNull<Head>) -> Up<L::Sep> {
        // SAFETY: the caller's contract.
        let l = unsafe { node::<L::Slot, L::Sep>(left) };
        // SAFETY: the caller's contract.
        let r = unsafe { node::<L::Slot, L::Sep>(right) };
        match (l, r) {
            (Node::Leaf(a), Node::Leaf(b)) => {
                let mut srcs: [*const L::Slot; 2 * TREE_LEAF_SLOTS] =
                    [ptr::null(); 2 * TREE_LEAF_SLOTS];
                let mut n = 0;
                let (oa, ob) = (a.order(), b.order());
                let all = oa.live().iter().map(|&i| (a, i));
                for (l, i) in all.chain(ob.live().iter().map(|&i| (b, i))) {
                    // SAFETY: a slot its leaf's order names.
                    srcs[n] = unsafe { l.slot(i) };
                    n += 1;
                }
                // SAFETY: live slots, at most two leaves' worth.
                unsafe { self.leaves_of(&srcs[..n]) }
            }
            (Node::Inner(a), Node::Inner(b)) => {
                let mut ss: [*const L::Sep; 2 * TREE_FANOUT] = [ptr::null(); 2 * TREE_FANOUT];
                let mut ks: [NonNull<Head>; 2 * TREE_FANOUT] =
                    [NonNull::dangling(); 2 * TREE_FANOUT];
                let (mut nk, mut ns) = (0, 0);
                for (i, x) in [a, b].into_iter().enumerate() {
                    if i == 1 {
                        ss[ns] = sep;
                        ns += 1;
                    }
                    for s in seps(x) {
                        ss[ns] = s;
                        ns += 1;
                    }
                    for j in 0..x.head.len as usize {
                        ks[nk] = kid(x, j);
                        nk += 1;
                    }
                }
                // SAFETY: `nk` children, `nk - 1` live separators.
                unsafe { self.inners_of(a.head.height, &ss[..ns], &ks[..nk]) }
            }
            _ => unreachable!("CobTree: siblings of different heights"),
        }
    }

    /// Every slot of the tree of `root` read out, in order (bitwise), and its nodes to
    /// `garbage`; readers may go on reading the tree until its nodes are freed.
    ///
    /// # Safety
    ///
    /// Under the lock (or with the map owned), and the tree is leaving the map (no writer
    /// uses it again); the caller decides what the slots' copies are (`forget` them, or
    /// own their entries when the map is owned).
    pub(crate) unsafe fn take_all(
        &self,
        root: &Root,
        garbage: &mut Garbage,
        out: &mut impl FnMut(L::Slot),
    ) {
        let Some(h) = NonNull::new(root.0.load(Ordering::Acquire)) else {
            return;
        };
        // SAFETY: the caller's contract: the whole tree is ours.
        unsafe { self.take_node(h, garbage, out) }
    }

    /// # Safety
    ///
    /// As [`Self::take_all`], for the subtree of `h`.
    unsafe fn take_node(
        &self,
        h: NonNull<Head>,
        garbage: &mut Garbage,
        out: &mut impl FnMut(L::Slot),
    ) {
        // SAFETY: the caller's contract.
        match unsafe { node::<L::Slot, L::Sep>(h) } {
            Node::Leaf(l) => {
                let o = l.order();
                for k in 0..o.len() {
                    // SAFETY: each live slot is read out once; the leaf is then only freed.
                    out(unsafe { ptr::read(l.at(&o, k)) });
                }
                garbage.push_leaf::<L::Slot>(h);
            }
            Node::Inner(n) => {
                for i in 0..n.head.len as usize {
                    // SAFETY: the caller's contract covers the children.
                    unsafe { self.take_node(kid(n, i), garbage, out) };
                }
                garbage.push_inner::<L::Sep>(h);
            }
        }
    }

    /// `f` of every slot of the tree (a pointer to it, valid while the tree's nodes are)
    /// with its entry, in order.
    ///
    /// # Safety
    ///
    /// Under the lock, the live tree; `g` is pinned.
    pub(crate) unsafe fn slots(
        &self,
        root: &Root,
        g: &Guard,
        f: &mut impl FnMut(*const L::Slot, &(K, V)),
    ) {
        fn walk<K: Ord + 'static, V: 'static, L: Layout<K, V>>(
            t: &Trees<'_, K, V, L>,
            h: NonNull<Head>,
            g: &Guard,
            f: &mut impl FnMut(*const L::Slot, &(K, V)),
        ) {
            // SAFETY: the outer function's contract: a live node under the lock.
            match unsafe { node::<L::Slot, L::Sep>(h) } {
                Node::Leaf(l) => {
                    for &i in l.order().live() {
                        // SAFETY: as above, a live slot.
                        let s = unsafe { l.slot(i) };
                        // SAFETY: as above.
                        f(s, unsafe { L::entry(t.slab, s, g) });
                    }
                }
                Node::Inner(n) => {
                    for i in 0..n.head.len as usize {
                        walk(t, kid(n, i), g, f);
                    }
                }
            }
        }
        if let Some(h) = NonNull::new(root.0.load(Ordering::Acquire)) {
            walk(self, h, g, f);
        }
    }

    /// A new tree of `srcs` (sorted, at least two), built bottom up with leaves and inner
    /// nodes three quarters full; its root.
    ///
    /// # Safety
    ///
    /// Each pointer is valid for reads of a slot.
    pub(crate) unsafe fn build(&self, srcs: &[*const L::Slot]) -> Root {
        debug_assert!(srcs.len() >= 2);
        let per = (self.caps.leaf * 3 / 4).max(2);
        let leaves = srcs.len().div_ceil(per);
        let mut level: Vec<(NonNull<Head>, *const L::Slot)> = Vec::with_capacity(leaves);
        for i in 0..leaves {
            let (a, b) = (i * srcs.len() / leaves, (i + 1) * srcs.len() / leaves);
            // SAFETY: the caller's contract; `b - a <= per + 1 <= cap`.
            level.push((unsafe { alloc_leaf(&srcs[a..b]) }, srcs[a]));
        }
        let per = (self.caps.inner * 3 / 4).max(2);
        let mut height = 0;
        let mut seps_own: Vec<ManuallyDrop<L::Sep>> = Vec::new();
        while level.len() > 1 {
            height += 1;
            let groups = level.len().div_ceil(per);
            let mut next = Vec::with_capacity(groups);
            for i in 0..groups {
                let (a, b) = (i * level.len() / groups, (i + 1) * level.len() / groups);
                let kids: Vec<NonNull<Head>> = level[a..b].iter().map(|x| x.0).collect();
                seps_own.clear();
                // SAFETY: each first-slot pointer is one of `srcs` (valid, the caller's).
                seps_own.extend(
                    level[a + 1..b]
                        .iter()
                        .map(|x| ManuallyDrop::new(L::sep(unsafe { &*x.1 }))),
                );
                let ss: Vec<*const L::Sep> =
                    seps_own.iter().map(|s| &**s as *const L::Sep).collect();
                // SAFETY: valid separators (just made), `kids.len()` children.
                next.push((unsafe { alloc_inner(height, &ss, &kids) }, level[a].1));
            }
            level = next;
        }
        Root::new(level[0].0)
    }

    /// Bytes of the tree's nodes.
    ///
    /// # Safety
    ///
    /// As [`Self::get`].
    pub(crate) unsafe fn node_bytes(&self, root: &Root, g: &Guard) -> usize {
        fn walk<S, P>(h: NonNull<Head>) -> usize {
            // SAFETY: the caller's contract (the outer function's).
            match unsafe { node::<S, P>(h) } {
                Node::Leaf(_) => core::mem::size_of::<Leaf<S>>(),
                Node::Inner(n) => {
                    core::mem::size_of::<Inner<P>>()
                        + (0..n.head.len as usize)
                            .map(|i| walk::<S, P>(kid(n, i)))
                            .sum::<usize>()
                }
            }
        }
        let _ = g;
        NonNull::new(root.0.load(Ordering::Acquire)).map_or(0, walk::<L::Slot, L::Sep>)
    }
}

/// Frees node `h` of either kind.
///
/// # Safety
///
/// As [`free_leaf`] / [`free_inner`].
unsafe fn free_node<S, P>(h: NonNull<Head>) {
    // SAFETY: the caller's contract: a live node, its head readable.
    if unsafe { h.as_ref() }.height == 0 {
        // SAFETY: the caller's contract; the head says it is a leaf.
        unsafe { free_leaf::<S>(h) }
    } else {
        // SAFETY: the caller's contract; an inner node.
        unsafe { free_inner::<P>(h) }
    }
}

impl Garbage {
    fn push_leaf<S>(&mut self, h: NonNull<Head>) {
        self.push(DeadNode {
            node: h,
            free: free_leaf::<S>,
            bytes: core::mem::size_of::<Leaf<S>>(),
        });
    }

    fn push_inner<P>(&mut self, h: NonNull<Head>) {
        self.push(DeadNode {
            node: h,
            free: free_inner::<P>,
            bytes: core::mem::size_of::<Inner<P>>(),
        });
    }

    /// # Safety
    ///
    /// `h` is a live node (its head readable).
    unsafe fn push_node<S, P>(&mut self, h: NonNull<Head>) {
        // SAFETY: the caller's contract.
        if unsafe { h.as_ref() }.height == 0 {
            self.push_leaf::<S>(h)
        } else {
            self.push_inner::<P>(h)
        }
    }
}

/// A position in a tree: the inner nodes from the root down with the child taken in each,
/// and a leaf with an index (front: the next slot; back: one past it).
pub(crate) struct Cursor<'g, S, P> {
    stack: [(Option<&'g Inner<P>>, u32); MAX_HEIGHT],
    depth: usize,
    leaf: Option<&'g Leaf<S>>,
    /// The leaf's order when the cursor reached it.
    order: Order,
    at: usize,
    /// The last slot yielded, and whether the leaf just entered may hold slots at or
    /// behind it (see [`Cursor::step`]).
    last: Option<&'g S>,
    check: bool,
}

impl<'g, S, P> Cursor<'g, S, P> {
    pub(crate) fn empty() -> Self {
        Cursor {
            stack: [(None, 0); MAX_HEIGHT],
            depth: 0,
            leaf: None,
            order: Order::EMPTY,
            at: 0,
            last: None,
            check: false,
        }
    }

    fn push(&mut self, n: &'g Inner<P>, at: usize) {
        assert!(
            self.depth < MAX_HEIGHT,
            "CobTree: tree deeper than {MAX_HEIGHT}"
        );
        self.stack[self.depth] = (Some(n), at as u32);
        self.depth += 1;
    }

    /// Down from child `at` of the top of the stack to its first (`back`: last) leaf.
    fn descend(&mut self, back: bool) {
        let (n, at) = self.stack[self.depth - 1];
        let mut h = kid(n.expect("a pushed node"), at as usize);
        loop {
            // SAFETY: the cursor's nodes were reached while its guard was pinned; so was
            // this child (loaded from one of them), per the module's reader argument.
            match unsafe { node::<'g, S, P>(h) } {
                Node::Inner(i) => {
                    let at = if back { i.head.len as usize - 1 } else { 0 };
                    self.push(i, at);
                    h = kid(i, at);
                }
                Node::Leaf(l) => {
                    self.leaf = Some(l);
                    self.order = l.order();
                    self.at = if back { self.order.len() } else { 0 };
                    self.check = true;
                    return;
                }
            }
        }
    }

    /// The next slot from the front (`back`: from the back). `behind(last, s)`: whether
    /// slot `s`'s key is at or behind (`back`: at or ahead of) the key of slot `last`,
    /// which the cursor yielded before.
    ///
    /// A leaf is read as it is when the cursor enters it, through the inner nodes the
    /// cursor read earlier; those may have been replaced since, and a leaf they still name
    /// may be a retired copy, while a leaf still in the tree takes writes in place. So a
    /// key that moved between two leaves (removed from one, put back into its neighbour
    /// after a separator changed) can show in both; the cursor skips the slots of each
    /// leaf it enters that are not past the last one it yielded (a leaf's own order is
    /// one consistent read, sorted). Keys present throughout stay where the cursor finds
    /// them, so none is lost: it yields a strictly ordered run.
    #[inline]
    pub(crate) fn step(
        &mut self,
        back: bool,
        behind: impl Fn(&'g S, &'g S) -> bool,
    ) -> Option<&'g S> {
        loop {
            let s = if back { self.prev() } else { self.next() }?;
            if self.check {
                if let Some(last) = self.last
                    && behind(last, s)
                {
                    continue;
                }
                self.check = false;
            }
            self.last = Some(s);
            return Some(s);
        }
    }

    /// The next slot from the front.
    #[inline]
    fn next(&mut self) -> Option<&'g S> {
        loop {
            let l = self.leaf?;
            if self.at < self.order.len() {
                self.at += 1;
                return Some(l.at(&self.order, self.at - 1));
            }
            // Up to the first ancestor with a child to the right, then down its leftmost.
            loop {
                if self.depth == 0 {
                    self.leaf = None;
                    return None;
                }
                let (n, at) = &mut self.stack[self.depth - 1];
                if (*at as usize) + 1 < n.expect("a pushed node").head.len as usize {
                    *at += 1;
                    break;
                }
                self.depth -= 1;
            }
            self.descend(false);
        }
    }

    /// The next slot from the back.
    #[inline]
    fn prev(&mut self) -> Option<&'g S> {
        loop {
            let l = self.leaf?;
            if self.at > 0 {
                self.at -= 1;
                return Some(l.at(&self.order, self.at));
            }
            loop {
                if self.depth == 0 {
                    self.leaf = None;
                    return None;
                }
                let (_, at) = &mut self.stack[self.depth - 1];
                if *at > 0 {
                    *at -= 1;
                    break;
                }
                self.depth -= 1;
            }
            self.descend(true);
        }
    }
}
