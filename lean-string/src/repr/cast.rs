//! Asking "is this generic `T` really `u32`?" without `T: 'static`.
//!
//! `ToLeanString` is implemented for every `T: Display`, and converts integers, `bool`,
//! `char` and our own strings without the formatting machinery. That needs to recognise the
//! concrete type behind `T`. `TypeId::of::<T>()` demands `T: 'static`, which the blanket
//! impl cannot require, so the id is read through a trait object whose lifetime bound is
//! widened to `'static`: lifetimes do not exist at run time, and the answer is only ever
//! compared with the ids of types that have no lifetime parameters ([`LifetimeFree`]), so
//! "same id" still means "same type".

use core::any::TypeId;
use core::marker::PhantomData;

/// Types that have no lifetime parameters, so a `T` with the same (lifetime-erased) type id
/// is exactly this type.
///
/// # Safety
/// Implement only for types without lifetime parameters.
pub(crate) unsafe trait LifetimeFree: 'static {}

/// Reports the type id of the type parameter of the `PhantomData` it is implemented for.
trait IdOfParam {
    fn id_of_param(&self) -> TypeId
    where
        Self: 'static;
}

impl<T: ?Sized> IdOfParam for PhantomData<T> {
    fn id_of_param(&self) -> TypeId
    where
        Self: 'static,
    {
        TypeId::of::<T>()
    }
}

/// `true` if `T` is `U`. Folds to a constant after inlining.
#[inline(always)]
fn is<T: ?Sized, U: LifetimeFree>() -> bool {
    let probe = PhantomData::<T>;
    let short: &dyn IdOfParam = &probe;
    // SAFETY: only the trait object's lifetime bound changes (same pointer, same vtable).
    // The one method reads no data and only names `T`, and its answer is compared with
    // the id of a type that has no lifetimes, which no other `T` can share.
    let wide: &(dyn IdOfParam + 'static) =
        unsafe { core::mem::transmute::<&dyn IdOfParam, &(dyn IdOfParam + 'static)>(short) };
    wide.id_of_param() == TypeId::of::<U>()
}

/// `v` as a `&U` if `T` is `U`.
#[inline(always)]
pub(crate) fn downcast_ref<T: ?Sized, U: LifetimeFree>(v: &T) -> Option<&U> {
    if is::<T, U>() {
        // SAFETY: `T` is `U` (see `is`), so this is the same reference at the same type
        // (`U: Sized`, so `T` is too and the pointer is thin).
        Some(unsafe { &*core::ptr::from_ref(v).cast::<U>() })
    } else {
        None
    }
}

macro_rules! lifetime_free {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: a type without lifetime parameters.
        unsafe impl LifetimeFree for $t {}
    )*};
}
lifetime_free!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64,
    bool,
    char,
    core::num::NonZero<u8>,
    core::num::NonZero<u16>,
    core::num::NonZero<u32>,
    core::num::NonZero<u64>,
    core::num::NonZero<u128>,
    core::num::NonZero<usize>,
    core::num::NonZero<i8>,
    core::num::NonZero<i16>,
    core::num::NonZero<i32>,
    core::num::NonZero<i64>,
    core::num::NonZero<i128>,
    core::num::NonZero<isize>,
    alloc::string::String,
    crate::LeanStr,
);
// SAFETY: the header policies are lifetime-free marker types.
unsafe impl<L: super::heap::HeaderPolicy> LifetimeFree for crate::LeanStringWith<L> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_exactly_the_named_type() {
        assert!(downcast_ref::<u32, u32>(&7).is_some());
        assert!(downcast_ref::<i32, u32>(&7).is_none());
        assert!(downcast_ref::<&str, u8>(&"x").is_none());
        fn through_generic<T: ?Sized>(v: &T) -> bool {
            downcast_ref::<T, bool>(v).is_some()
        }
        assert!(through_generic(&true));
        assert!(!through_generic("true"));
        let s = alloc::string::String::from("a");
        let r: &alloc::string::String = &s;
        assert!(!through_generic::<&alloc::string::String>(&r));
        assert_eq!(
            downcast_ref::<_, alloc::string::String>(&s).map(|s| s.as_str()),
            Some("a")
        );
    }
}
