//! The error type of every fallible operation.

use crate::key::PropertyKey;

/// Why an operation failed (JS: a `TypeError` or `RangeError`; Rust: out of memory). The
/// object is unchanged whenever an error is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The heap's allocator refused memory.
    OutOfMemory,
    /// Writing a non-writable property (own or inherited).
    NotWritable(PropertyKey),
    /// Deleting or redefining a non-configurable property.
    NotConfigurable(PropertyKey),
    /// Adding a property to (or changing the prototype of) a non-extensible object.
    NotExtensible(PropertyKey),
    /// Assigning to an accessor property without a setter.
    NoSetter(PropertyKey),
    /// The object is restricted to another thread.
    WrongThread,
    /// A value, prototype, root or literal of another heap.
    ForeignHeap,
    /// Setting a prototype would make a cycle.
    PrototypeCycle,
    /// An array length that is not an integer in `0 ..= 2^32 - 1`.
    InvalidArrayLength,
    /// An array operation on a non-array.
    NotAnArray,
    /// Calling something that is not a function.
    NotCallable,
    /// More values than the literal has properties.
    TooManyValues,
    /// A feature this object model does not provide.
    Unsupported(&'static str),
    /// Raised by a native function.
    Thrown(&'static str),
    /// The target of a weak reference has been collected.
    Collected,
    /// A root or value that is not what the operation needs (e.g. `Root::get` of a
    /// rooted weak reference).
    WrongKind,
    /// Registering a target with itself as the held value (it would keep itself alive).
    HeldIsTarget,
    /// A native closure called without a mutator ([`Obj::call`](crate::Obj::call), or a
    /// getter or setter reached by [`Obj::get`](crate::Obj::get) or `set`): call it
    /// through [`Mutator::call`](crate::Mutator::call), `Mutator::get` or `Mutator::set`.
    NeedsMutator,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::OutOfMemory => f.write_str("out of memory"),
            Error::NotWritable(k) => write!(f, "TypeError: property {k} is not writable"),
            Error::NotConfigurable(k) => write!(f, "TypeError: property {k} is not configurable"),
            Error::NotExtensible(k) => write!(
                f,
                "TypeError: cannot add property {k}: object is not extensible"
            ),
            Error::NoSetter(k) => write!(f, "TypeError: property {k} has a getter but no setter"),
            Error::WrongThread => f.write_str("TypeError: object is restricted to another thread"),
            Error::ForeignHeap => f.write_str("value belongs to another heap"),
            Error::PrototypeCycle => f.write_str("TypeError: cyclic prototype chain"),
            Error::InvalidArrayLength => f.write_str("RangeError: invalid array length"),
            Error::NotAnArray => f.write_str("TypeError: not an array"),
            Error::NotCallable => f.write_str("TypeError: not a function"),
            Error::TooManyValues => f.write_str("more values than literal properties"),
            Error::Unsupported(what) => write!(f, "unsupported: {what}"),
            Error::Thrown(what) => write!(f, "thrown: {what}"),
            Error::Collected => f.write_str("the weak reference's target was collected"),
            Error::WrongKind => f.write_str("not a value of the kind this operation needs"),
            Error::NeedsMutator => {
                f.write_str("a native closure needs a mutator (Mutator::call, get or set)")
            }
            Error::HeldIsTarget => {
                f.write_str("TypeError: a finalization target cannot be its own held value")
            }
        }
    }
}

impl std::error::Error for Error {}
