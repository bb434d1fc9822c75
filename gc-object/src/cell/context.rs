//! Who may use a heap, and when it may collect: the heap handle, mutators (each with a
//! handle stack, see `handles`), a context (the one mutator of a heap borrowed `&mut`) and
//! its handle scopes. The heap layer adds the allocation API; what a collection's safety
//! rests on lives here:
//!
//! - A [`Context`] is made from `&'h mut Heap`, so for `'h` its mutator is the heap's only
//!   user. It never hands out its mutator or anything of lifetime `'h`: a value made through
//!   [`Context::mutator`] or [`Scope::mutator`] borrows the context or scope (the mutator is
//!   covariant, so `&'a Mutator<'h>` is used as `&'a Mutator<'a>`).
//! - Collecting takes `&mut` of the context or of its innermost scope (every outer scope is
//!   mutably borrowed by the one inside it), so no value borrowed from any of them is alive.
//!   What survives is what a [`Local`] (a slot of the handle stack) or a [`Root`] holds.
//! - A [`Local<'s>`] is the address of its slot. A scope saves the handle stack's top when it
//!   opens and restores it when it is dropped; it is made from `&'s mut` of its parent, so
//!   while a handle of `'s` is used its parent can neither push over the slot nor collect.
//!
//! [`Root`]: crate::Root

use core::cell::Cell;
use core::marker::PhantomData;
use std::sync::Arc;

use super::collect::{self, allocation_total};
use super::handles::{HandleStack, Mark};
use super::host::{Family, HostRef};
use super::shared::{CollectStats, HeapShared};
use super::{Value, Word};
use crate::error::Error;
use crate::slab::LocalCache;
use crate::sync::{Ordering, lock};

/// A garbage-collected heap of objects. `Send + Sync`: share `&Heap` between threads, each
/// allocating through its own [`Mutator`].
pub struct Heap {
    pub(crate) shared: Arc<HeapShared>,
}

/// One thread's allocation cache for a heap, with its handle stack: cells come from a chunk
/// it owns, so the allocation path takes no lock and touches no shared atomic (a lock is
/// taken once per chunk). `Send` but not `Sync`; every method takes `&self`.
pub struct Mutator<'h> {
    pub(crate) heap: &'h Heap,
    /// `&heap.shared` and its id, kept here so the allocation path reads them from the
    /// mutator instead of following the heap's pointers.
    pub(crate) shared: &'h HeapShared,
    pub(crate) heap_id: u64,
    pub(crate) cache: LocalCache,
    handles: HandleStack,
    /// Made by a [`Context`] from `&mut Heap`: the heap's only user, so its scopes collect.
    exclusive: bool,
    /// (Exclusive only.) The allocation total at which the next collection is due.
    due_at: Cell<u64>,
}

impl<'h> Mutator<'h> {
    /// A mutator of `heap`, one of possibly many (it never collects).
    pub(crate) fn new(heap: &'h Heap) -> Mutator<'h> {
        Mutator {
            heap,
            shared: &heap.shared,
            heap_id: heap.shared.id,
            cache: LocalCache::default(),
            handles: HandleStack::default(),
            exclusive: false,
            due_at: Cell::new(u64::MAX),
        }
    }

    /// A handle scope of this mutator. It cannot collect (another mutator, or any
    /// reference into the heap, may be in use): use a [`Context`] for that. Handles are
    /// pointless in such a scope except to call native closures that take a scope
    /// ([`Mutator::scoped_closure`]); their values stay alive anyway while the heap is
    /// borrowed. O(1), no allocation.
    pub fn scope(&mut self) -> Scope<'_> {
        Scope::open(self, false)
    }

    /// Calls a scoped native closure from a call through `&self` (`Mutator::call`, getters
    /// and setters): in a scope of this mutator's handle stack that cannot collect, so the
    /// caller's values stay valid.
    pub(crate) fn call_scoped_here(
        &self,
        host: HostRef<'_>,
        args: [Value<'h>; 3],
    ) -> Result<Value<'h>, Error> {
        let w = {
            let mut s = Scope::open(self, false);
            let l = [s.root(args[0])?, s.root(args[1])?, s.root(args[2])?];
            let r = host.call::<ScopeFamily>(&mut s, l)?;
            r.word()
        };
        // SAFETY: the word was rooted until the scope closed just now, and nothing collects
        // while this mutator is borrowed for 'h: a plain mutator never collects, and a
        // context's is reached only through a borrow of the context.
        Ok(unsafe { Value::from_word(w) })
    }
}

impl Drop for Mutator<'_> {
    fn drop(&mut self) {
        self.shared.slab.release_cache(&self.cache);
        let cells: u64 = self.cache.cells().iter().sum();
        if cells != 0 {
            self.shared
                .cells_allocated
                .fetch_add(cells, Ordering::Relaxed);
            self.shared.cell_bytes.fetch_add(
                self.cache.allocated_bytes(),
                crate::sync::unmodeled::Ordering::Relaxed,
            );
        }
        // SAFETY: handles borrow a scope, which borrows this mutator: none is left; the
        // blocks came from the heap's allocator.
        unsafe { self.handles.free_all(self.shared.raw()) };
    }
}

/// The one mutator of a heap borrowed `&mut` (an interpreter's evaluator holds it for its
/// whole run): its handle scopes keep values across collections, and it collects at the
/// safepoints it chooses ([`Context::collect_if_due`], [`Scope::collect_if_due`]), paced by
/// the heap's [`Pacing`](crate::Pacing).
///
/// ```
/// use gc_object::Heap;
///
/// let mut heap = Heap::new();
/// let mut cx = heap.context();
/// let mut s = cx.scope();
/// let keep = s.root(s.mutator().array().unwrap().value()).unwrap();
/// for i in 0..2_200u32 {
///     let t = s.scope(); // this round's handles
///     let o = t.mutator().object().unwrap();
///     o.set("i", i.into()).unwrap();
///     if i % 1_000 == 0 {
///         t.get(keep).as_object().unwrap().push(o.value()).unwrap();
///     }
///     drop(t); // `o` went with `t`
///     s.collect_if_due(); // a safepoint: `keep` and what it holds survive
/// }
/// let kept = s.get(keep).as_object().unwrap();
/// assert_eq!(kept.array_length().unwrap(), Some(3));
/// // A collection per 256 KiB allocated (the default pacing's floor; little is live).
/// let allocated = 2_200 * gc_object::OBJECT_CLASS_BYTES as u64;
/// assert_eq!(s.mutator().heap().stats().collections, allocated / (256 * 1024));
/// ```
///
/// Values made through it borrow it (or a scope of it), and collecting takes `&mut`, so a
/// value kept across a collection without a handle does not compile:
///
/// ```compile_fail
/// use gc_object::Heap;
///
/// let mut heap = Heap::new();
/// let mut cx = heap.context();
/// let o = cx.mutator().object().unwrap();
/// cx.collect(); // `o` is not rooted: it would be freed
/// o.set("x", 1u32.into()).unwrap();
/// ```
pub struct Context<'h> {
    m: Mutator<'h>,
}

impl<'h> Context<'h> {
    pub(crate) fn new(heap: &'h mut Heap) -> Context<'h> {
        // The `&mut` borrow is held for 'h: no one else can use the heap meanwhile.
        let heap: &'h Heap = heap;
        let mut m = Mutator::new(heap);
        m.exclusive = true;
        m.due_at.set(lock(&heap.shared.collector).due_at());
        Context { m }
    }

    /// The mutator, to allocate and to reach objects; what it makes borrows the context.
    pub fn mutator(&self) -> &Mutator<'_> {
        &self.m
    }

    /// The heap (borrowed from the context).
    pub fn heap(&self) -> &Heap {
        self.m.heap
    }

    /// Opens the outermost handle scope. O(1), no allocation.
    pub fn scope(&mut self) -> Scope<'_> {
        Scope::open(&self.m, true)
    }

    /// Has the heap allocated enough since the last collection for the pacing to call for
    /// one? A few loads, no lock.
    pub fn is_collection_due(&self) -> bool {
        due(&self.m)
    }

    /// A safepoint: collects if one is due (see [`Context::is_collection_due`]).
    pub fn collect_if_due(&mut self) -> Option<CollectStats> {
        due(&self.m).then(|| collect_now(&self.m))
    }

    /// Collects now. Roots: [`Root`](crate::Root)s (no handle exists outside a scope).
    /// O(live cells + chunks).
    pub fn collect(&mut self) -> CollectStats {
        collect_now(&self.m)
    }
}

impl core::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Context")
            .field("cells", &self.m.cache.cells().iter().sum::<u64>())
            .finish()
    }
}

/// Is a collection due for the exclusive mutator `m`?
#[inline]
fn due(m: &Mutator<'_>) -> bool {
    m.exclusive && allocation_total(m.shared, m.cache.allocated_bytes()) >= m.due_at.get()
}

/// Collects for the exclusive mutator `m`, whose handle stack is a root. Called only by
/// [`Context::collect`] (`&mut Context`: no scope is open) and [`Scope::collect`] (`&mut` of
/// a scope of a context, which mutably borrows every outer one).
fn collect_now(m: &Mutator<'_>) -> CollectStats {
    assert!(m.exclusive, "gc-object: only a context collects");
    m.shared.slab.release_cache(&m.cache);
    // SAFETY: `m` is a context's mutator, made from `&mut Heap` for its lifetime: no other
    // thread or mutator uses the heap (those made from a borrow of the context ended with
    // the borrow). The caller holds the context or its innermost scope by `&mut`, so no
    // value borrowed from any of them is alive; what survives is rooted in the root table
    // or in `m`'s handle stack, which is passed. The cache gave its chunks back above.
    let (s, due_at) = unsafe {
        collect::collect_exclusive(m.shared, Some(&m.handles), m.cache.allocated_bytes())
    };
    // SAFETY: the blocks past the top hold no live handle: the scopes that pushed there
    // closed, and their handles borrowed the scope now held by `&mut`.
    unsafe { m.handles.free_spares(m.shared.raw()) };
    m.due_at.set(due_at);
    s
}

/// A handle to a value (a V8 `Local`): the value survives collections while the scope `'s`
/// it was made in is open. A cell (object, string value, ...) is kept in a slot of the
/// mutator's handle stack and the handle is that slot's address; any other value (a
/// number, a boolean, an interned string...) needs no slot and the handle is the value
/// itself. `Copy`, 8 bytes, not `Send`. Read it with [`Scope::get`] in that scope or a
/// scope inside it.
///
/// A handle cannot leave its scope:
///
/// ```compile_fail
/// use gc_object::{Heap, Local, Scope};
///
/// fn make<'s>(s: &mut Scope<'s>) -> Local<'s> {
///     let inner = s.scope();
///     let o = inner.mutator().object().unwrap();
///     inner.root(o.value()).unwrap() // a handle of `inner`, which closes here
/// }
/// ```
#[derive(Clone, Copy)]
pub struct Local<'s> {
    /// A value word that names no cell, or a handle word (`TAG_HANDLE`: a slot address).
    word: Word,
    /// Not `Send`: the slot is in one thread's handle stack.
    _scope: PhantomData<(&'s (), *const ())>,
}

const _: () = assert!(core::mem::size_of::<Local<'static>>() == 8);

impl Local<'_> {
    /// The value word (read from the slot for a cell).
    #[inline]
    fn word(self) -> Word {
        if self.word.is_handle() {
            // SAFETY: a handle word names a live slot of a handle stack while the handle is
            // usable (see `Scope::get`).
            unsafe { self.word.handle_slot().read() }
        } else {
            self.word
        }
    }
}

impl core::fmt::Debug for Local<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.word.is_handle() {
            write!(f, "Local@{:p}", self.word.handle_slot())
        } else {
            write!(f, "Local({:?})", self.word)
        }
    }
}

/// A handle scope (V8's `HandleScope`): the handles made in it ([`Scope::root`]) live until
/// it is dropped. Open one with [`Context::scope`], [`Scope::scope`] or
/// [`Scope::escape_scope`]; a scope borrows its parent mutably, so scopes close in LIFO
/// order and only the innermost one is used. Opening, rooting and closing take no lock, no
/// atomic read-modify-write and no allocation (except a new handle block, every
/// `HANDLE_BLOCK_SLOTS` handles past the deepest point so far).
pub struct Scope<'s> {
    m: &'s Mutator<'s>,
    saved: Mark,
    /// A scope of a context (not one a plain mutator call opened): it may collect.
    collects: bool,
}

impl<'s> Scope<'s> {
    fn open(m: &'s Mutator<'s>, collects: bool) -> Scope<'s> {
        Scope {
            m,
            saved: m.handles.mark(),
            collects: collects && m.exclusive,
        }
    }

    /// The mutator, to allocate and to reach objects; what it makes borrows this scope (so
    /// it cannot be kept across [`Scope::collect`]: root it).
    pub fn mutator(&self) -> &Mutator<'_> {
        self.m
    }

    /// Roots `v` in this scope: a cell goes into a slot of the handle stack; a value that
    /// names no cell (a number, a boolean, ...) needs none and is the handle itself. O(1);
    /// allocates only at a block boundary. Errors: a cell of another heap
    /// ([`Error::ForeignHeap`]), no memory for a new block.
    #[inline]
    pub fn root(&self, v: Value<'_>) -> Result<Local<'s>, Error> {
        if !v.word.is_cell() {
            return Ok(Local {
                word: v.word,
                _scope: PhantomData,
            });
        }
        self.root_cell(v)
    }

    #[inline]
    fn root_cell(&self, v: Value<'_>) -> Result<Local<'s>, Error> {
        if v.heap_tag() != Some((self.m.shared as *const HeapShared).cast()) {
            return Err(Error::ForeignHeap);
        }
        let slot = self.m.handles.push(self.m.shared.raw(), v.word)?;
        Ok(Local {
            word: Word::from_handle(slot),
            _scope: PhantomData,
        })
    }

    /// The value of a handle of this scope or of an outer one, borrowed from this scope.
    /// O(1).
    #[inline]
    pub fn get(&self, l: Local<'s>) -> Value<'_> {
        // SAFETY: a value word that names no cell is valid anywhere. A handle's scope
        // encloses this one (or is it: `'s` outlives it), so its slot is below the top and
        // its word names a live cell of its heap (rooted, and only a `&mut` of this scope
        // could collect, which the returned borrow prevents). A handle read through a scope
        // of another mutator: its own scope chain is frozen while it is used, so the slot is
        // neither overwritten nor collected.
        unsafe { Value::from_word(l.word()) }
    }

    /// Opens a scope inside this one (this one is borrowed until it closes). O(1).
    pub fn scope(&mut self) -> Scope<'_> {
        Scope::open(self.m, self.collects)
    }

    /// Opens a scope inside this one that can hand one handle out to this one when it
    /// closes ([`EscapeScope::escape`], V8's `EscapableHandleScope`). O(1).
    pub fn escape_scope(&mut self) -> EscapeScope<'_, 's> {
        EscapeScope {
            scope: Scope::open(self.m, self.collects),
            _out: PhantomData,
        }
    }

    /// Can this scope collect? Yes in a [`Context`]; no in a scope that a call through a
    /// plain mutator opened (the caller's values must stay valid).
    pub fn can_collect(&self) -> bool {
        self.collects
    }

    /// Is a collection due (see [`Context::is_collection_due`])? `false` where this scope
    /// cannot collect.
    pub fn is_collection_due(&self) -> bool {
        self.collects && due(self.m)
    }

    /// A safepoint: collects if one is due and this scope can. Handles of this scope and
    /// the outer ones stay valid; values borrowed from the scope cannot be alive here.
    pub fn collect_if_due(&mut self) -> Option<CollectStats> {
        self.is_collection_due().then(|| collect_now(self.m))
    }

    /// Collects now, if this scope can (`None` otherwise). O(live cells + chunks).
    pub fn collect(&mut self) -> Option<CollectStats> {
        self.collects.then(|| collect_now(self.m))
    }

    /// Calls the scoped native closure of the function object `f` (the heap layer checked
    /// that it has one and that this thread may call it): in a scope inside this one that
    /// collects if this one does; the result is handed out to this scope.
    pub(crate) fn call_scoped(
        &mut self,
        f: Local<'s>,
        this: Local<'s>,
        arg: Local<'s>,
    ) -> Result<Local<'s>, Error> {
        let mut inner = self.escape_scope();
        let (host, env) = {
            // SAFETY: `f`'s slot is live (as in `get`); the object it names stays rooted by
            // it for 's, so its closure box (freed only with the dead object) is alive for
            // 's. The environment is rooted at once below, before anything can collect.
            let fv: Value<'s> = unsafe { Value::from_word(f.word()) };
            let o = fv.as_object().ok_or(Error::NotCallable)?;
            let (host, env) = o
                .cold()
                .and_then(|c| c.closure())
                .ok_or(Error::NotCallable)?;
            (host, inner.root(env)?)
        };
        let r = host.call::<ScopeFamily>(&mut *inner, [this, arg, env])?;
        inner.escape(r)
    }
}

impl Drop for Scope<'_> {
    #[inline]
    fn drop(&mut self) {
        self.m.handles.truncate(self.saved);
    }
}

impl core::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scope")
            .field("collects", &self.collects)
            .finish()
    }
}

/// A scope inside a scope of lifetime `'s` that can hand one of its handles out to it when
/// it closes (V8's `EscapableHandleScope`). Used as a [`Scope`] (it dereferences to one).
pub struct EscapeScope<'t, 's> {
    scope: Scope<'t>,
    _out: PhantomData<Local<'s>>,
}

impl<'t, 's> EscapeScope<'t, 's> {
    /// Closes this scope and roots `l`'s value in the outer scope. O(1). Errors: no memory
    /// for a new handle block (only for a cell, if `l` is of an outer scope and the outer
    /// scope's top sits at the end of a block with no spare after it).
    #[inline]
    pub fn escape(self, l: Local<'t>) -> Result<Local<'s>, Error> {
        if !l.word.is_handle() {
            return Ok(Local {
                word: l.word,
                _scope: PhantomData,
            });
        }
        let w = l.word();
        let m = self.scope.m;
        drop(self);
        // The word was rooted until just now; nothing ran since. It lands at the outer
        // scope's top: a handle of the outer scope.
        let slot = m.handles.push(m.shared.raw(), w)?;
        Ok(Local {
            word: Word::from_handle(slot),
            _scope: PhantomData,
        })
    }
}

impl<'t> core::ops::Deref for EscapeScope<'t, '_> {
    type Target = Scope<'t>;
    fn deref(&self) -> &Scope<'t> {
        &self.scope
    }
}

impl<'t> core::ops::DerefMut for EscapeScope<'t, '_> {
    fn deref_mut(&mut self) -> &mut Scope<'t> {
        &mut self.scope
    }
}

impl core::fmt::Debug for EscapeScope<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.scope.fmt(f)
    }
}

/// Native closures that take a handle scope and handles (`Mutator::scoped_closure`).
pub(crate) struct ScopeFamily;

impl Family for ScopeFamily {
    type Mut<'a, 'h: 'a> = &'a mut Scope<'h>;
    type Val<'h> = Local<'h>;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The lifetimes the safety argument needs: a context's mutator shrinks to a borrow, and
    /// an outer scope's handle is usable in an inner scope.
    #[test]
    fn variance() {
        fn shrink<'a, 'h: 'a>(m: &'a Mutator<'h>) -> &'a Mutator<'a> {
            m
        }
        fn outer_in_inner<'t, 's: 't>(l: Local<'s>) -> Local<'t> {
            l
        }
        let mut heap = Heap {
            shared: HeapShared::new(u64::MAX - 1, Box::new(crate::slab::SystemAlloc)),
        };
        {
            let mut cx = Context::new(&mut heap);
            let _ = shrink(&cx.m);
            let s = cx.scope();
            let l = s.root(Value::UNDEFINED).unwrap();
            let _ = outer_in_inner(l);
        }
    }
}
