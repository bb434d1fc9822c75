//! Host closures kept by heap cells (finalization callbacks, native closures): the closure
//! is moved into one allocation of the heap's allocator, behind a small header that knows
//! how to call it and how to drop it, so a cell keeps one thin pointer to it.
//!
//! ```text
//!  HostBox ---> +--------------------------------------------+----------------+
//!               | HostHead: family id, call thunk, drop      | the closure F  |
//!               | thunk, layout of the allocation, offset    |                |
//!               +--------------------------------------------+----------------+
//! ```
//!
//! A closure's argument types come from a [`Family`] (a mutator and values, or a handle
//! scope and handles), and a call checks that the family it is called with is the one the
//! closure was stored for.

use core::alloc::Layout;
use core::any::TypeId;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::error::Error;
use crate::slab::RawAlloc;

/// The argument types of host closures: `Mut<'a, 'h>` is what a closure gets to allocate
/// with (a mutator borrowed for `'a`, or a handle scope), `Val<'h>` its arguments and
/// result.
pub(crate) trait Family: 'static {
    type Mut<'a, 'h: 'a>;
    type Val<'h>;
}

/// A host closure of family `Fam`: `call(mutator, [a, b, c])`.
pub(crate) trait HostCall<Fam: Family>: Send + Sync + 'static {
    fn call<'a, 'h>(
        &self,
        m: Fam::Mut<'a, 'h>,
        args: [Fam::Val<'h>; 3],
    ) -> Result<Fam::Val<'h>, Error>
    where
        'h: 'a;
}

/// Makes the trait object of the closure at an address (the box's `F` for family `Fam`).
type DynThunk<Fam> = fn(NonNull<u8>) -> *const dyn HostCall<Fam>;

#[repr(C)]
struct HostHead {
    family: TypeId,
    /// A `DynThunk<Fam>` for the family above, erased.
    call: *const (),
    drop: unsafe fn(NonNull<u8>),
    layout: Layout,
    offset: usize,
}

/// A closure in the heap's allocator (see the module docs). Not `Copy`: exactly one owner
/// frees it ([`HostBox::free`]).
#[derive(Debug)]
pub(crate) struct HostBox(NonNull<HostHead>);

// SAFETY: the closure is `Send + Sync` (`HostCall`'s bounds); the header is immutable.
unsafe impl Send for HostBox {}
// SAFETY: as for `Send`.
unsafe impl Sync for HostBox {}

fn dyn_thunk<Fam: Family, F: HostCall<Fam>>(data: NonNull<u8>) -> *const dyn HostCall<Fam> {
    data.cast::<F>().as_ptr().cast_const()
}

/// # Safety
/// `data` points at a live `F` that is never used again.
unsafe fn drop_thunk<F>(data: NonNull<u8>) {
    // SAFETY: contract.
    unsafe { core::ptr::drop_in_place(data.cast::<F>().as_ptr()) }
}

impl HostBox {
    /// Moves `f` into an allocation of `raw`. On failure `f` is dropped.
    pub(crate) fn new<Fam: Family, F: HostCall<Fam>>(
        raw: &dyn RawAlloc,
        f: F,
    ) -> Result<HostBox, Error> {
        let (layout, offset) = Layout::new::<HostHead>()
            .extend(Layout::new::<F>())
            .map_err(|_| Error::OutOfMemory)?;
        let p = raw.alloc(layout).ok_or(Error::OutOfMemory)?;
        let thunk: DynThunk<Fam> = dyn_thunk::<Fam, F>;
        let head = HostHead {
            family: TypeId::of::<Fam>(),
            call: thunk as *const (),
            drop: drop_thunk::<F>,
            layout,
            offset,
        };
        // SAFETY: a fresh allocation of `layout`: the header at 0, aligned.
        unsafe { p.cast::<HostHead>().as_ptr().write(head) };
        // SAFETY: `F` at `offset` inside the allocation, aligned (`Layout::extend`).
        unsafe { p.as_ptr().wrapping_add(offset).cast::<F>().write(f) };
        Ok(HostBox(p.cast()))
    }

    fn head(&self) -> &HostHead {
        // SAFETY: live until `free` consumes the box.
        unsafe { self.0.as_ref() }
    }

    /// Borrows the closure for calls.
    pub(crate) fn as_ref(&self) -> HostRef<'_> {
        HostRef(self.0, PhantomData)
    }

    /// The address (the box stays owned by `self`).
    pub(crate) fn addr(&self) -> *mut u8 {
        self.0.as_ptr().cast()
    }

    /// The address, to keep in a cell (`from_raw` takes it back).
    pub(crate) fn into_raw(self) -> *mut u8 {
        self.0.as_ptr().cast()
    }

    /// # Safety
    /// `p` came from [`HostBox::into_raw`], its box has not been freed, and no other
    /// `HostBox` of it exists: the caller owns it again (to free it).
    pub(crate) unsafe fn from_raw(p: NonNull<u8>) -> HostBox {
        HostBox(p.cast())
    }

    /// Drops the closure and frees its allocation.
    pub(crate) fn free(self, raw: &dyn RawAlloc) {
        let (drop, layout, data) = (self.head().drop, self.head().layout, self.as_ref().data());
        // SAFETY: the closure is live and never used again (`self` is consumed).
        unsafe { drop(data) };
        // SAFETY: allocated by `new` from `raw` with `layout`.
        unsafe { raw.dealloc(self.0.cast(), layout) };
    }
}

/// A host closure borrowed from the cell that owns it (for `'o`: while the cell is alive),
/// to call it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostRef<'o>(NonNull<HostHead>, PhantomData<&'o HostHead>);

impl<'o> HostRef<'o> {
    /// # Safety
    /// `p` came from [`HostBox::into_raw`] and the box stays alive (owned by a cell) for
    /// `'o`.
    pub(crate) unsafe fn from_raw(p: NonNull<u8>) -> HostRef<'o> {
        HostRef(p.cast(), PhantomData)
    }

    fn head(&self) -> &'o HostHead {
        // SAFETY: alive for 'o (construction).
        unsafe { self.0.as_ref() }
    }

    fn data(&self) -> NonNull<u8> {
        let p = self
            .0
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(self.head().offset);
        NonNull::new(p).expect("inside a live allocation")
    }

    /// Was the closure stored for family `Fam`?
    pub(crate) fn is<Fam: Family>(&self) -> bool {
        self.head().family == TypeId::of::<Fam>()
    }

    /// Calls the closure. [`Error::WrongKind`] if it was stored for another family.
    pub(crate) fn call<'a, 'h, Fam: Family>(
        self,
        m: Fam::Mut<'a, 'h>,
        args: [Fam::Val<'h>; 3],
    ) -> Result<Fam::Val<'h>, Error>
    where
        'h: 'a,
    {
        if !self.is::<Fam>() {
            return Err(Error::WrongKind);
        }
        // SAFETY: `call` was made from a `DynThunk<Fam>` for this very family (checked
        // above); function pointers round-trip through `*const ()`.
        let thunk = unsafe { core::mem::transmute::<*const (), DynThunk<Fam>>(self.head().call) };
        // SAFETY: the data is the `F` the thunk was made for, alive for 'o.
        let f = unsafe { &*thunk(self.data()) };
        f.call(m, args)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::Value;
    use super::super::testing::{Counter, n};
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Fam;
    impl Family for Fam {
        type Mut<'a, 'h: 'a> = &'a mut Vec<u32>;
        type Val<'h> = Value<'h>;
    }
    struct Other;
    impl Family for Other {
        type Mut<'a, 'h: 'a> = ();
        type Val<'h> = Value<'h>;
    }

    struct Adder(Arc<AtomicUsize>, u32);
    impl HostCall<Fam> for Adder {
        fn call<'a, 'h>(&self, m: &'a mut Vec<u32>, a: [Value<'h>; 3]) -> Result<Value<'h>, Error>
        where
            'h: 'a,
        {
            m.push(self.1);
            Ok(a[1])
        }
    }
    impl Drop for Adder {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_host_box_calls_its_closure_checks_its_family_and_frees_everything() {
        let c = Counter::default();
        let drops = Arc::new(AtomicUsize::new(0));
        let b = HostBox::new::<Fam, _>(&c, Adder(drops.clone(), 7)).unwrap();
        assert_eq!(c.live(), 1);
        let mut log = Vec::new();
        assert_eq!(
            b.as_ref().call::<Fam>(&mut log, [n(1), n(2), n(3)]),
            Ok(n(2))
        );
        assert_eq!(log, [7]);
        assert_eq!(
            b.as_ref().call::<Other>((), [n(1), n(2), n(3)]),
            Err(Error::WrongKind)
        );
        // SAFETY: the address came from `into_raw` and is owned again.
        let b = unsafe { HostBox::from_raw(NonNull::new(b.into_raw()).unwrap()) };
        b.free(&c);
        assert_eq!((c.live(), drops.load(Ordering::Relaxed)), (0, 1));
    }
}
