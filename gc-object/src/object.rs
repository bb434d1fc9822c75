//! JavaScript object semantics over the cell (safe code).

use crate::cell::{
    ColdDraft, Locked, NativeFn, Obj, PropEntry, SIDE_ENTRIES, SIDE_RESTRICTED, TAG_ARRAY,
    TAG_FUNCTION, Value,
};
use crate::error::Error;
use crate::key::{Key, MAX_ARRAY_INDEX, PropertyKey, length_key};
use crate::sync::unmodeled;

const W: u8 = 1;
const E: u8 = 2;
const C: u8 = 4;
const ACCESSOR: u8 = 8;
const DEFAULT_ATTRS: u8 = W | E | C;

const SEALED: u8 = 1;
const FROZEN: u8 = 2;

/// Index properties may extend the dense elements by at most this many holes; further
/// away is [`Error::IndexTooSparse`] (the elements are dense, there is no sparse map).
pub const MAX_INDEX_GAP: u32 = 1 << 16;

/// A complete property descriptor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Property<'h> {
    /// A data property.
    Data {
        /// The value.
        value: Value<'h>,
        /// `[[Writable]]`.
        writable: bool,
        /// `[[Enumerable]]`.
        enumerable: bool,
        /// `[[Configurable]]`.
        configurable: bool,
    },
    /// An accessor property.
    Accessor {
        /// The getter (a function object) or `None`.
        get: Option<Obj<'h>>,
        /// The setter (a function object) or `None`.
        set: Option<Obj<'h>>,
        /// `[[Enumerable]]`.
        enumerable: bool,
        /// `[[Configurable]]`.
        configurable: bool,
    },
}

impl<'h> Property<'h> {
    /// A writable, enumerable, configurable data property (what assignment creates).
    pub fn data(value: Value<'h>) -> Self {
        Property::Data {
            value,
            writable: true,
            enumerable: true,
            configurable: true,
        }
    }

    fn attrs(&self) -> u8 {
        match *self {
            Property::Data {
                writable,
                enumerable,
                configurable,
                ..
            } => {
                (u8::from(writable) * W) | (u8::from(enumerable) * E) | (u8::from(configurable) * C)
            }
            Property::Accessor {
                enumerable,
                configurable,
                ..
            } => ACCESSOR | (u8::from(enumerable) * E) | (u8::from(configurable) * C),
        }
    }

    /// `[[Enumerable]]`.
    pub fn enumerable(&self) -> bool {
        self.attrs() & E != 0
    }
    /// `[[Configurable]]`.
    pub fn configurable(&self) -> bool {
        self.attrs() & C != 0
    }
}

#[derive(Clone, Copy, Debug)]
enum Loc {
    Slot(u32),
    Elem(u32),
    Length,
}

#[derive(Clone, Copy)]
struct Found<'h> {
    loc: Loc,
    attrs: u8,
    entry: Option<PropEntry<'h>>,
}

fn thread_id() -> u64 {
    static NEXT: unmodeled::AtomicU64 = unmodeled::AtomicU64::new(1);
    std::thread_local! {
        static ID: u64 = NEXT.fetch_add(1, unmodeled::Ordering::Relaxed);
    }
    ID.with(|id| *id)
}

pub(crate) fn install_native(o: Obj<'_>, f: NativeFn) -> Result<(), Error> {
    let g = o.lock();
    let mut d = ColdDraft::empty();
    d.native = Some(f);
    g.replace_cold(o.heap().raw(), &d)
}

fn draft_of<'h>(o: Obj<'h>) -> ColdDraft<'h> {
    o.cold().map_or_else(ColdDraft::empty, |c| c.draft())
}

impl<'h> Obj<'h> {
    /// Is this an array?
    pub fn is_array(self) -> bool {
        self.tags() & TAG_ARRAY != 0
    }

    /// Is this a function?
    pub fn is_function(self) -> bool {
        self.tags() & TAG_FUNCTION != 0
    }

    fn check_thread(self) -> Result<(), Error> {
        if self.side() & SIDE_RESTRICTED != 0 {
            let owner = self.cold().map_or(0, |c| c.owner());
            if owner != thread_id() {
                return Err(Error::WrongThread);
            }
        }
        Ok(())
    }

    fn check_value(self, v: Value<'h>) -> Result<(), Error> {
        match v.as_object() {
            Some(o) if o.heap_tag() != self.heap_tag() => Err(Error::ForeignHeap),
            _ => Ok(()),
        }
    }

    fn entry(self, key: PropertyKey) -> Option<PropEntry<'h>> {
        if self.side() & SIDE_ENTRIES == 0 {
            return None;
        }
        self.cold().and_then(|c| c.entry(key))
    }

    fn effective(self, base: u8) -> u8 {
        let mut a = base;
        let level = self.integrity();
        if level >= SEALED {
            a &= !C;
        }
        if level >= FROZEN && a & ACCESSOR == 0 {
            a &= !W;
        }
        a
    }

    fn dense_len(self) -> u32 {
        self.elements().map_or(0, |e| e.len())
    }

    /// The array's `length` (arrays only; `None` otherwise).
    pub fn array_length(self) -> Option<u32> {
        self.is_array().then(|| {
            let sparse = self.cold().map_or(0, |c| c.sparse_length());
            self.dense_len().max(sparse)
        })
    }

    #[inline]
    fn find_own(self, key: PropertyKey) -> Option<Found<'h>> {
        let (loc, default) = match key {
            PropertyKey::Name(k) => {
                if self.is_array() && k == length_key() {
                    (Loc::Length, W)
                } else {
                    (Loc::Slot(self.shape().lookup(k)?), DEFAULT_ATTRS)
                }
            }
            PropertyKey::Index(i) => {
                self.elements()?.get(i)?;
                (Loc::Elem(i), DEFAULT_ATTRS)
            }
        };
        let entry = self.entry(key);
        let base = entry.map_or(default, |e| e.attrs);
        Some(Found {
            loc,
            attrs: self.effective(base),
            entry,
        })
    }

    fn read(self, f: Found<'h>, receiver: Obj<'h>) -> Result<Value<'h>, Error> {
        if f.attrs & ACCESSOR != 0 {
            let getter = f.entry.map_or(Value::UNDEFINED, |e| e.getter);
            return match getter.as_object() {
                Some(g) => g.call(receiver.value(), Value::UNDEFINED),
                None => Ok(Value::UNDEFINED),
            };
        }
        Ok(match f.loc {
            Loc::Slot(s) => self.slot(s),
            Loc::Elem(i) => self
                .elements()
                .and_then(|e| e.get(i))
                .unwrap_or(Value::UNDEFINED),
            Loc::Length => Value::number(f64::from(self.array_length().unwrap_or(0))),
        })
    }

    /// `[[Get]]`: own property or up the prototype chain; getters are called with this
    /// object as `this`. `undefined` when absent.
    #[inline(always)]
    pub fn get(self, key: impl Into<PropertyKey>) -> Result<Value<'h>, Error> {
        let key = key.into();
        // Fast path: an own named data property of an object without side flags (not
        // restricted, no attribute or accessor entries) is a shape lookup and one load.
        if let PropertyKey::Name(k) = key
            && self.side() == 0
            && self.tags() & TAG_ARRAY == 0
            && let Some(slot) = self.shape().lookup(k)
        {
            return Ok(self.slot(slot));
        }
        self.get_slow(key)
    }

    /// [`Obj::get`] through a [`PropertyCache`]: when this object has the shape the cache
    /// last saw (and no accessors, attributes or array elements), the value is one load from
    /// the slot the cache remembers, without searching the shape. Otherwise it is `get`, and
    /// the cache remembers this object's shape if the key is an own data property here.
    /// Same result as `get(cache.key())` in every case.
    #[inline(always)]
    pub fn get_cached(self, cache: &PropertyCache) -> Result<Value<'h>, Error> {
        if self.side() == 0 && self.tags() & TAG_ARRAY == 0 {
            let shape = self.shape();
            if shape.id() == cache.shape_id.get() {
                return Ok(self.slot(cache.slot.get()));
            }
            // (A canonical key is a name only if it can live in a shape.)
            if let PropertyKey::Name(k) = cache.key
                && let Some(slot) = shape.lookup(k)
            {
                cache.shape_id.set(shape.id());
                cache.slot.set(slot);
                return Ok(self.slot(slot));
            }
        }
        self.get_slow(cache.key)
    }

    #[inline(never)]
    fn get_slow(self, key: PropertyKey) -> Result<Value<'h>, Error> {
        let key = key.canonical();
        self.check_thread()?;
        let mut o = self;
        loop {
            if let Some(f) = o.find_own(key) {
                return o.read(f, self);
            }
            match o.proto() {
                Some(p) => {
                    p.check_thread()?;
                    o = p;
                }
                None => return Ok(Value::UNDEFINED),
            }
        }
    }

    /// The own property `key`, as a complete descriptor.
    pub fn get_own_property(
        self,
        key: impl Into<PropertyKey>,
    ) -> Result<Option<Property<'h>>, Error> {
        let key = key.into().canonical();
        self.check_thread()?;
        let Some(f) = self.find_own(key) else {
            return Ok(None);
        };
        Ok(Some(if f.attrs & ACCESSOR != 0 {
            let e = f.entry.expect("accessor without entry");
            Property::Accessor {
                get: e.getter.as_object(),
                set: e.setter.as_object(),
                enumerable: f.attrs & E != 0,
                configurable: f.attrs & C != 0,
            }
        } else {
            Property::Data {
                value: self.read(f, self)?,
                writable: f.attrs & W != 0,
                enumerable: f.attrs & E != 0,
                configurable: f.attrs & C != 0,
            }
        }))
    }

    /// Does the object have `key` itself (not through its prototype)?
    pub fn has_own(self, key: impl Into<PropertyKey>) -> Result<bool, Error> {
        self.check_thread()?;
        Ok(self.find_own(key.into().canonical()).is_some())
    }

    /// Calls a function object with `this` and one argument.
    pub fn call(self, this: Value<'h>, arg: Value<'h>) -> Result<Value<'h>, Error> {
        self.check_thread()?;
        match self.cold().and_then(|c| c.native()) {
            Some(f) => f(this, arg),
            None => Err(Error::NotCallable),
        }
    }

    /// `[[Set]]` with strict-mode errors: writes an own writable data property, calls an own
    /// or inherited setter, fails on a non-writable (own or inherited) property, otherwise
    /// adds an own property (if the object is extensible).
    #[inline]
    pub fn set(self, key: impl Into<PropertyKey>, value: Value<'h>) -> Result<(), Error> {
        let key = key.into();
        // Fast path: an existing own named property of a plain object without side flags
        // or integrity level is a writable data property: lock, check the shape did not
        // change, store.
        if let PropertyKey::Name(k) = key
            && !value.word.is_object()
            && self.side() == 0
            && self.integrity() == 0
            && self.tags() & TAG_ARRAY == 0
        {
            let shape = self.shape();
            if let Some(slot) = shape.lookup(k) {
                let g = self.lock();
                if core::ptr::eq(self.shape(), shape) && self.side() == 0 && self.integrity() == 0 {
                    g.store_slot(slot, value);
                    return Ok(());
                }
            }
        }
        self.set_slow(key, value)
    }

    #[inline(never)]
    fn set_slow(self, key: PropertyKey, value: Value<'h>) -> Result<(), Error> {
        let key = key.canonical();
        self.check_thread()?;
        self.check_value(value)?;
        if self.find_own(key).is_none() {
            // Inherited setter or read-only property?
            let mut p = self.proto();
            while let Some(o) = p {
                o.check_thread()?;
                if let Some(f) = o.find_own(key) {
                    if f.attrs & ACCESSOR != 0 {
                        return call_setter(f, key, self, value);
                    }
                    if f.attrs & W == 0 {
                        return Err(Error::NotWritable(key));
                    }
                    break;
                }
                p = o.proto();
            }
        }
        let g = self.lock();
        match self.find_own(key) {
            Some(f) if f.attrs & ACCESSOR != 0 => {
                drop(g);
                call_setter(f, key, self, value)
            }
            Some(f) if f.attrs & W == 0 => Err(Error::NotWritable(key)),
            Some(f) => write_found(&g, f, key, value),
            None => add_own(&g, key, value),
        }
    }

    /// `[[DefineOwnProperty]]` with a complete descriptor (JS `Object.defineProperty` with
    /// every field given). Errors: adding to a non-extensible object, changing a
    /// non-configurable property.
    pub fn define(self, key: impl Into<PropertyKey>, prop: Property<'h>) -> Result<(), Error> {
        let key = key.into().canonical();
        self.check_thread()?;
        let (value, getter, setter) = match prop {
            Property::Data { value, .. } => (value, Value::UNDEFINED, Value::UNDEFINED),
            Property::Accessor { get, set, .. } => (
                Value::UNDEFINED,
                get.map_or(Value::UNDEFINED, |o| o.value()),
                set.map_or(Value::UNDEFINED, |o| o.value()),
            ),
        };
        for v in [value, getter, setter] {
            self.check_value(v)?;
        }
        let attrs = prop.attrs();
        if attrs & ACCESSOR != 0 && matches!(key, PropertyKey::Index(_)) {
            return Err(Error::Unsupported(
                "accessor properties on array-index keys",
            ));
        }
        let g = self.lock();
        let cur = self.find_own(key);
        if let Some(f) = cur {
            if f.attrs & C == 0 {
                let same_kind = (f.attrs & ACCESSOR) == (attrs & ACCESSOR);
                let ok = attrs & C == 0
                    && (attrs & E) == (f.attrs & E)
                    && same_kind
                    && if attrs & ACCESSOR != 0 {
                        let e = f.entry.expect("accessor entry");
                        e.getter.same_value(getter) && e.setter.same_value(setter)
                    } else if f.attrs & W == 0 {
                        attrs & W == 0 && self.read(f, self)?.same_value(value)
                    } else {
                        true
                    };
                if !ok {
                    return Err(Error::NotConfigurable(key));
                }
            }
            if let Loc::Length = f.loc {
                if attrs & ACCESSOR != 0 || attrs & (E | C) != 0 {
                    return Err(Error::NotConfigurable(key));
                }
                let n = array_length_value(value)?;
                // The new length and the read-only entry are one cold-state change, so a
                // failed allocation leaves both as they were.
                return set_length_locked(&g, n, attrs & W == 0 && f.attrs & W != 0);
            }
            let base_default = attrs == DEFAULT_ATTRS;
            let had_entry = f.entry.is_some();
            if !base_default || had_entry {
                if base_default {
                    remove_entry(&g, key)?;
                } else {
                    set_entry(&g, key, attrs, getter, setter)?;
                }
            }
            match f.loc {
                Loc::Slot(s) => g.store_slot(s, value),
                Loc::Elem(i) => {
                    let e = self.elements().expect("elements");
                    g.store_element(e, i, value);
                }
                Loc::Length => unreachable!("`length` was handled by the branch above"),
            }
            return Ok(());
        }
        if !self.is_extensible_flag() {
            return Err(Error::NotExtensible(key));
        }
        let heap = self.heap();
        let with_entry =
            (attrs != DEFAULT_ATTRS).then(|| draft_with_entry(self, key, attrs, getter, setter));
        let mut t = g.txn(heap.raw());
        match key {
            PropertyKey::Name(k) => {
                let next = heap.shapes.with_added(self.shape(), k);
                t.slots(next.slot_count())?;
                if let Some(d) = &with_entry {
                    t.cold(d)?;
                }
                t.commit()?;
                if with_entry.is_some() {
                    g.set_side(self.side() | SIDE_ENTRIES);
                }
                let slot = next.lookup(k).expect("added key");
                g.store_slot(slot, value);
                g.set_shape(next);
                Ok(())
            }
            PropertyKey::Index(i) => {
                check_index(&g, i)?;
                t.elements(i + 1)?;
                if let Some(d) = &with_entry {
                    t.cold(d)?;
                }
                t.commit()?;
                if with_entry.is_some() {
                    g.set_side(self.side() | SIDE_ENTRIES);
                }
                let e = self.elements().expect("elements");
                g.store_element(e, i, value);
                Ok(())
            }
        }
    }

    /// `[[Delete]]` with strict-mode errors: `Ok(true)` if it was there, `Ok(false)` if not,
    /// an error for a non-configurable property.
    pub fn delete(self, key: impl Into<PropertyKey>) -> Result<bool, Error> {
        let key = key.into().canonical();
        self.check_thread()?;
        let g = self.lock();
        let Some(f) = self.find_own(key) else {
            return Ok(false);
        };
        if f.attrs & C == 0 {
            return Err(Error::NotConfigurable(key));
        }
        if f.entry.is_some() {
            remove_entry(&g, key)?;
        }
        match (f.loc, key) {
            (Loc::Slot(s), PropertyKey::Name(k)) => {
                let next = self.heap().shapes.with_deleted(self.shape(), k);
                g.set_shape(next);
                g.store_slot(s, Value::UNDEFINED);
            }
            (Loc::Elem(i), _) => {
                let e = self.elements().expect("elements");
                g.clear_element(e, i);
            }
            _ => unreachable!("length is not configurable"),
        }
        Ok(true)
    }

    /// Own keys in JS order: array indices ascending, then names in insertion order
    /// (`length` first for arrays).
    pub fn own_keys(self) -> Result<Vec<PropertyKey>, Error> {
        self.check_thread()?;
        let mut keys = Vec::new();
        if let Some(e) = self.elements() {
            for i in 0..e.len() {
                if e.get(i).is_some() {
                    keys.push(PropertyKey::Index(i));
                }
            }
        }
        if self.is_array() {
            keys.push(PropertyKey::Name(length_key()));
        }
        keys.extend(
            self.shape()
                .entries()
                .iter()
                .map(|&(k, _)| PropertyKey::Name(k)),
        );
        Ok(keys)
    }

    /// The prototype.
    pub fn prototype(self) -> Result<Option<Obj<'h>>, Error> {
        self.check_thread()?;
        Ok(self.proto())
    }

    /// Sets the prototype. Errors on a cycle, on a non-extensible object, or on an object of
    /// another heap.
    pub fn set_prototype(self, proto: Option<Obj<'h>>) -> Result<(), Error> {
        self.check_thread()?;
        // The cycle check and the store are one step for the whole heap (a per-object lock
        // cannot see a concurrent link made elsewhere in the chain).
        let _serial = crate::sync::lock(&self.heap().proto_lock);
        if let Some(p) = proto {
            self.check_value(p.value())?;
            let mut q = Some(p);
            while let Some(o) = q {
                if o == self {
                    return Err(Error::PrototypeCycle);
                }
                q = o.proto();
            }
        }
        let g = self.lock();
        if self.proto() == proto {
            return Ok(());
        }
        if !self.is_extensible_flag() {
            return Err(Error::NotExtensible(PropertyKey::Name(Key::new(
                "__proto__",
            ))));
        }
        g.set_proto(proto);
        Ok(())
    }

    /// Is the object extensible?
    pub fn is_extensible(self) -> Result<bool, Error> {
        self.check_thread()?;
        Ok(self.is_extensible_flag())
    }

    /// `Object.preventExtensions`.
    pub fn prevent_extensions(self) -> Result<(), Error> {
        self.check_thread()?;
        let g = self.lock();
        g.set_not_extensible();
        Ok(())
    }

    /// `Object.seal`: not extensible, every property non-configurable.
    pub fn seal(self) -> Result<(), Error> {
        self.check_thread()?;
        let g = self.lock();
        g.set_not_extensible();
        if self.integrity() < SEALED {
            g.set_integrity(SEALED);
        }
        Ok(())
    }

    /// `Object.freeze`: sealed, and every data property non-writable.
    pub fn freeze(self) -> Result<(), Error> {
        self.check_thread()?;
        let g = self.lock();
        g.set_not_extensible();
        g.set_integrity(FROZEN);
        Ok(())
    }

    fn test_integrity(self, frozen: bool) -> Result<bool, Error> {
        self.check_thread()?;
        if self.is_extensible_flag() {
            return Ok(false);
        }
        for k in self.own_keys()? {
            if let Some(f) = self.find_own(k)
                && (f.attrs & C != 0 || (frozen && f.attrs & ACCESSOR == 0 && f.attrs & W != 0))
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `Object.isSealed`.
    pub fn is_sealed(self) -> Result<bool, Error> {
        self.test_integrity(false)
    }

    /// `Object.isFrozen`.
    pub fn is_frozen(self) -> Result<bool, Error> {
        self.test_integrity(true)
    }

    /// Restricts the object to the calling thread: every operation from another thread
    /// returns [`Error::WrongThread`].
    pub fn restrict_to_current_thread(self) -> Result<(), Error> {
        self.check_thread()?;
        let g = self.lock();
        let mut d = draft_of(self);
        if d.owner != 0 {
            return if d.owner == thread_id() {
                Ok(())
            } else {
                Err(Error::WrongThread)
            };
        }
        d.owner = thread_id();
        g.replace_cold(self.heap().raw(), &d)?;
        g.set_side(self.side() | SIDE_RESTRICTED);
        Ok(())
    }

    /// Sets an array's `length` (truncating or extending).
    pub fn set_array_length(self, len: u32) -> Result<(), Error> {
        self.check_thread()?;
        if !self.is_array() {
            return Err(Error::NotAnArray);
        }
        let g = self.lock();
        if let Some(f) = self.find_own(PropertyKey::length())
            && f.attrs & W == 0
        {
            return Err(Error::NotWritable(PropertyKey::length()));
        }
        set_length_locked(&g, len, false)
    }

    /// Appends to an array (`a[a.length] = v`).
    pub fn push(self, v: Value<'h>) -> Result<(), Error> {
        let len = self.array_length().ok_or(Error::NotAnArray)?;
        if len > MAX_ARRAY_INDEX {
            return Err(Error::InvalidArrayLength);
        }
        self.set(PropertyKey::Index(len), v)
    }
}

fn call_setter<'h>(
    f: Found<'h>,
    key: PropertyKey,
    receiver: Obj<'h>,
    v: Value<'h>,
) -> Result<(), Error> {
    let setter = f.entry.map_or(Value::UNDEFINED, |e| e.setter);
    match setter.as_object() {
        Some(s) => s.call(receiver.value(), v).map(|_| ()),
        None => Err(Error::NoSetter(key)),
    }
}

fn array_length_value(v: Value<'_>) -> Result<u32, Error> {
    let n = v.as_number().ok_or(Error::InvalidArrayLength)?;
    if n >= 0.0 && n <= f64::from(u32::MAX) && n.fract() == 0.0 {
        Ok(n as u32)
    } else {
        Err(Error::InvalidArrayLength)
    }
}

fn write_found<'h>(
    g: &Locked<'h>,
    f: Found<'h>,
    key: PropertyKey,
    value: Value<'h>,
) -> Result<(), Error> {
    let o = g.obj();
    match f.loc {
        Loc::Slot(s) => g.store_slot(s, value),
        Loc::Elem(i) => {
            let e = o.elements().expect("elements");
            g.store_element(e, i, value);
        }
        Loc::Length => {
            let _ = key;
            set_length_locked(g, array_length_value(value)?, false)?;
        }
    }
    Ok(())
}

/// Checks that index `i` may be added (an array's non-writable length, the gap limit).
fn check_index(g: &Locked<'_>, i: u32) -> Result<(), Error> {
    let o = g.obj();
    if let Some(len) = o.array_length()
        && i >= len
        && let Some(f) = o.find_own(PropertyKey::length())
        && f.attrs & W == 0
    {
        return Err(Error::NotWritable(PropertyKey::length()));
    }
    if i > o.dense_len().saturating_add(MAX_INDEX_GAP) {
        return Err(Error::IndexTooSparse(i));
    }
    Ok(())
}

fn add_own<'h>(g: &Locked<'h>, key: PropertyKey, value: Value<'h>) -> Result<(), Error> {
    let o = g.obj();
    if !o.is_extensible_flag() {
        return Err(Error::NotExtensible(key));
    }
    match key {
        PropertyKey::Name(k) => {
            let heap = o.heap();
            let next = heap.shapes.with_added(o.shape(), k);
            g.ensure_slots(heap.raw(), next.slot_count())?;
            let slot = next.lookup(k).expect("added key");
            // The value first, then the shape (release): a reader that sees the key sees it.
            g.store_slot(slot, value);
            g.set_shape(next);
            Ok(())
        }
        PropertyKey::Index(i) => {
            check_index(g, i)?;
            let e = g.ensure_elements(o.heap().raw(), i + 1)?;
            g.store_element(e, i, value);
            Ok(())
        }
    }
}

fn draft_with_entry<'h>(
    o: Obj<'h>,
    key: PropertyKey,
    attrs: u8,
    getter: Value<'h>,
    setter: Value<'h>,
) -> ColdDraft<'h> {
    let mut d = draft_of(o);
    let e = PropEntry {
        key,
        attrs,
        getter,
        setter,
    };
    match d.entries.iter_mut().find(|x| x.key == key) {
        Some(x) => *x = e,
        None => d.entries.push(e),
    }
    d
}

fn set_entry<'h>(
    g: &Locked<'h>,
    key: PropertyKey,
    attrs: u8,
    getter: Value<'h>,
    setter: Value<'h>,
) -> Result<(), Error> {
    let o = g.obj();
    let d = draft_with_entry(o, key, attrs, getter, setter);
    g.replace_cold(o.heap().raw(), &d)?;
    g.set_side(o.side() | SIDE_ENTRIES);
    Ok(())
}

fn remove_entry(g: &Locked<'_>, key: PropertyKey) -> Result<(), Error> {
    let o = g.obj();
    let mut d = draft_of(o);
    d.entries.retain(|x| x.key != key);
    g.replace_cold(o.heap().raw(), &d)
}

/// Sets an array's length; `read_only` also makes `length` non-writable (in the same
/// cold-state change).
fn set_length_locked(g: &Locked<'_>, len: u32, read_only: bool) -> Result<(), Error> {
    let o = g.obj();
    let dense = o.dense_len();
    if len < dense {
        let e = o.elements().expect("elements");
        for i in (len..dense).rev() {
            if e.get(i).is_some()
                && let Some(f) = o.find_own(PropertyKey::Index(i))
                && f.attrs & C == 0
            {
                return Err(Error::NotConfigurable(PropertyKey::Index(i)));
            }
        }
    }
    let cur_sparse = o.cold().map_or(0, |c| c.sparse_length());
    let new_dense = dense.min(len);
    let new_sparse = if len > new_dense { len } else { 0 };
    let drop_entries = o.side() & SIDE_ENTRIES != 0
        && o.cold().is_some_and(|c| {
            c.draft()
                .entries
                .iter()
                .any(|x| matches!(x.key, PropertyKey::Index(i) if i >= len))
        });
    if new_sparse != cur_sparse || drop_entries || read_only {
        let mut d = if read_only {
            draft_with_entry(
                o,
                PropertyKey::length(),
                0,
                Value::UNDEFINED,
                Value::UNDEFINED,
            )
        } else {
            draft_of(o)
        };
        d.sparse_length = new_sparse;
        d.entries
            .retain(|x| !matches!(x.key, PropertyKey::Index(i) if i >= len));
        g.replace_cold(o.heap().raw(), &d)?;
        if read_only {
            g.set_side(o.side() | SIDE_ENTRIES);
        }
    }
    if len < dense {
        g.truncate_elements(o.elements().expect("elements"), len);
    }
    Ok(())
}

/// A property-access site cache (what an engine's inline cache keeps at a `obj.key` site):
/// the key, and the last shape seen with the slot the key has in it. Use it with
/// [`Obj::get_cached`] where the same key is read from many objects built alike.
///
/// A shape is remembered by its process-unique id, so a cache never trusts a stale entry: it
/// works with objects of any heap and outlives them. It is `Send` but not `Sync` (one per
/// thread, like a per-thread interpreter's caches).
///
/// ```
/// use gc_object::{Heap, PropertyCache, Value};
/// let heap = Heap::new();
/// let lit = heap.literal(&["x", "y"]);
/// let mut m = heap.mutator();
/// let y = PropertyCache::new("y");
/// for i in 0..3 {
///     let o = m.literal(&lit, &[Value::number(0.0), Value::number(i as f64)]).unwrap();
///     assert_eq!(o.get_cached(&y).unwrap(), Value::number(i as f64));
/// }
/// ```
#[derive(Debug, Clone)]
pub struct PropertyCache {
    key: PropertyKey,
    /// 0: nothing cached (no shape has id 0).
    shape_id: core::cell::Cell<u64>,
    slot: core::cell::Cell<u32>,
}

impl PropertyCache {
    /// An empty cache for `key` (an index-like name such as `"0"` is the array index, as in
    /// every object operation; index keys are never cached and always take `get`).
    pub fn new(key: impl Into<PropertyKey>) -> PropertyCache {
        let key = key.into().canonical();
        PropertyCache {
            key,
            shape_id: core::cell::Cell::new(0),
            slot: core::cell::Cell::new(0),
        }
    }

    /// The key this cache reads.
    pub fn key(&self) -> PropertyKey {
        self.key
    }
}
