//! The heap, its per-thread mutators and collection (the types are defined in
//! `cell::context`, which holds what a collection's safety rests on; this is their API).
//!
//! Safepoint protocol (enforced by the type system): a [`Mutator`] and every [`Obj`]
//! borrow the heap (`&Heap`), and [`Heap::collect`] takes `&mut Heap`. So a collection can
//! only start once every mutator and object reference of every thread is gone; with
//! `std::thread::scope`, the end of the scope is the safepoint. Objects that must survive
//! are kept by [`Root`]s, which do not borrow the heap. A [`Context`] (the one mutator of a
//! heap borrowed `&mut`) also collects, at the safepoints its owner chooses: what it makes
//! borrows it, and handle scopes keep values across its collections.

use crate::cell::collect as gc;
use crate::cell::host::{Family, HostBox, HostCall};
use crate::cell::literal::Literal;
use crate::cell::root::Root;
use crate::cell::{
    self, CollectStats, Context, FinalizationRegistry, HeapShared, HeapString, Local, NativeFn,
    Obj, Pacing, Scope, ScopeFamily, Symbol, TAG_ARRAY, TAG_FUNCTION, Value, WeakMap, WeakRef,
};
use crate::error::Error;
use crate::key::{Key, PropertyKey};
use crate::slab::{RawAlloc, SIZE_CLASSES, SystemAlloc};
use crate::sync::{Ordering, lock, unmodeled};

pub use crate::cell::{Heap, Mutator};

/// Counters of a heap.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HeapStats {
    /// Slab cells handed out by mutators that have ended: objects, and also the cells of
    /// strings, symbols, weak refs, weak maps and finalization registries.
    pub cells_allocated: u64,
    /// Slab chunks held.
    pub chunks: usize,
    /// Bytes held: the chunks, and the side state, host closures, handle blocks and large
    /// cells allocated now.
    pub heap_bytes: usize,
    /// Shapes alive (the empty shape and the dictionary-mode shape included).
    pub shapes: usize,
    /// Symbols alive (not freed by a collection yet).
    pub symbols: usize,
    /// Collections run.
    pub collections: u64,
    /// The last collection.
    pub last: CollectStats,
}

impl core::fmt::Debug for Heap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Heap")
            .field("id", &self.shared.id)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for Heap {
    fn default() -> Self {
        Heap::new()
    }
}

static NEXT_HEAP_ID: unmodeled::AtomicU64 = unmodeled::AtomicU64::new(1);

impl Heap {
    /// A heap on the global allocator.
    pub fn new() -> Heap {
        Heap::with_allocator(SystemAlloc)
    }

    /// A heap whose chunks and side state come from `raw` (e.g. a failing allocator in
    /// tests).
    pub fn with_allocator(raw: impl RawAlloc) -> Heap {
        let id = NEXT_HEAP_ID.fetch_add(1, unmodeled::Ordering::Relaxed);
        Heap {
            shared: HeapShared::new(id, Box::new(raw)),
        }
    }

    /// Exclusive access to the shared part (the `Arc` is never cloned).
    fn shared_mut(&mut self) -> &mut HeapShared {
        std::sync::Arc::get_mut(&mut self.shared)
            .expect("gc-object: the heap's shared part is never cloned")
    }

    /// A mutator: this thread's allocation cache. Make one per thread.
    pub fn mutator(&self) -> Mutator<'_> {
        Mutator::new(self)
    }

    /// The heap's one mutator while the context lives (`&mut self`): it collects at the
    /// safepoints its owner chooses, keeping what its handle scopes hold (see [`Context`]).
    pub fn context(&mut self) -> Context<'_> {
        Context::new(self)
    }

    /// When collections are due (see [`Pacing`]).
    pub fn pacing(&self) -> Pacing {
        lock(&self.shared.collector).pacing()
    }

    /// Sets the pacing; it applies from the last collection on.
    pub fn set_pacing(&mut self, p: Pacing) {
        lock(&self.shared.collector).set_pacing(p);
    }

    /// Prepares a literal with these property names (the shape is found once; each object
    /// made from it installs the shape with one store).
    ///
    /// # Panics
    /// If a name appears twice (a shape lists each key once), or is an array index such as
    /// `"0"` (index keys live in the elements, where `get` looks for them).
    pub fn literal(&self, names: &[&str]) -> Literal {
        let keys: Vec<Key> = names
            .iter()
            .map(|&n| match PropertyKey::parse(n) {
                PropertyKey::Name(k) => k,
                PropertyKey::Index(_) => {
                    panic!("gc-object: literal property {n:?} is an array index")
                }
            })
            .collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(
                !keys[..i].contains(k),
                "gc-object: literal names property {:?} twice",
                k.as_str()
            );
        }
        Literal::new(&self.shared, &keys)
    }

    /// Roots `obj`: it survives collections until the [`Root`] is dropped.
    pub fn root(&self, obj: Obj<'_>) -> Result<Root, Error> {
        self.root_value(obj.value())
    }

    /// Roots a value that names a heap cell (an object, a string value, a symbol, a weak
    /// reference, a weak map or a finalization registry): it survives collections until
    /// the [`Root`] is dropped. [`Error::WrongKind`] for values that are not cells
    /// (numbers, booleans, ...: they need no root; [`Value::as_static`] keeps them without
    /// the heap's borrow).
    pub fn root_value(&self, v: Value<'_>) -> Result<Root, Error> {
        match v.heap_tag() {
            None => Err(Error::WrongKind),
            Some(h) if h != (&*self.shared as *const HeapShared).cast() => Err(Error::ForeignHeap),
            Some(_) => Root::new(&self.shared.roots, v),
        }
    }

    /// Collects garbage: marks from the roots, frees everything else. Needs exclusive
    /// access, so no mutator or object reference can be in use. O(live cells + chunks).
    pub fn collect(&mut self) -> CollectStats {
        gc::collect(self.shared_mut())
    }

    /// A safepoint: collects if the bytes allocated since the last collection reached what
    /// the [`Pacing`] allows (mutators report theirs when they end). The check is a lock
    /// and a few loads.
    pub fn collect_if_due(&mut self) -> Option<CollectStats> {
        let due = gc::allocation_total(&self.shared, 0) >= lock(&self.shared.collector).due_at();
        due.then(|| self.collect())
    }

    /// Runs the queued finalization callbacks (see [`FinalizationRegistry`]) on this thread,
    /// with a mutator of its own; how many ran. See [`Mutator::run_finalizers`].
    pub fn run_finalizers(&self) -> Result<usize, Error> {
        self.mutator().run_finalizers()
    }

    /// Gives back chunks without live objects (they are kept by the heap for reuse
    /// otherwise): to the allocator, or on the global allocator to the process-wide chunk
    /// pool (see `CHUNK_POOL_CHUNKS`). Returns how many.
    pub fn release_empty_chunks(&mut self) -> usize {
        self.shared_mut().slab.release_empty_chunks()
    }

    /// Counters.
    pub fn stats(&self) -> HeapStats {
        let (collections, last) = {
            let c = lock(&self.shared.collector);
            (c.collections, c.last)
        };
        HeapStats {
            cells_allocated: self.shared.cells_allocated.load(Ordering::Relaxed),
            chunks: self.shared.slab.chunk_count(),
            heap_bytes: self.shared.slab.held_bytes(),
            shapes: self.shared.shapes.len(),
            symbols: cell::symbol::count(&self.shared),
            collections,
            last,
        }
    }
}

impl Root {
    /// The rooted object, borrowed from `heap` (an error if the root belongs to another, or
    /// [`Error::WrongKind`] if it roots something else).
    pub fn get<'h>(&self, heap: &'h Heap) -> Result<Obj<'h>, Error> {
        self.value_in(&heap.shared)?
            .as_object()
            .ok_or(Error::WrongKind)
    }

    /// The rooted value, borrowed from `heap` (an error if the root belongs to another).
    pub fn value<'h>(&self, heap: &'h Heap) -> Result<Value<'h>, Error> {
        self.value_in(&heap.shared)
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        gc::finalize_all(self.shared_mut());
    }
}

impl core::fmt::Debug for Mutator<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Mutator")
            .field("cells", &self.cells_allocated())
            .finish()
    }
}

impl<'h> Mutator<'h> {
    #[inline]
    fn shared(&self) -> &'h HeapShared {
        self.shared
    }

    /// The heap.
    pub fn heap(&self) -> &'h Heap {
        self.heap
    }

    /// Slab cells this mutator has allocated: objects, and also the cells of strings,
    /// symbols, weak refs, weak maps and finalization registries.
    pub fn cells_allocated(&self) -> u64 {
        self.cache.cells().iter().sum()
    }

    /// Slab cells this mutator has allocated, per slab class (see `SIZE_CLASSES`).
    pub fn cells_allocated_per_class(&self) -> [u64; SIZE_CLASSES.len()] {
        self.cache.cells()
    }

    #[inline]
    fn check_values(&self, values: &[Value<'h>]) -> Result<(), Error> {
        if !values.iter().any(|v| v.word.is_cell()) {
            return Ok(());
        }
        let me: *const HeapShared = self.shared();
        for v in values {
            if let Some(h) = v.heap_tag()
                && h != me.cast()
            {
                return Err(Error::ForeignHeap);
            }
        }
        Ok(())
    }

    #[inline]
    fn check_proto(&self, proto: Option<Obj<'h>>) -> Result<(), Error> {
        let me: *const HeapShared = self.shared();
        match proto {
            Some(p) if p.heap_tag() != me.cast() => Err(Error::ForeignHeap),
            _ => Ok(()),
        }
    }

    /// A new empty object without prototype.
    pub fn object(&self) -> Result<Obj<'h>, Error> {
        self.object_with_proto(None)
    }

    /// A new empty object with prototype `proto`.
    pub fn object_with_proto(&self, proto: Option<Obj<'h>>) -> Result<Obj<'h>, Error> {
        self.check_proto(proto)?;
        let shared = self.shared();
        gc::alloc_object(shared, &self.cache, shared.shapes.root(), proto, 0, &[])
    }

    /// A new empty array.
    pub fn array(&self) -> Result<Obj<'h>, Error> {
        let shared = self.shared();
        gc::alloc_object(
            shared,
            &self.cache,
            shared.shapes.root(),
            None,
            TAG_ARRAY,
            &[],
        )
    }

    /// A weak reference to `target` (see [`WeakRef`]). Errors: a target of another heap,
    /// allocation failure.
    pub fn weak_ref(&self, target: Obj<'h>) -> Result<WeakRef<'h>, Error> {
        cell::weak::alloc_weak_ref(self.shared(), &self.cache, target)
    }

    /// A new, empty weak map (see [`WeakMap`]). Errors: allocation failure.
    pub fn weak_map(&self) -> Result<WeakMap<'h>, Error> {
        cell::ephemeron::alloc_weak_map(self.shared(), &self.cache)
    }

    /// A new finalization registry whose callback is `callback(mutator, held)` (see
    /// [`FinalizationRegistry`]). The callback may allocate and use any object; it runs
    /// when the host calls [`Mutator::run_finalizers`] or [`Heap::run_finalizers`], never
    /// inside a collection. Errors: allocation failure (the callback is dropped).
    pub fn finalization_registry<F>(&self, callback: F) -> Result<FinalizationRegistry<'h>, Error>
    where
        F: for<'a> Fn(&Mutator<'a>, Value<'a>) -> Result<(), Error> + Send + Sync + 'static,
    {
        let shared = self.shared();
        let b = HostBox::new::<MutatorFamily, _>(shared.raw(), FinalizerCallback(callback))?;
        cell::finreg::alloc_registry(shared, &self.cache, b)
    }

    /// Runs the queued finalization callbacks, one at a time, until none is left (also
    /// those queued by a collection while earlier ones ran); how many ran. Each
    /// registration is taken off its registry before its callback runs, so no callback
    /// runs twice, and its held value is alive (the collector kept it). If a callback
    /// returns an error, its registration is consumed and the error is returned; the
    /// rest stay queued for the next call.
    pub fn run_finalizers(&self) -> Result<usize, Error> {
        let mut ran = 0;
        while let Some((reg, held)) = cell::finreg::take_pending(self.shared()) {
            reg.run_callback::<MutatorFamily>(self, held)?;
            ran += 1;
        }
        Ok(ran)
    }

    /// A new symbol, unique, with an optional description (see [`Symbol`]; the description
    /// is interned). Errors: allocation failure, a new description past the bound on
    /// interned names ([`MAX_INTERNED_BYTES`](crate::MAX_INTERNED_BYTES)).
    pub fn symbol(&self, description: Option<&str>) -> Result<Symbol<'h>, Error> {
        let d = match description {
            Some(d) => Some(Key::try_new(d).ok_or(Error::Unsupported(
                "a symbol description past the bound on interned names",
            ))?),
            None => None,
        };
        cell::symbol::alloc_symbol(self.shared(), &self.cache, d)
    }

    /// A new string value holding a copy of `text` (see [`HeapString`]): a heap cell,
    /// freed by the collection after it became unreachable (unlike an interned [`Key`]).
    /// Errors: allocation failure, a text longer than
    /// [`MAX_STRING_BYTES`](crate::MAX_STRING_BYTES).
    pub fn string(&self, text: &str) -> Result<HeapString<'h>, Error> {
        cell::string::alloc_string(self.shared(), &self.cache, text)
    }

    /// A new native closure: a function object (usable as getter or setter) that calls
    /// `f(mutator, this, argument, env)`. `f` may capture host data (it is moved into the
    /// heap's allocator and dropped with the function object); `env` is a value of this
    /// heap the function keeps alive (traced with it; an object there is the closure's
    /// mutable, collected state). Call it with [`Mutator::call`] or [`Scope::call`], and
    /// use [`Mutator::get`] and [`Mutator::set`] to reach it as an accessor: it gets the
    /// mutator, so it can allocate (it cannot collect: see [`Mutator::scoped_closure`]).
    /// Errors: an `env` of another heap, allocation failure (`f` is dropped).
    pub fn closure<F>(&self, env: Value<'h>, f: F) -> Result<Obj<'h>, Error>
    where
        F: for<'a> Fn(&Mutator<'a>, Value<'a>, Value<'a>, Value<'a>) -> Result<Value<'a>, Error>
            + Send
            + Sync
            + 'static,
    {
        let b = HostBox::new::<MutatorFamily, _>(self.shared().raw(), NativeClosure(f))?;
        self.function_with(env, b)
    }

    /// A new native closure that takes a handle scope and handles:
    /// `f(scope, this, argument, env)`, for natives that run long enough to need a
    /// safepoint (an interpreter's `Array.prototype.map` calling back into the program):
    /// called with [`Scope::call`] in a [`Context`], its scope collects
    /// ([`Scope::collect_if_due`]), and its handles (the arguments among them) stay valid.
    /// Called through a plain mutator ([`Mutator::call`], getters and setters) its scope
    /// cannot collect. It returns a handle of its scope (or of an outer one), which the
    /// call hands out to the caller. Errors as for [`Mutator::closure`].
    pub fn scoped_closure<F>(&self, env: Value<'h>, f: F) -> Result<Obj<'h>, Error>
    where
        F: for<'s> Fn(&mut Scope<'s>, Local<'s>, Local<'s>, Local<'s>) -> Result<Local<'s>, Error>
            + Send
            + Sync
            + 'static,
    {
        let b = HostBox::new::<ScopeFamily, _>(self.shared().raw(), ScopedClosure(f))?;
        self.function_with(env, b)
    }

    /// A function object owning the host closure `b` and `env` (`b` is freed on failure).
    fn function_with(&self, env: Value<'h>, b: HostBox) -> Result<Obj<'h>, Error> {
        let shared = self.shared();
        if env
            .heap_tag()
            .is_some_and(|t| t != (shared as *const HeapShared).cast())
        {
            b.free(shared.raw());
            return Err(Error::ForeignHeap);
        }
        let o = match gc::alloc_object(
            shared,
            &self.cache,
            shared.shapes.root(),
            None,
            TAG_FUNCTION,
            &[],
        ) {
            Ok(o) => o,
            Err(e) => {
                b.free(shared.raw());
                return Err(e);
            }
        };
        // On failure the closure is freed; the unpublished function cell is garbage the
        // next collection frees.
        crate::object::install_closure(o, b, env)?;
        Ok(o)
    }

    /// Calls a function object (a native function or closure) with `this` and one
    /// argument, giving a native closure this mutator (a scoped one gets a scope of this
    /// mutator that cannot collect). Errors: a function of another heap, not a function
    /// (`NotCallable`), a restricted object of another thread, and what the function
    /// returns.
    pub fn call(&self, f: Obj<'h>, this: Value<'h>, arg: Value<'h>) -> Result<Value<'h>, Error> {
        if f.heap_tag() != (self.shared() as *const HeapShared).cast() {
            return Err(Error::ForeignHeap);
        }
        match f.closure()? {
            Some((host, env)) if host.is::<ScopeFamily>() => {
                self.call_scoped_here(host, [this, arg, env])
            }
            Some((host, env)) => host.call::<MutatorFamily>(self, [this, arg, env]),
            None => f.call(this, arg),
        }
    }

    /// `[[Get]]` as [`Obj::get`], calling getters through [`Mutator::call`] (so a native
    /// closure getter gets this mutator).
    pub fn get(&self, o: Obj<'h>, key: impl Into<PropertyKey>) -> Result<Value<'h>, Error> {
        o.get_with(key.into(), &mut |f, this, arg| self.call(f, this, arg))
    }

    /// `[[Set]]` as [`Obj::set`], calling setters through [`Mutator::call`].
    pub fn set(
        &self,
        o: Obj<'h>,
        key: impl Into<PropertyKey>,
        value: Value<'h>,
    ) -> Result<(), Error> {
        o.set_with(key.into(), value, &mut |f, this, arg| {
            self.call(f, this, arg)
        })
    }

    /// A new native function object (usable as getter or setter).
    pub fn function(&self, f: NativeFn) -> Result<Obj<'h>, Error> {
        let shared = self.shared();
        let o = gc::alloc_object(
            shared,
            &self.cache,
            shared.shapes.root(),
            None,
            TAG_FUNCTION,
            &[],
        )?;
        // An unpublished function cell is garbage the next collection frees if this fails.
        crate::object::install_native(o, f)?;
        Ok(o)
    }

    /// A new object from a prepared literal: one cell, the shape installed with one store.
    /// `values` may be shorter than the literal (the rest are `undefined`).
    #[inline(always)]
    pub fn literal(&self, lit: &Literal, values: &[Value<'h>]) -> Result<Obj<'h>, Error> {
        self.literal_with_proto(lit, None, values)
    }

    /// [`Mutator::literal`] with a prototype.
    // Inlined so that a caller's fixed-size value array unrolls the checks and slot stores;
    // literals past the inline slots take the out-of-line path.
    #[inline(always)]
    pub fn literal_with_proto(
        &self,
        lit: &Literal,
        proto: Option<Obj<'h>>,
        values: &[Value<'h>],
    ) -> Result<Obj<'h>, Error> {
        if values.len() > lit.len() {
            return Err(Error::TooManyValues);
        }
        let shared = self.shared();
        let shape = lit.shape(shared, self.heap_id)?;
        self.check_values(values)?;
        self.check_proto(proto)?;
        // (The literal's shape has one slot per property.)
        if lit.len() <= cell::INLINE_SLOTS {
            let used = lit.len() as u32;
            return gc::alloc_object_with(shared, &self.cache, shape, used, proto, 0, values);
        }
        self.literal_external(shape, proto, values)
    }

    /// A literal with more properties than inline slots: the external slots are allocated at
    /// once (a storage wrapper and one slot block), then the prepared shape is installed.
    #[inline(never)]
    fn literal_external(
        &self,
        shape: &'h cell::Shape,
        proto: Option<Obj<'h>>,
        values: &[Value<'h>],
    ) -> Result<Obj<'h>, Error> {
        let shared = self.shared();
        let o = gc::alloc_object(shared, &self.cache, shared.shapes.root(), proto, 0, &[])?;
        let g = o.lock();
        // On failure the cell is unreachable garbage the next collection frees.
        g.ensure_slots(shared.raw(), shape.slot_count())?;
        // Every slot the shape covers is written before the shape is installed, as the
        // tracer reads all of them (slot `i` holds the literal's `i`-th key).
        for slot in 0..shape.slot_count() {
            let v = values.get(slot as usize).copied();
            g.store_slot(slot, v.unwrap_or(Value::UNDEFINED));
        }
        g.set_shape(shape);
        drop(g);
        Ok(o)
    }
}

/// The heap layer's host-closure family: closures get a [`Mutator`] and values.
struct MutatorFamily;

impl Family for MutatorFamily {
    type Mut<'a, 'h: 'a> = &'a Mutator<'h>;
    type Val<'h> = Value<'h>;
}

/// A finalization callback as a host closure (`args[0]` is the held value).
struct FinalizerCallback<F>(F);

impl<F> HostCall<MutatorFamily> for FinalizerCallback<F>
where
    F: for<'a> Fn(&Mutator<'a>, Value<'a>) -> Result<(), Error> + Send + Sync + 'static,
{
    fn call<'a, 'h>(&self, m: &'a Mutator<'h>, args: [Value<'h>; 3]) -> Result<Value<'h>, Error>
    where
        'h: 'a,
    {
        (self.0)(m, args[0]).map(|()| Value::UNDEFINED)
    }
}

/// A native closure as a host closure (`args`: this, argument, environment).
struct NativeClosure<F>(F);

impl<F> HostCall<MutatorFamily> for NativeClosure<F>
where
    F: for<'a> Fn(&Mutator<'a>, Value<'a>, Value<'a>, Value<'a>) -> Result<Value<'a>, Error>
        + Send
        + Sync
        + 'static,
{
    fn call<'a, 'h>(&self, m: &'a Mutator<'h>, args: [Value<'h>; 3]) -> Result<Value<'h>, Error>
    where
        'h: 'a,
    {
        (self.0)(m, args[0], args[1], args[2])
    }
}

/// A scoped native closure as a host closure (handles: this, argument, environment).
struct ScopedClosure<F>(F);

impl<F> HostCall<ScopeFamily> for ScopedClosure<F>
where
    F: for<'s> Fn(&mut Scope<'s>, Local<'s>, Local<'s>, Local<'s>) -> Result<Local<'s>, Error>
        + Send
        + Sync
        + 'static,
{
    fn call<'a, 'h>(&self, s: &'a mut Scope<'h>, args: [Local<'h>; 3]) -> Result<Local<'h>, Error>
    where
        'h: 'a,
    {
        (self.0)(s, args[0], args[1], args[2])
    }
}

impl<'s> Scope<'s> {
    /// Calls the function object `f` with `this` and one argument, all handles; the result
    /// is a handle of this scope. A scoped native closure runs in a scope inside this one,
    /// which collects if this one does; other functions get this scope's mutator (see
    /// [`Mutator::call`]). Errors as for [`Mutator::call`], and no memory for a handle.
    pub fn call(
        &mut self,
        f: Local<'s>,
        this: Local<'s>,
        arg: Local<'s>,
    ) -> Result<Local<'s>, Error> {
        let scoped = {
            let fo = self.get(f).as_object().ok_or(Error::NotCallable)?;
            if fo.heap_tag() != (self.mutator().shared as *const HeapShared).cast() {
                return Err(Error::ForeignHeap);
            }
            matches!(fo.closure()?, Some((h, _)) if h.is::<ScopeFamily>())
        };
        if scoped {
            return self.call_scoped(f, this, arg);
        }
        let fo = self.get(f).as_object().ok_or(Error::NotCallable)?;
        let v = self.mutator().call(fo, self.get(this), self.get(arg))?;
        self.root(v)
    }
}
