//! A pool of type-stable cells, each holding at most one immutable [`Node`]: one entry, or
//! the root of the tree of the entries that share one key prefix ([`super::tree`]). The
//! word core ([`super::buckets`]) maps each prefix to the number of its node's cell; the
//! cell layout's trees name their entries' cells too.
//!
//! Cells live in chunks of doubling size, each made once (`OnceLock`) and never moved or
//! freed before the map. A cell's number (what the core stores) carries its chunk in its top
//! bits and its byte offset in the chunk below them ([`Chunked::handle`]), so finding a cell
//! is a shift, one load of its chunk's start from a flat table and an add (no scaling). Its
//! top bit ([`TREE`]) tags a tree's root, so a reader knows a node's kind without loading
//! the node ([`Slab::view`]). A cell is written once when its node is made, and goes back to the
//! pool only after its node was reclaimed (no reader can hold it any more), so a reader
//! never sees a cell being rewritten.
//!
//! A node is never changed once published (a root's pointer is an atomic the tree's
//! writer stores): a writer (serialised with every other writer of the prefix by the core
//! leaf that owns it) builds a new node in a free cell, writes that cell's number into the
//! core, then retires the old one to [`Limbo`], with the tree nodes the write replaced. Readers read
//! a cell number from the core under a [`Guard`] (an epoch pin) and read the node without
//! any lock and without writing shared memory.

// The word core's epoch pin: under loom/Miri it protects nothing, since nodes, like arrays,
// are then freed only when the map drops.
use super::tree::{DeadNode, Garbage, Root};
use crate::pma::Guard;
use crate::sync::unmodeled;
use crate::sync::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Cells in the first chunk; chunk `c` has `FIRST_CHUNK << c`.
pub const FIRST_CHUNK: usize = 16;
/// Chunks (enough for `FIRST_CHUNK * (2^CHUNKS - 1)` cells).
const CHUNKS: usize = 40;
/// A cell's number is `tag << 63 | chunk << OFFSET_BITS | byte offset in the chunk`
/// ([`Chunked::handle`]; the tag bit is the pool's: [`TREE`]). A chunk is at most `1 <<
/// OFFSET_BITS` bytes ([`Chunked::make`] checks it).
const OFFSET_BITS: u32 = 57;
/// The top bit of a cell's number (the tag): set when the cell's node is a tree's root
/// ([`Entries::Tree`]). [`Chunked`] ignores it, so the tag says a node's kind without a
/// load of the node.
pub(crate) const TREE: u64 = 1 << 63;
// Every chunk number fits in the bits between the offset and the tag.
const _: () = assert!(CHUNKS <= 1 << (u64::BITS - 1 - OFFSET_BITS));

/// What one cell holds: one entry (no allocation of its own), or the root of a tree of
/// entries.
pub(crate) enum Entries<K, V> {
    One((K, V)),
    Tree(Root),
}

/// One cell's contents: a bucket of one entry or a tree's root, or (cell layout) one entry
/// of a tree. A bucket's prefix is the core's key that names it.
pub(crate) struct Node<K, V> {
    entries: Entries<K, V>,
}

impl<K, V> Node<K, V> {
    /// A node holding the one entry `e` (no allocation of its own).
    pub(crate) fn one(e: (K, V)) -> Self {
        Node {
            entries: Entries::One(e),
        }
    }

    /// A node holding the root of a tree.
    pub(crate) fn tree(r: Root) -> Self {
        Node {
            entries: Entries::Tree(r),
        }
    }

    /// The root of a tree's node.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn root(&self) -> Option<&Root> {
        match &self.entries {
            Entries::One(_) => None,
            Entries::Tree(r) => Some(r),
        }
    }

    /// The entry or the root, by value (the node was owned).
    pub(crate) fn into_parts(self) -> Result<(K, V), Root> {
        match self.entries {
            Entries::One(e) => Ok(e),
            Entries::Tree(r) => Err(r),
        }
    }

    /// The entry, by value (the node was owned; `None` for a tree's root).
    pub(crate) fn into_entry(self) -> Option<(K, V)> {
        match self.entries {
            Entries::One(e) => Some(e),
            Entries::Tree(_) => None,
        }
    }
}

/// A node's contents, as [`Slab::view`] reads them.
pub(crate) enum View<'g, K, V> {
    One(&'g (K, V)),
    Tree(&'g Root),
}

/// Where one node may live: written once by the pool's owner of the cell, then only read
/// until the node is reclaimed.
struct Cell<K, V>(core::cell::UnsafeCell<core::mem::MaybeUninit<Node<K, V>>>);

// SAFETY: a cell is written only by the one thread that owns it (`Slab::store`: a cell is
// handed out once, and only after no reader can hold the node it last held) and otherwise
// only read; its node's keys and values are reached through the slab, whose auto traits
// follow `K` and `V` (`_owns`), so the cell itself adds no cross-thread access of its own.
unsafe impl<K, V> Sync for Cell<K, V> {}
// SAFETY: as above; a cell's contents are dropped only by `Retired` or the slab's drop.
unsafe impl<K, V> Send for Cell<K, V> {}

/// Entries of [`Chunked`]'s table of chunk starts: one for every value a handle's top bits
/// (tag and chunk) can hold (so indexing it needs no bounds check): chunk `c`'s start is at
/// `c` and again at `c` with the tag bit set; those of chunks from [`CHUNKS`] on stay null.
const STARTS: usize = 1 << (u64::BITS - OFFSET_BITS);
/// Where the tag bit lies in an index of the table of starts.
const TAG_INDEX: usize = STARTS / 2;

/// Elements in chunks of doubling size, each made once and never moved or freed before
/// the whole `Chunked` drops (which drops the elements as `T`: cells drop nothing).
struct Chunked<T> {
    chunks: [OnceLock<Box<[T]>>; CHUNKS],
    /// Per made chunk `c`, at `i = c` and at `i = c | TAG_INDEX`: the address of its first
    /// element moved back by `i << OFFSET_BITS` bytes (wrapping), so the element of handle
    /// `h` (tagged or not) is `h` bytes past `starts[h >> OFFSET_BITS]` (one load and an
    /// add, where the `OnceLock` costs a state check and two bounds checks); null until the
    /// chunk is made. Only an address: the chunk itself is `chunks[c]`'s.
    starts: [AtomicPtr<T>; STARTS],
}

/// The chunk of element `s`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn chunk(s: u64) -> usize {
    let i = s as usize / FIRST_CHUNK + 1;
    (usize::BITS - 1 - i.leading_zeros()) as usize
}

/// The number of chunk `c`'s first element.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn first(c: usize) -> usize {
    FIRST_CHUNK * ((1 << c) - 1)
}

/// Chunk and offset of element `s`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn place(s: u64) -> (usize, usize) {
    let c = chunk(s);
    (c, s as usize - first(c))
}

/// Chunk and byte offset in the chunk of the element of handle `h` (tagged or not).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn unpack(h: u64) -> (usize, usize) {
    (
        ((h & !TREE) >> OFFSET_BITS) as usize,
        (h & ((1 << OFFSET_BITS) - 1)) as usize,
    )
}

/// The index of handle `h`'s chunk start in [`Chunked::starts`]: its top bits.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn start_index(h: u64) -> usize {
    (h >> OFFSET_BITS) as usize % STARTS
}

/// What a chunk's start is moved back by at index `i` of [`Chunked::starts`]: the top bits
/// of the handles it serves, as a byte count (wrapping: the top bits are cut off where
/// `usize` is 32 bits, and the element's handle then is its byte offset).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn bias(i: usize) -> usize {
    ((i as u64) << OFFSET_BITS) as usize
}

impl<T> Chunked<T> {
    fn new() -> Self {
        Chunked {
            chunks: [const { OnceLock::new() }; CHUNKS],
            starts: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
        }
    }

    /// The handle of element `s` (the `s`-th element made): its chunk in the top bits, its
    /// byte offset in the chunk below them (below `1 << OFFSET_BITS`: a chunk is no larger,
    /// [`Self::make`] checks it).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn handle(s: u64) -> u64 {
        let (c, o) = place(s);
        (c as u64) << OFFSET_BITS | (o * core::mem::size_of::<T>()) as u64
    }

    /// The element of handle `h` ([`Self::handle`] of an element made by [`Self::make`],
    /// with or without the tag bit [`TREE`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn at(&self, h: u64) -> &T {
        let i = start_index(h);
        let start = self.starts[i].load(Ordering::Acquire);
        if start.is_null() {
            return self.at_unmade(h);
        }
        // SAFETY: a non-null start at `i` was stored by `make` (release, matched by the
        // acquire load above) after chunk `c = unpack(h).0` (`i` without its tag bit) was
        // made: `chunks[c]`'s boxed slice of `FIRST_CHUNK << c` initialised elements, moved
        // back by `bias(i)` bytes. `h` is `handle(s)` of an element `s` of that chunk, with
        // the tag bit or not, i.e. `bias(i) + o * size_of::<T>()` with `o < FIRST_CHUNK <<
        // c` its index in the chunk (its top bits are `i`; the byte offset is below them, as
        // `make` checked), so the address moved forward by `h` bytes (wrapping, as it was
        // moved back, with the same cut to `usize`: the provenance is the chunk's) is
        // element `o`, in bounds and aligned. The chunk is never moved or freed while `self`
        // lives (`OnceLock` hands out only shared references, and only the drop of `self`
        // frees it), and only shared references to its elements are ever made.
        unsafe { &*start.wrapping_byte_add(h as usize) }
    }

    /// [`Self::at`] without the test that the chunk is made.
    ///
    /// # Safety
    ///
    /// `h` must be [`Self::handle`]`(s)` (tagged or not) of an element `s` whose
    /// [`Self::make`] (or that of another element of its chunk) happens before this call.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn at_made(&self, h: u64) -> &T {
        // SAFETY: the caller's contract, and the index is `h`'s.
        unsafe { self.at_made_index(start_index(h), h) }
    }

    /// [`Self::at_made`] with `h`'s index in the table of starts computed by the caller.
    ///
    /// # Safety
    ///
    /// As [`Self::at_made`], and `i` must be [`start_index`]`(h)`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn at_made_index(&self, i: usize, h: u64) -> &T {
        debug_assert_eq!(i, start_index(h));
        let start = self.starts[i % STARTS].load(Ordering::Acquire);
        debug_assert!(!start.is_null(), "CobTree: cell of an unmade chunk");
        // SAFETY: as in `at`: the caller's `make` stored the chunk's start before this call
        // (every `make` of the chunk stores the same address, and a later load sees one of
        // them: the start is never reset while `self` lives), so `start` is that address.
        unsafe { &*start.wrapping_byte_add(h as usize) }
    }

    /// [`Self::at`] of an element whose chunk's start is not stored (yet): through the
    /// `OnceLock`, which panics if the chunk was never made.
    #[cold]
    #[inline(never)]
    fn at_unmade(&self, h: u64) -> &T {
        let (c, o) = unpack(h);
        &self
            .chunks
            .get(c)
            .and_then(OnceLock::get)
            .expect("CobTree: cell of an unmade chunk")[o / core::mem::size_of::<T>().max(1)]
    }

    /// Element `s` (the `s`-th made; its handle is [`Self::handle`]`(s)`), making its chunk
    /// (every element `init()`) if it is not made yet.
    ///
    /// # Panics
    ///
    /// If the chunk would be larger than `1 << OFFSET_BITS` bytes (its byte offsets would
    /// not fit in a handle; no allocation could hold it anyway).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn make(&self, s: u64, init: impl Fn() -> T) -> &T {
        let (c, o) = place(s);
        let made = self.chunks[c].get_or_init(|| {
            let bytes = (FIRST_CHUNK << c).checked_mul(core::mem::size_of::<T>());
            assert!(
                bytes.is_some_and(|b| b as u64 <= 1 << OFFSET_BITS),
                "CobTree: too many cells"
            );
            (0..FIRST_CHUNK << c).map(|_| init()).collect()
        });
        // The tagged index is stored last and tested with an acquire load: seeing it
        // stored orders the untagged one's store before what this call publishes too.
        if self.starts[c | TAG_INDEX].load(Ordering::Acquire).is_null() {
            // Every thread that gets here stores the same addresses; the release stores
            // publish the chunk's elements to `at`'s acquire load. (Storing them only from
            // the `get_or_init` that made the chunk, through a flag, counted 12 more
            // instructions per insert.)
            for i in [c, c | TAG_INDEX] {
                let start = made.as_ptr().cast_mut().wrapping_byte_sub(bias(i));
                self.starts[i].store(start, Ordering::Release);
            }
        }
        &made[o]
    }

    fn made(&self) -> impl Iterator<Item = &[T]> {
        self.chunks.iter().filter_map(|c| c.get().map(|b| &**b))
    }
}

/// Numbers handed out once each: fresh ones from a count, returned ones from a list.
struct Numbers<T> {
    /// Returned items, reused first.
    free: unmodeled::Mutex<Vec<T>>,
    /// How many `free` holds, written under its lock: while it reads 0, `take` counts a
    /// fresh number without locking (a stale 0 only costs a fresh number).
    free_len: AtomicUsize,
    /// Fresh numbers handed out so far.
    next: AtomicU64,
}

/// What [`Numbers::take`] gave: a returned item or a fresh number.
enum Got<T> {
    Reused(T),
    Fresh(u64),
}

impl<T> Numbers<T> {
    fn new() -> Self {
        Numbers {
            free: unmodeled::Mutex::new(Vec::new()),
            free_len: AtomicUsize::new(0),
            next: AtomicU64::new(0),
        }
    }

    /// An item no one else has: by the count's read-modify-write, or by a pop under the
    /// list's lock (which also orders it after the `give` that pushed it).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn take(&self) -> Got<T> {
        if self.free_len.load(Ordering::Relaxed) != 0 {
            let mut f = unmodeled::lock(&self.free);
            let t = f.pop();
            self.free_len.store(f.len(), Ordering::Relaxed);
            if let Some(t) = t {
                return Got::Reused(t);
            }
        }
        Got::Fresh(self.next.fetch_add(1, Ordering::Relaxed))
    }

    fn give_all(&self, ts: impl IntoIterator<Item = T>) {
        let mut f = unmodeled::lock(&self.free);
        f.extend(ts);
        self.free_len.store(f.len(), Ordering::Relaxed);
    }
}

/// A node's place in the pool (a cell), whether it holds a node or not.
struct CellPtr<K, V>(core::ptr::NonNull<Node<K, V>>);

// SAFETY: a `CellPtr` in `Limbo` is only an address in the pool's chunks; whoever takes it
// from there owns the cell (the limbo hands it out once), and the node it may hold is
// `Retired`'s to drop. Sending or sharing the address sends no `K` or `V` by itself; the
// slab's own auto traits follow `K` and `V` (`_owns`).
unsafe impl<K, V> Send for CellPtr<K, V> {}
// SAFETY: as above.
unsafe impl<K, V> Sync for CellPtr<K, V> {}

pub(crate) struct Slab<K, V> {
    cells: Chunked<Cell<K, V>>,
    /// Cell numbers: the count of cells handed out (cell `n` is [`Chunked::handle`]`(n)`), and the
    /// handles of the cells whose nodes were reclaimed.
    cell_numbers: Numbers<u64>,
    limbo: Limbo<K, V>,
    /// The cells own their nodes, and readers on other threads get `&K`/`&V` while
    /// writers on other threads clone and drop them: `Send` when `K` and `V` are, `Sync`
    /// when they are `Send + Sync` (exactly `RwLock<(K, V)>`'s auto traits).
    _owns: core::marker::PhantomData<std::sync::RwLock<(K, V)>>,
}

impl<K, V> Slab<K, V> {
    pub(crate) fn new() -> Self {
        Slab {
            cells: Chunked::new(),
            cell_numbers: Numbers::new(),
            limbo: Limbo::new(),
            _owns: core::marker::PhantomData,
        }
    }

    /// Where cell `c` (a handle `store` returned) keeps its node.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn cell(&self, c: u64) -> *mut Node<K, V> {
        self.cells.at(c).0.get().cast::<Node<K, V>>()
    }

    /// The node in cell `c`, valid while `_g` lives.
    ///
    /// # Safety
    ///
    /// `c` must be the number `store` returned for a node that is not retired before `_g`
    /// was pinned, and the store must happen before this call: in practice, `c` was read
    /// from the word core as the current node of its prefix at a moment while `_g` was
    /// pinned (a validated read, whose acquire fence pairs with the release fence of the
    /// core writer that wrote `c`, after `store`), or under the lock of that prefix's leaf.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) unsafe fn node<'g>(&'g self, c: u64, _g: &'g Guard) -> &'g Node<K, V> {
        // SAFETY: `c` is the handle `store` returned, after making the cell's chunk, and that
        // store happens before this call (the caller's contract).
        let p = unsafe { self.cells.at_made(c) }
            .0
            .get()
            .cast::<Node<K, V>>();
        // SAFETY: `store` wrote a node into cell `c` before that node's number reached the
        // core, and that write happens before this call (the caller's contract). The
        // cells' chunks are freed only when the map drops, which needs it owned, so not
        // while `self` is borrowed. A node is dropped, and its cell reused, only (a) when
        // the map drops, or (b) by `retire`, after crossbeam-epoch reported that every
        // thread pinned when its caller unlinked the node from the core has unpinned; the
        // caller saw the node current while pinned by `_g`, so either the unlink came after
        // its pin or it could not have seen the node. Nodes are never written after
        // publication, so a shared reference is sound.
        unsafe { &*p }
    }

    /// The entries of [`Self::node`]`(c, g)`, the node's kind told by the tag of `c`
    /// ([`TREE`]), not read from the node: for a one-entry node (the usual case) its entry is
    /// one load of the cell away, with no test of the node.
    ///
    /// # Safety
    ///
    /// As [`Self::node`].
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) unsafe fn view<'g>(&'g self, c: u64, g: &'g Guard) -> View<'g, K, V> {
        // The tag is the sign bit: the arithmetic shift of the number is negative when it is
        // set, and otherwise the number's index in the table of starts (one instruction for
        // the test and the index).
        let i = (c as i64) >> OFFSET_BITS;
        if i < 0 {
            crate::pma::cold();
            // SAFETY: the caller's contract (the untagged number names the same cell).
            let n = unsafe { self.node(c & !TREE, g) };
            return View::Tree(
                n.root()
                    .expect("CobTree: a tagged cell holds a tree's root"),
            );
        }
        // SAFETY: the caller's contract, as in `node` (and `i` is `c`'s index: `c` is
        // untagged, so its arithmetic and logical shifts agree).
        let p = unsafe { self.cells.at_made_index(i as usize, c) }
            .0
            .get()
            .cast::<Node<K, V>>();
        // SAFETY: as in `node`: the cell holds the node `store` wrote before `c` reached the
        // core, alive and unchanged while `_g` lives.
        let n = unsafe { &*p };
        debug_assert!(matches!(n.entries, Entries::One(_)));
        match &n.entries {
            Entries::One(e) => View::One(e),
            // SAFETY: `c` is the number `store` returned for this node (the caller's
            // contract, as for `node`), and `store` tags exactly the numbers of trees'
            // roots; `c` is untagged, so the node has one entry. A cell is never
            // rewritten while a reader pinned before its node's retirement lives (`node`),
            // and a reused cell gets its number tagged anew by `store`.
            Entries::Tree(_) => unsafe { core::hint::unreachable_unchecked() },
        }
    }

    /// `node` written into a cell of the pool that this call alone owns: the cell's
    /// number (its handle, tagged with [`TREE`] if the node has several entries), to
    /// publish through the core.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn store(&self, node: Node<K, V>) -> u64 {
        let c = match self.cell_numbers.take() {
            Got::Reused(c) => c,
            Got::Fresh(s) => {
                self.cells.make(s, || {
                    Cell(core::cell::UnsafeCell::new(core::mem::MaybeUninit::uninit()))
                });
                Chunked::<Cell<K, V>>::handle(s)
            }
        };
        let cell = self.cell(c);
        let tag = match node.entries {
            Entries::One(_) => 0,
            Entries::Tree(_) => TREE,
        };
        // SAFETY: the cell is this call's alone: a fresh cell was counted once, and a
        // reused one was pushed to the free list once its node was dropped, after no
        // reader could hold that node any more (`retire`), and popped once. So nothing
        // reads or writes it now; it lies in a chunk that lives as long as `self`, and the
        // pointer comes from its `UnsafeCell`, which allows writes through `&self`.
        unsafe { cell.write(node) };
        c | tag
    }

    /// The entry of one-entry cell `c` (a cell a tree's slot names), valid while `g` lives.
    ///
    /// # Safety
    ///
    /// As [`Self::node`]: `c` was read from a tree node reached while `g` was pinned (or
    /// under the tree's lock), and the tree retires a cell only after no node names it.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) unsafe fn entry<'g>(&'g self, c: u64, g: &'g Guard) -> &'g (K, V) {
        // SAFETY: the caller's contract; an untagged number is a one-entry node.
        match unsafe { self.view(c, g) } {
            View::One(e) => e,
            View::Tree(_) => unreachable!("CobTree: a tree names only entry cells"),
        }
    }

    /// Retires the nodes of cells `cells` and the tree nodes `nodes`: they wait in `Limbo`
    /// until no reader can hold them; whatever is ready by then is dropped (nodes) or freed
    /// (tree nodes) and its cell reused.
    ///
    /// # Safety
    ///
    /// Each cell holds a node that is no longer reachable from the map (its prefix's word
    /// was overwritten or removed, or the tree node that named it was replaced, so no
    /// reader pinned from now on can find it), and each node and tree node is retired
    /// once.
    pub(crate) unsafe fn retire(&self, cells: &[u64], nodes: Garbage) {
        if cells.is_empty() && nodes.is_empty() {
            return;
        }
        let cells = cells.iter().map(|&c| {
            let p = core::ptr::NonNull::new(self.cell(c)).expect("cells are in chunks");
            // The cell's number goes back untagged (`store` tags it anew for its next node).
            Item::Cell(Retired(CellPtr(p), c & !TREE))
        });
        let items = cells.chain(nodes.into_nodes().map(|n| Item::Node(Dead(Some(n)))));
        let Some(ready) = self.limbo.retire(items) else {
            return;
        };
        // Outside the limbo's lock: the nodes' drops run user code. A drop that panics
        // unwinds through `ready`, which drops the nodes left (their cells are then not
        // reused, only freed with the map).
        let mut free = Vec::with_capacity(ready.len());
        for r in ready {
            if let Item::Cell(r) = &r {
                free.push(r.1);
            }
            drop(r);
        }
        self.cell_numbers.give_all(free);
    }

    /// The node of cell `c`, read out (the cell is then logically empty).
    ///
    /// # Safety
    ///
    /// Cell `c` holds a node that nothing else reads or drops from now on: the map is
    /// owned (`&mut self`), and `c` was the node of a prefix in the core, which forgets it.
    pub(crate) unsafe fn take(&mut self, c: u64) -> Node<K, V> {
        // SAFETY: the caller's contract: a node, in a live cell, read out once.
        unsafe { self.cell(c).read() }
    }

    /// Bytes of the cells' chunks and of what the waiting nodes own outside their cells
    /// (the live nodes' own bytes are the core's to count: it knows which cells hold them).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.limbo.bytes() + self.cells.made().map(core::mem::size_of_val).sum::<usize>()
    }
}

impl<K, V> Drop for Slab<K, V> {
    fn drop(&mut self) {
        // The waiting nodes (the live ones are dropped by the core's owner, which knows
        // their cells): their cells' chunks are freed after this body.
        let b = core::mem::take(&mut *unmodeled::lock(&self.limbo.bags));
        drop(b);
    }
}

/// Retired nodes, dropped on a writer's thread once no reader can hold them (or with the
/// map).
///
/// A node is never dropped by crossbeam-epoch itself: retired nodes gather in an open bag;
/// a full bag is sealed with one deferred function that only sets the bag's flag (no user
/// code), and a later retire on the map drops the flagged bags' nodes. So keys and values
/// drop on a thread that uses the map (a map of non-`Send` types never has a key or value
/// dropped on another thread), and the map's drop drops every node still waiting.
struct Limbo<K, V> {
    bags: unmodeled::Mutex<Bags<K, V>>,
}

/// Retired items: the open bag, the sealed ones with their flags, and when to scan.
struct Bags<K, V> {
    open: Vec<Item<K, V>>,
    sealed: Vec<Sealed<K, V>>,
    /// Items in sealed bags, and the count at which to scan them next.
    waiting: usize,
    scan_at: usize,
}

impl<K, V> Default for Bags<K, V> {
    fn default() -> Self {
        Bags {
            open: Vec::new(),
            sealed: Vec::new(),
            waiting: 0,
            scan_at: LIMBO_SCAN,
        }
    }
}

/// A sealed bag and the flag the epoch collector sets once no reader can hold its items.
type Sealed<K, V> = (Arc<AtomicBool>, Vec<Item<K, V>>);

/// One retired thing: a cell's node, or a tree node.
enum Item<K, V> {
    Cell(Retired<K, V>),
    Node(Dead),
}

/// A tree node out of its tree, freed when this drops (which `Limbo` lets happen only
/// once no reader can hold it, or when the map drops).
struct Dead(Option<DeadNode>);

impl Drop for Dead {
    fn drop(&mut self) {
        if let Some(n) = self.0.take() {
            // SAFETY: `Limbo` drops a `Dead` only once every thread pinned when it was
            // retired has unpinned (or with the map, when no reader borrows it), and each
            // dead node is retired once (`Slab::retire`'s contract).
            unsafe { n.free() };
        }
    }
}

/// A node out of the core that readers may still be reading, and its cell's number; dropped
/// (in its cell) when this drops, which `Limbo` lets happen only once its flag is set, or
/// when the map drops.
struct Retired<K, V>(CellPtr<K, V>, u64);

impl<K, V> Drop for Retired<K, V> {
    fn drop(&mut self) {
        // SAFETY: the pointer is a cell holding a node owned by this `Retired` alone; it
        // drops only when no reader can hold a reference any more (`Limbo::retire` hands
        // out only flagged bags, which crossbeam-epoch flags after every thread pinned at
        // the sealing unpinned) or when the map drops (no reader borrows it then, and the
        // cells' chunks are freed only after the limbo was emptied).
        unsafe { core::ptr::drop_in_place(self.0.0.as_ptr()) };
    }
}

/// Items per sealed bag.
const BAG: usize = 64;
/// Waiting items below which a retire does not scan for ready ones.
const LIMBO_SCAN: usize = 256;

impl<K, V> Limbo<K, V> {
    fn new() -> Self {
        Limbo {
            bags: unmodeled::Mutex::new(Bags::default()),
        }
    }

    /// Queues `items`; the items no reader can hold any more, if this retire scanned.
    fn retire(&self, items: impl Iterator<Item = Item<K, V>>) -> Option<Vec<Item<K, V>>> {
        let mut b = unmodeled::lock(&self.bags);
        if b.open.capacity() == 0 {
            b.open.reserve(BAG + 4);
        }
        b.open.extend(items);
        if b.open.len() < BAG {
            return None;
        }
        // Seal: every item in the bag was retired before this point, so once every thread
        // pinned now has unpinned, no reader can hold any of them.
        let flag = Arc::new(AtomicBool::new(false));
        #[cfg(not(any(loom, miri)))]
        {
            let f = Arc::clone(&flag);
            crossbeam_epoch::pin().defer(move || f.store(true, Ordering::Release));
        }
        let bag = core::mem::take(&mut b.open);
        b.waiting += bag.len();
        b.sealed.push((flag, bag));
        if b.waiting < b.scan_at {
            return None;
        }
        // Amortised: scan again once as many more items wait as are left now.
        let (ready, left): (Vec<_>, Vec<_>) = core::mem::take(&mut b.sealed)
            .into_iter()
            .partition(|(f, _)| f.load(Ordering::Acquire));
        b.waiting = left.iter().map(|(_, i)| i.len()).sum();
        b.scan_at = (2 * b.waiting).max(LIMBO_SCAN);
        b.sealed = left;
        Some(ready.into_iter().flat_map(|(_, i)| i).collect())
    }

    /// Bytes of the waiting tree nodes.
    fn bytes(&self) -> usize {
        let b = unmodeled::lock(&self.bags);
        let node = |i: &Item<K, V>| match i {
            Item::Node(d) => d.0.as_ref().map_or(0, DeadNode::bytes),
            Item::Cell(_) => 0,
        };
        b.open.iter().map(node).sum::<usize>()
            + b.sealed
                .iter()
                .flat_map(|(_, i)| i)
                .map(node)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type C = Chunked<AtomicU64>;

    fn handle(s: u64) -> u64 {
        C::handle(s)
    }

    #[test]
    fn at_finds_what_make_made() {
        let c: C = Chunked::new();
        // Into the fifth chunk; every element made gets its own number.
        let n = (FIRST_CHUNK * 15 + 3) as u64;
        for s in 0..n {
            c.make(s, || AtomicU64::new(u64::MAX))
                .store(s, Ordering::Relaxed);
        }
        for s in 0..n {
            assert!(
                core::ptr::eq(c.at(handle(s)), c.make(s, || AtomicU64::new(0))),
                "slot {s}"
            );
            assert_eq!(c.at(handle(s)).load(Ordering::Relaxed), s, "slot {s}");
            // The tag bit is the pool's: the same element.
            assert!(
                core::ptr::eq(c.at(handle(s) | TREE), c.at(handle(s))),
                "slot {s}"
            );
        }
        // Chunks 0..=3 hold 15 * FIRST_CHUNK elements, so chunks 0..=4 are made (their
        // starts stored untagged and tagged), the rest not: their starts stay null.
        let made = |i: usize| !c.starts[i].load(Ordering::Relaxed).is_null();
        assert!((0..5).all(|i| made(i) && made(i | TAG_INDEX)));
        assert!((5..TAG_INDEX).all(|i| !made(i) && !made(i | TAG_INDEX)));
    }

    #[test]
    #[should_panic(expected = "unmade chunk")]
    fn at_of_an_unmade_chunk_panics() {
        let c: C = Chunked::new();
        c.make(0, || AtomicU64::new(0));
        c.at(handle(FIRST_CHUNK as u64));
    }

    #[test]
    fn places_are_dense() {
        let mut next = (0, 0);
        for s in 0..10_000u64 {
            let p = place(s);
            assert_eq!(p, next, "slot {s}");
            // Byte offsets: 8-byte elements.
            let bytes = (p.0, p.1 * 8);
            assert_eq!(unpack(handle(s)), bytes, "slot {s}");
            assert_eq!(unpack(handle(s) | TREE), bytes, "slot {s}");
            next = if p.1 + 1 == FIRST_CHUNK << p.0 {
                (p.0 + 1, 0)
            } else {
                (p.0, p.1 + 1)
            };
        }
    }
}
