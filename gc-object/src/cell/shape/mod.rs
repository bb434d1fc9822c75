//! Hidden classes: shapes hashed by their key sequence, one table per heap.
//!
//! ```text
//!  index (hash of the key sequence -> shapes)       shapes              key runs
//!  +--------------------+                        +---------------+   +-----------------+
//!  | h[x]          -----+----------------------> | {x}      n=1  |-->| x y z . .       |
//!  | h[x y z]      -----+----------------------> | {x,y,z}  n=3  |-->|   (shared run)  |
//!  | h[x q]        -----+----------------------> | {x,q}    n=2  |-->| x q . . .       |
//!  +--------------------+                        +---------------+   +-----------------+
//! ```
//!
//! Objects that add the same keys in the same order share a shape: an add hashes the
//! object's key sequence with the new key ([`ShapeTable::add`], expected O(1)) and takes the
//! shape with that sequence if there is one, as QuickJS does with its per-runtime shape
//! hash. If there is none, an object whose shape is its own (no other object ever took it:
//! not *shared*) appends the key to that shape in place, so an object with a key sequence
//! of its own costs one shape, however many keys it adds; otherwise it makes a new shape,
//! its own until another object takes it. A shape that another object took never changes
//! again. In shape mode slot `i` holds the `i`-th key (deletes leave shape mode), so an
//! append moves no slot, and a property cache that remembered a slot stays right.
//!
//! Keys are in runs (`run`): a new shape made from a shape that ends its run extends the
//! run in place; a private shape whose run is full moves to a run twice the size (the old
//! one is freed by the next collection). A lookup scans the shape's keys (at most
//! [`LINEAR_LOOKUP_MAX`], several at a time) or, for a bigger shared shape that has been
//! hit [`HOT_LOOKUPS`] times, a hash table built for it then. A shape never has more than
//! [`MAX_SHAPE_KEYS`] keys by adds (an object that would need more enters dictionary mode).
//!
//! Shapes no live object uses are freed by the collector ([`ShapeTable::sweep`]): it frees
//! the shapes it did not mark, in O(1) each; literal shapes stay. Property caches remember
//! shapes by a process-unique id, never by address, so freeing a shape can never make a
//! cache lie.

mod index;
mod run;
mod table;

pub(crate) use table::ShapeTable;

use crate::key::Key;
use crate::sync::unmodeled::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use run::Run;

/// Shapes with at most this many keys are scanned; bigger ones get a hash table once hot.
pub const LINEAR_LOOKUP_MAX: usize = 16;
/// Hits on a shape bigger than [`LINEAR_LOOKUP_MAX`] after which it gets a hash table.
pub const HOT_LOOKUPS: u32 = 8;
/// The most keys a shape reached by adds has: the next add (and any delete) moves the
/// object to dictionary mode, its own hash table.
pub const MAX_SHAPE_KEYS: usize = if cfg!(loom) { 4 } else { 64 };

/// Shape ids are unique in the process and never reused, so a cache that remembers an id
/// can never mistake a newer shape at a reused address for the one it saw.
static NEXT_SHAPE_ID: AtomicU64 = AtomicU64::new(1);

/// One hidden class.
#[derive(Debug)]
pub(crate) struct Shape {
    /// Unique, never reused, never 0 (0 means "no shape" in a [`crate::PropertyCache`]).
    id: u64,
    /// The keys (`keys[..count]`, key `i` in slot `i`): the start of a run. Changes only
    /// while the shape is private, when its run is full (published before `count`).
    keys: AtomicPtr<u32>,
    /// Keys and slots of objects of this shape; grows only while the shape is private
    /// (after the new slot is stored, with a release store).
    count: AtomicU32,
    /// Hits counted towards [`HOT_LOOKUPS`] (racy counting is fine: it only decides when).
    hits: AtomicU32,
    /// Hash of the key sequence (changes with `count`, under the table's write lock).
    seq: AtomicU64,
    /// A shape (id << 16 | key count) known to have the same first keys as this one: a
    /// transition check in O(1) instead of comparing the keys (0: none known).
    base: AtomicU64,
    /// Open-addressed (key id + 1) << 32 | slot, built once hot (shared shapes only).
    hot: AtomicPtr<Box<[u64]>>,
    /// The next shape of this one's chain in the table's index (under its lock).
    next: AtomicPtr<Shape>,
    /// Objects of this shape are in shape mode, not restricted to a thread and without
    /// attribute or accessor entries, so a [`crate::PropertyCache`] that matches this
    /// shape's id may read the slot without looking at anything else. The dictionary shape,
    /// the restricted shapes and every shape made from them are not plain.
    plain: bool,
    /// The shape of dictionary-mode objects (their keys are in their dictionary).
    is_dict: bool,
    /// Another object took this shape (or it is the root or a literal's): it never changes.
    shared: AtomicBool,
    /// Literal shapes stay as long as their table.
    pinned: AtomicBool,
    /// Marked by the collector (exclusive access).
    marked: AtomicBool,
    /// Some key is a symbol's (the collector reports them when it marks the shape).
    symbols: AtomicBool,
}

fn hash_seed(plain: bool) -> u64 {
    if plain {
        0x243F_6A88_85A3_08D3
    } else {
        0x1319_8A2E_0370_7344
    }
}

/// The hash of a key sequence with `key` appended (rotate, xor, multiply: each step mixes
/// the previous hash's high bits back into the low ones).
fn mix(seq: u64, key: u32) -> u64 {
    (seq.rotate_left(26) ^ u64::from(key)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn hot_hash(key: u32) -> u64 {
    u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
}

/// `base` of a shape with id `id` and `n` keys (0 when it does not fit).
fn pack(id: u64, n: u32) -> u64 {
    if id < 1 << 48 && n < 1 << 16 {
        id << 16 | u64::from(n)
    } else {
        0
    }
}

/// The bits of the four keys at `at` equal to `id`. Inlined into a caller's loop, the
/// compiler turns this into one vector compare itself; see [`eq4_vector`].
#[inline(always)]
fn eq4(keys: &[u32], at: usize, id: u32) -> u32 {
    let c: &[u32; 4] = keys[at..at + 4].try_into().expect("four keys");
    u32::from(c[0] == id)
        | u32::from(c[1] == id) << 1
        | u32::from(c[2] == id) << 2
        | u32::from(c[3] == id) << 3
}

/// [`eq4`] as one SSE2 compare on x86-64 (where the compiler does not vectorize it on its
/// own: in out-of-line code), the portable code elsewhere and under Miri.
#[inline(always)]
fn eq4_vector(keys: &[u32], at: usize, id: u32) -> u32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
    {
        use core::arch::x86_64::{
            _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_ps, _mm_set1_epi32,
        };
        let c: &[u32; 4] = keys[at..at + 4].try_into().expect("four keys");
        // SAFETY: `c` is 16 readable bytes, written before this shape's count was
        // published (an unaligned load); SSE2 is part of x86-64 (as for each call below).
        let v = unsafe { _mm_loadu_si128(c.as_ptr().cast()) };
        // SAFETY: SSE2.
        let want = unsafe { _mm_set1_epi32(id as i32) };
        // SAFETY: SSE2.
        let eq = unsafe { _mm_cmpeq_epi32(v, want) };
        // SAFETY: SSE2.
        let eq = unsafe { _mm_castsi128_ps(eq) };
        // SAFETY: SSE2.
        (unsafe { _mm_movemask_ps(eq) }) as u32
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(miri))))]
    {
        eq4(keys, at, id)
    }
}

/// The position of `id` in `keys`: [`find_key_16`] on each block of 16 keys.
#[inline]
pub(crate) fn find_key(keys: &[u32], id: u32) -> Option<u32> {
    let mut at = 0;
    for block in keys.chunks(LINEAR_LOOKUP_MAX) {
        if let Some(i) = find_key_16_by(block, id, eq4_vector) {
            return Some(at + i);
        }
        at += LINEAR_LOOKUP_MAX as u32;
    }
    None
}

/// The position of `id` in the last keys (fewer than four), the first of them at `at`.
#[inline(always)]
fn tail(rest: &[u32], at: u32, id: u32) -> Option<u32> {
    rest.iter().position(|&k| k == id).map(|i| at + i as u32)
}

/// The position of the lowest bit of a non-zero four-bit mask.
#[inline(always)]
fn first4(m: u32) -> u32 {
    debug_assert!(m != 0 && m < 16);
    m.trailing_zeros()
}

/// The position of `id` in at most [`LINEAR_LOOKUP_MAX`] (16) keys: four at a time,
/// unrolled, and the last one to three one by one (nothing past the count is read). For
/// code inlined into a loop (the `get` fast path).
#[inline(always)]
pub(crate) fn find_key_16(keys: &[u32], id: u32) -> Option<u32> {
    find_key_16_by(keys, id, eq4)
}

#[inline(always)]
fn find_key_16_by(keys: &[u32], id: u32, eq4: impl Fn(&[u32], usize, u32) -> u32) -> Option<u32> {
    let n = keys.len();
    debug_assert!(n <= LINEAR_LOOKUP_MAX);
    if n < 4 {
        return tail(keys, 0, id);
    }
    let m = eq4(keys, 0, id);
    if m != 0 {
        return Some(first4(m));
    }
    if n < 8 {
        return tail(&keys[4..], 4, id);
    }
    let m = eq4(keys, 4, id);
    if m != 0 {
        return Some(4 + first4(m));
    }
    if n < 12 {
        return tail(&keys[8..], 8, id);
    }
    let m = eq4(keys, 8, id);
    if m != 0 {
        return Some(8 + first4(m));
    }
    if n < 16 {
        return tail(&keys[12..], 12, id);
    }
    let m = eq4(keys, 12, id);
    (m != 0).then(|| 12 + first4(m))
}

impl Shape {
    fn new(keys: Run, count: u32, seq: u64, plain: bool) -> Shape {
        Shape {
            id: NEXT_SHAPE_ID.fetch_add(1, Ordering::Relaxed),
            keys: AtomicPtr::new(keys.keys()),
            count: AtomicU32::new(count),
            hits: AtomicU32::new(0),
            seq: AtomicU64::new(seq),
            base: AtomicU64::new(0),
            hot: AtomicPtr::new(core::ptr::null_mut()),
            next: AtomicPtr::new(core::ptr::null_mut()),
            plain,
            is_dict: false,
            shared: AtomicBool::new(false),
            pinned: AtomicBool::new(false),
            marked: AtomicBool::new(false),
            symbols: AtomicBool::new(false),
        }
    }

    /// The hash the index keeps this shape under: its key sequence's, and whether it is
    /// plain (the table's lock held, or the shape private to the caller).
    fn table_hash(&self) -> u64 {
        let seq = self.seq.load(Ordering::Relaxed);
        if self.plain { seq } else { !seq }
    }

    /// May a property cache that matched this shape's id read the slot it remembers? (A
    /// plain shape: shape mode, no restriction, no attribute or accessor entries.)
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        self.plain
    }

    /// Is this the dictionary-mode shape? (Seeing it means the object's dictionary is
    /// published: it is stored after the dictionary.)
    #[inline]
    pub(crate) fn is_dict(&self) -> bool {
        self.is_dict
    }

    fn run(&self) -> Run {
        // SAFETY: `keys` always holds the start of a live run (set from `Run::keys`).
        unsafe { Run::from_keys(self.keys.load(Ordering::Acquire)) }
    }

    /// The keys' ids, in slot order (a snapshot: a private shape may grow later).
    #[inline]
    pub(crate) fn keys(&self) -> &[u32] {
        // The count first: a private shape publishes a new run before a new count.
        let n = self.count.load(Ordering::Acquire);
        let p = self.keys.load(Ordering::Acquire);
        // SAFETY: the first `count` keys of the run were written before the count (or the
        // shape) was published; the run lives while the shape does (a replaced run of a
        // private shape lives until the next collection, which has exclusive access).
        unsafe { core::slice::from_raw_parts(p, n as usize) }
    }

    /// The slot of `key`, if this shape has it.
    #[inline]
    pub(crate) fn lookup(&self, key: Key) -> Option<u32> {
        let keys = self.keys();
        if keys.len() <= LINEAR_LOOKUP_MAX {
            return find_key_16_by(keys, key.id(), eq4_vector);
        }
        self.lookup_past_inline(keys, key)
    }

    /// [`Shape::lookup`] in `keys` (this shape's, from [`Shape::keys`]) of more than
    /// [`INLINE_SLOTS`](crate::INLINE_SLOTS) keys.
    #[inline(never)]
    pub(crate) fn lookup_past_inline(&self, keys: &[u32], key: Key) -> Option<u32> {
        if keys.len() <= LINEAR_LOOKUP_MAX {
            return find_key_16_by(keys, key.id(), eq4_vector);
        }
        self.lookup_big(keys, key)
    }

    #[inline]
    fn lookup_big(&self, keys: &[u32], key: Key) -> Option<u32> {
        let hot = self.hot.load(Ordering::Acquire);
        if !hot.is_null() {
            // SAFETY: a published table lives as long as the shape.
            let t: &[u64] = unsafe { &*hot };
            let mask = t.len() - 1;
            let want = u64::from(key.id()) + 1;
            let mut i = hot_hash(key.id()) as usize & mask;
            loop {
                let e = t[i];
                if e == 0 {
                    return None;
                }
                if e >> 32 == want {
                    return Some(e as u32);
                }
                i = (i + 1) & mask;
            }
        }
        let found = find_key(keys, key.id());
        if found.is_some() {
            let h = self.hits.load(Ordering::Relaxed) + 1;
            self.hits.store(h, Ordering::Relaxed);
            // Only a shared shape never changes again (acquire: its last keys are seen).
            if h >= HOT_LOOKUPS && self.shared.load(Ordering::Acquire) {
                self.build_hot();
            }
        }
        found
    }

    #[cold]
    fn build_hot(&self) {
        let keys = self.keys();
        let len = (keys.len() * 2).next_power_of_two();
        let mut t = vec![0u64; len].into_boxed_slice();
        let mask = len - 1;
        for (slot, &id) in keys.iter().enumerate() {
            let mut i = hot_hash(id) as usize & mask;
            while t[i] != 0 {
                i = (i + 1) & mask;
            }
            t[i] = ((u64::from(id) + 1) << 32) | slot as u64;
        }
        let p = Box::into_raw(Box::new(t));
        if self
            .hot
            .compare_exchange(
                core::ptr::null_mut(),
                p,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: ours, never published.
            drop(unsafe { Box::from_raw(p) });
        }
    }

    /// The process-unique id of this shape.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Keys in insertion order (key `i` is in slot `i`).
    pub(crate) fn keys_in_order(&self) -> impl Iterator<Item = Key> + '_ {
        self.keys().iter().map(|&k| Key::from_raw(k))
    }

    /// Can an object of this shape add a key in shape mode? (No: dictionary mode next.)
    pub(crate) fn can_add(&self) -> bool {
        !self.is_dict && (self.slot_count() as usize) < MAX_SHAPE_KEYS
    }

    /// Number of keys, and of slots an object of this shape uses.
    #[inline]
    pub(crate) fn slot_count(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }

    /// Marks this shape (collector only: exclusive access to the heap).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn mark(&self) {
        self.mark_with(&mut |_| {});
    }

    /// Marks this shape, calling `symbol` with each of its keys that is a symbol's if it
    /// was not marked yet (so the collector keeps the symbols of live shapes).
    #[inline]
    pub(crate) fn mark_with(&self, symbol: &mut dyn FnMut(Key)) {
        // Most objects' shapes are marked already (objects built alike share one).
        if !self.marked.load(Ordering::Relaxed) {
            self.mark_first(symbol);
        }
    }

    #[inline(never)]
    fn mark_first(&self, symbol: &mut dyn FnMut(Key)) {
        self.marked.store(true, Ordering::Relaxed);
        if self.symbols.load(Ordering::Relaxed) {
            for k in self.keys_in_order().filter(|k| k.is_symbol()) {
                symbol(k);
            }
        }
    }

    /// Does this shape have the first `n` keys of `other`? (`n` is at most both counts.)
    /// Remembers a positive answer found by comparing keys in `base`.
    fn same_prefix(&self, other: &Shape, n: u32) -> bool {
        if n == 0 || self.keys.load(Ordering::Relaxed) == other.keys.load(Ordering::Relaxed) {
            // The same run: the same first keys.
            return true;
        }
        let b = pack(other.id, n);
        if b != 0 && self.base.load(Ordering::Relaxed) == b {
            return true;
        }
        let same = self.keys()[..n as usize] == other.keys()[..n as usize];
        if same && b != 0 {
            self.base.store(b, Ordering::Relaxed);
        }
        same
    }

    #[cfg(all(test, not(loom)))]
    fn has_hot_table(&self) -> bool {
        !self.hot.load(Ordering::Relaxed).is_null()
    }

    #[cfg(all(test, not(loom)))]
    fn is_shared(&self) -> bool {
        self.shared.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
