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
//! The core does not know the mutator type of the layer above: a closure's argument
//! types come from a [`Family`] (the heap layer's mutator, `Mut<'h>`), and a call checks
//! that the family it is called with is the one the closure was stored for.

use core::alloc::Layout;
use core::any::TypeId;
use core::ptr::NonNull;

use super::Value;
use crate::error::Error;
use crate::slab::RawAlloc;

/// The argument types of host closures: `Mut<'h>` is what a closure gets to allocate with
/// (the heap layer's mutator).
pub(crate) trait Family: 'static {
    type Mut<'h>;
}

/// A host closure of family `Fam`: `call(mutator, [a, b, c])`.
pub(crate) trait HostCall<Fam: Family>: Send + Sync + 'static {
    fn call<'h>(&self, m: &mut Fam::Mut<'h>, args: [Value<'h>; 3]) -> Result<Value<'h>, Error>;
}

type CallThunk<Fam> = for<'h> unsafe fn(
    NonNull<u8>,
    &mut <Fam as Family>::Mut<'h>,
    [Value<'h>; 3],
) -> Result<Value<'h>, Error>;

#[repr(C)]
struct HostHead {
    family: TypeId,
    /// A `CallThunk<Fam>` for the family above, erased.
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

/// # Safety
/// `data` points at a live `F` (inside its `HostBox`).
unsafe fn call_thunk<'h, Fam: Family, F: HostCall<Fam>>(
    data: NonNull<u8>,
    m: &mut Fam::Mut<'h>,
    args: [Value<'h>; 3],
) -> Result<Value<'h>, Error> {
    // SAFETY: contract.
    unsafe { data.cast::<F>().as_ref() }.call(m, args)
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
        let thunk: CallThunk<Fam> = call_thunk::<Fam, F>;
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

    fn data(&self) -> NonNull<u8> {
        let p = self
            .0
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(self.head().offset);
        NonNull::new(p).expect("inside a live allocation")
    }

    /// Calls the closure. [`Error::WrongKind`] if it was stored for another family.
    pub(crate) fn call<'h, Fam: Family>(
        &self,
        m: &mut Fam::Mut<'h>,
        args: [Value<'h>; 3],
    ) -> Result<Value<'h>, Error> {
        let head = self.head();
        if head.family != TypeId::of::<Fam>() {
            return Err(Error::WrongKind);
        }
        // SAFETY: `call` was made from a `CallThunk<Fam>` for this very family (checked
        // above); function pointers round-trip through `*const ()`.
        let thunk = unsafe { core::mem::transmute::<*const (), CallThunk<Fam>>(head.call) };
        // SAFETY: the data is the `F` the thunk was made for, alive while `self` is.
        unsafe { thunk(self.data(), m, args) }
    }

    /// The address, to keep in a cell (`from_raw` takes it back).
    pub(crate) fn into_raw(self) -> *mut u8 {
        self.0.as_ptr().cast()
    }

    /// # Safety
    /// `p` came from [`HostBox::into_raw`] and its box has not been freed. A `HostBox` has
    /// no `Drop`: one rebuilt only to call the closure, while the cell that owns it keeps
    /// it, is simply forgotten; only the owner calls [`HostBox::free`], once.
    pub(crate) unsafe fn from_raw(p: NonNull<u8>) -> HostBox {
        HostBox(p.cast())
    }

    /// Drops the closure and frees its allocation.
    pub(crate) fn free(self, raw: &dyn RawAlloc) {
        let (drop, layout, data) = (self.head().drop, self.head().layout, self.data());
        // SAFETY: the closure is live and never used again (`self` is consumed).
        unsafe { drop(data) };
        // SAFETY: allocated by `new` from `raw` with `layout`.
        unsafe { raw.dealloc(self.0.cast(), layout) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::{Counter, n};
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Fam;
    impl Family for Fam {
        type Mut<'h> = Vec<u32>;
    }
    struct Other;
    impl Family for Other {
        type Mut<'h> = ();
    }

    struct Adder(Arc<AtomicUsize>, u32);
    impl HostCall<Fam> for Adder {
        fn call<'h>(&self, m: &mut Vec<u32>, a: [Value<'h>; 3]) -> Result<Value<'h>, Error> {
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
        assert_eq!(b.call::<Fam>(&mut log, [n(1), n(2), n(3)]), Ok(n(2)));
        assert_eq!(log, [7]);
        assert_eq!(
            b.call::<Other>(&mut (), [n(1), n(2), n(3)]),
            Err(Error::WrongKind)
        );
        // SAFETY: the address came from `into_raw` and is owned again.
        let b = unsafe { HostBox::from_raw(NonNull::new(b.into_raw()).unwrap()) };
        b.free(&c);
        assert_eq!((c.live(), drops.load(Ordering::Relaxed)), (0, 1));
    }
}
