//! JavaScript object semantics over the cell (safe code): properties here, elements and
//! arrays in `array`, property caches in `cache`.

mod array;
mod cache;

pub use array::{DENSE_ALWAYS, DENSE_SPREAD};
pub use cache::{CACHE_SHAPES, MEGAMORPHIC_ENTRIES, PropertyCache};

use crate::cell::host::{HostBox, HostRef};
use crate::cell::{
    ColdDraft, INLINE_SLOTS, Locked, NativeFn, Obj, PropEntry, SIDE_DICT, SIDE_ENTRIES,
    SIDE_RESTRICTED, TAG_FUNCTION, Value,
};

use crate::error::Error;
use crate::key::{Key, PropertyKey, length_key};
use crate::sync::unmodeled;
use array::{add_index, array_length_value, remove_index, set_length_locked};

const W: u8 = 1;
const E: u8 = 2;
const C: u8 = 4;
const ACCESSOR: u8 = crate::cell::ATTR_ACCESSOR;
const DEFAULT_ATTRS: u8 = W | E | C;

const SEALED: u8 = 1;
const FROZEN: u8 = 2;

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

/// Where an own property lives. Dictionary and sparse positions are valid while the lock
/// is held (a compaction moves entries); the value read with them is kept for lock-free
/// readers.
#[derive(Clone, Copy, Debug)]
enum Loc<'h> {
    Slot(u32),
    Dict(u32, Value<'h>),
    Elem(u32),
    Sparse(u32, Value<'h>),
    Length,
}

#[derive(Clone, Copy)]
struct Found<'h> {
    loc: Loc<'h>,
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

/// Gives a fresh function object its native closure (owned by the object from here on)
/// and environment. On failure nothing was installed and the closure is freed.
pub(crate) fn install_closure<'h>(
    o: Obj<'h>,
    closure: HostBox,
    env: Value<'h>,
) -> Result<(), Error> {
    let g = o.lock();
    let mut d = ColdDraft::empty();
    d.closure = closure.addr();
    d.env = env;
    match g.replace_cold(o.heap().raw(), &d) {
        Ok(()) => {
            // The cold state owns it now.
            let _ = closure.into_raw();
            Ok(())
        }
        Err(e) => {
            drop(g);
            closure.free(o.heap().raw());
            Err(e)
        }
    }
}

pub(super) fn draft_of<'h>(o: Obj<'h>) -> ColdDraft<'h> {
    o.cold().map_or_else(ColdDraft::empty, |c| c.draft())
}

impl Value<'_> {
    /// JS `typeof`: `"undefined"`, `"object"` (null, objects, weak references, weak maps,
    /// finalization registries), `"boolean"`, `"number"`, `"string"` (interned or string
    /// value), `"symbol"` or `"function"` (native functions and closures).
    pub fn type_of(self) -> &'static str {
        if self.is_undefined() {
            "undefined"
        } else if self.as_bool().is_some() {
            "boolean"
        } else if self.as_number().is_some() {
            "number"
        } else if self.as_str().is_some() {
            "string"
        } else if self.as_symbol().is_some() {
            "symbol"
        } else if self.as_object().is_some_and(Obj::is_function) {
            "function"
        } else {
            "object"
        }
    }
}

impl<'h> Obj<'h> {
    /// Is this a function?
    pub fn is_function(self) -> bool {
        self.tags() & TAG_FUNCTION != 0
    }

    /// Does the object have any side state (storage wrapper or, with `wide-object`, any
    /// block)? A plain object of up to `INLINE_SLOTS` properties has none.
    pub fn has_side_state(self) -> Result<bool, Error> {
        self.check_thread()?;
        Ok(self.has_side_state_raw())
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
        match v.heap_tag() {
            Some(h) if h != self.heap_tag() => Err(Error::ForeignHeap),
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

    #[inline]
    fn find_own(self, key: PropertyKey) -> Option<Found<'h>> {
        let (loc, default) = match key {
            PropertyKey::Name(k) => {
                if self.is_array_raw() && k == length_key() {
                    (Loc::Length, W)
                } else {
                    // The mode comes from the shape: the dictionary shape is stored after the
                    // dictionary, and an older shape's slots still hold its values.
                    let shape = self.shape();
                    if shape.is_dict() {
                        let d = self.names().expect("dictionary mode without a dictionary");
                        let (pos, v) = d.get(k.id())?;
                        (Loc::Dict(pos, v), DEFAULT_ATTRS)
                    } else {
                        (Loc::Slot(shape.lookup(k)?), DEFAULT_ATTRS)
                    }
                }
            }
            PropertyKey::Index(i) => {
                if self.elements().and_then(|e| e.get(i)).is_some() {
                    (Loc::Elem(i), DEFAULT_ATTRS)
                } else {
                    let (pos, v) = self.sparse()?.get(i)?;
                    (Loc::Sparse(pos, v), DEFAULT_ATTRS)
                }
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

    fn read(
        self,
        f: Found<'h>,
        receiver: Obj<'h>,
        call: &mut Caller<'_, 'h>,
    ) -> Result<Value<'h>, Error> {
        if f.attrs & ACCESSOR != 0 {
            let getter = f.entry.map_or(Value::UNDEFINED, |e| e.getter);
            return match getter.as_object() {
                Some(g) => call(g, receiver.value(), Value::UNDEFINED),
                None => Ok(Value::UNDEFINED),
            };
        }
        Ok(match f.loc {
            Loc::Slot(s) => self.slot(s),
            Loc::Dict(_, v) | Loc::Sparse(_, v) => v,
            Loc::Elem(i) => self
                .elements()
                .and_then(|e| e.get(i))
                .unwrap_or(Value::UNDEFINED),
            Loc::Length => Value::number(f64::from(self.length_raw().unwrap_or(0))),
        })
    }

    /// `[[Get]]`: own property or up the prototype chain; getters are called with this
    /// object as `this`. `undefined` when absent.
    #[inline(always)]
    pub fn get(self, key: impl Into<PropertyKey>) -> Result<Value<'h>, Error> {
        let key = key.into();
        // Fast paths: an own named data property of an object without side flags (not
        // restricted, no attribute or accessor entries) is a shape lookup and one load; in
        // dictionary mode without other flags, one probe of its dictionary (the flag is
        // published after the dictionary, which holds every named property from then on;
        // an absent key, or a compaction in the way, takes the slow path).
        if let PropertyKey::Name(k) = key {
            let side = self.side();
            if side == 0 {
                if let Some(v) = self.shape_get(k) {
                    return Ok(v);
                }
            } else if side == SIDE_DICT
                && let Some(v) = self.names_seen_dict().get_fast(k.id())
            {
                return Ok(v);
            }
        }
        self.get_slow(key)
    }

    #[cold]
    #[inline(never)]
    pub(super) fn get_slow(self, key: PropertyKey) -> Result<Value<'h>, Error> {
        self.get_with(key, &mut default_call)
    }

    /// `[[Get]]` calling getters through `call` (the heap layer passes one that gives
    /// native closures its mutator).
    #[inline(always)]
    pub(crate) fn get_with(
        self,
        key: PropertyKey,
        call: &mut Caller<'_, 'h>,
    ) -> Result<Value<'h>, Error> {
        // Dictionary mode and no other flag: a dictionary probe.
        if let PropertyKey::Name(k) = key
            && self.side() == SIDE_DICT
            && let Some(d) = self.names()
            && let Some((_, v)) = d.get(k.id())
        {
            return Ok(v);
        }
        let key = key.canonical();
        self.check_thread()?;
        let mut o = self;
        loop {
            if let Some(f) = o.find_own(key) {
                return o.read(f, self, call);
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
                value: self.read(f, self, &mut default_call)?,
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

    /// Calls a function object with `this` and one argument. A native closure needs a
    /// mutator: [`Error::NeedsMutator`] here, call it with
    /// [`Mutator::call`](crate::Mutator::call).
    pub fn call(self, this: Value<'h>, arg: Value<'h>) -> Result<Value<'h>, Error> {
        self.check_thread()?;
        match self.cold() {
            Some(c) if c.closure().is_some() => Err(Error::NeedsMutator),
            Some(c) if c.native().is_some() => c.native().expect("checked")(this, arg),
            _ => Err(Error::NotCallable),
        }
    }

    /// The native closure of a function object and its environment.
    pub(crate) fn closure(self) -> Result<Option<(HostRef<'h>, Value<'h>)>, Error> {
        self.check_thread()?;
        Ok(self.cold().and_then(|c| c.closure()))
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
            && !value.word.is_cell()
            && self.integrity() == 0
        {
            let side = self.side();
            if side == 0 {
                let shape = self.shape();
                if let Some(slot) = shape.lookup(k) {
                    let g = self.lock();
                    if core::ptr::eq(self.shape(), shape)
                        && self.side() == 0
                        && self.integrity() == 0
                    {
                        g.store_slot(slot, value);
                        return Ok(());
                    }
                }
            } else if side == SIDE_DICT && !k.is_index_like() {
                return self.set_dict(k, value);
            }
        }
        self.set_slow(key, value)
    }

    /// `set` of a name (not index-like, value not an object) on a dictionary-mode object
    /// without other side flags or integrity level: lock, one probe, then a store or
    /// (absent) the add.
    #[inline(never)]
    fn set_dict(self, k: Key, value: Value<'h>) -> Result<(), Error> {
        let g = self.lock();
        if self.side() == SIDE_DICT
            && self.integrity() == 0
            && let Some(d) = self.names()
        {
            return match d.find_locked(k.id()) {
                // A data property with default attributes (no entries, not frozen).
                Some(pos) => {
                    d.set_locked(pos, value);
                    Ok(())
                }
                None => self.set_absent(g, PropertyKey::Name(k), value, &mut default_call),
            };
        }
        drop(g);
        self.set_slow(PropertyKey::Name(k), value)
    }

    #[inline(never)]
    fn set_slow(self, key: PropertyKey, value: Value<'h>) -> Result<(), Error> {
        self.set_with(key, value, &mut default_call)
    }

    /// `[[Set]]` calling setters through `call` (see [`Obj::get_with`]).
    #[inline(always)]
    pub(crate) fn set_with(
        self,
        key: PropertyKey,
        value: Value<'h>,
        call: &mut Caller<'_, 'h>,
    ) -> Result<(), Error> {
        let key = key.canonical();
        self.check_thread()?;
        self.check_value(value)?;
        // One search under the lock; the prototype chain is read (lock-free) only when the
        // key is not an own property.
        let g = self.lock();
        match self.find_own(key) {
            Some(f) if f.attrs & ACCESSOR != 0 => {
                drop(g);
                call_setter(f, key, self, value, call)
            }
            Some(f) if f.attrs & W == 0 => Err(Error::NotWritable(key)),
            Some(f) => write_found(&g, f, key, value),
            None => self.set_absent(g, key, value, call),
        }
    }

    /// `set` of a key that is not an own property (lock held, key canonical, value
    /// checked): an inherited setter or read-only property decides, else an add.
    fn set_absent(
        self,
        g: Locked<'h>,
        key: PropertyKey,
        value: Value<'h>,
        call: &mut Caller<'_, 'h>,
    ) -> Result<(), Error> {
        if let Some(f) = self.inherited(key)? {
            if f.attrs & ACCESSOR != 0 {
                drop(g);
                return call_setter(f, key, self, value, call);
            }
            if f.attrs & W == 0 {
                return Err(Error::NotWritable(key));
            }
        }
        add_own(&g, key, value)
    }

    /// The first property `key` up the prototype chain (not this object's own).
    fn inherited(self, key: PropertyKey) -> Result<Option<Found<'h>>, Error> {
        let mut p = self.proto();
        while let Some(o) = p {
            o.check_thread()?;
            if let Some(f) = o.find_own(key) {
                return Ok(Some(f));
            }
            p = o.proto();
        }
        Ok(None)
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
                        attrs & W == 0 && self.read(f, self, &mut default_call)?.same_value(value)
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
            let (was_accessor, is_accessor) = (f.attrs & ACCESSOR != 0, attrs & ACCESSOR != 0);
            // Readers do not lock, so the value is stored where no reader can see a value
            // the property never had: into an accessor's slot before the entry that makes
            // it data again (no reader reads an accessor's slot), and never for a data
            // property becoming an accessor (a reader that saw the data property reads its
            // old value; the collector clears the slot, see `trace`).
            if was_accessor && !is_accessor {
                store_found(&g, f, value);
            }
            if !base_default || had_entry {
                if base_default {
                    remove_entry(&g, key)?;
                } else {
                    set_entry(&g, key, attrs, getter, setter)?;
                }
            }
            if !was_accessor && !is_accessor {
                store_found(&g, f, value);
            }
            return Ok(());
        }
        if !self.is_extensible_flag() {
            return Err(Error::NotExtensible(key));
        }
        let with_entry =
            (attrs != DEFAULT_ATTRS).then(|| draft_with_entry(self, key, attrs, getter, setter));
        match key {
            PropertyKey::Name(k) => add_named(&g, k, value, with_entry.as_ref()),
            PropertyKey::Index(i) => add_index(&g, i, value, with_entry.as_ref()),
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
        match key {
            PropertyKey::Name(k) => {
                // A delete moves a shape-mode object to dictionary mode (slots are never
                // reused in shape mode, where readers trust a shape's slot), with the
                // attribute entry gone in the same transaction.
                let convert = !self.is_dictionary();
                if convert || f.entry.is_some() {
                    let mut t = g.txn(self.heap().raw());
                    if convert {
                        t.prepare_dictionary()?;
                    }
                    let cold = f.entry.is_some().then(|| {
                        let mut d = draft_of(self);
                        d.entries.retain(|x| x.key != key);
                        d
                    });
                    if let Some(d) = &cold {
                        t.cold(d)?;
                    }
                    t.commit()?;
                    if convert {
                        g.enter_dictionary(self.heap().shapes.dict());
                    }
                }
                let d = self.names().expect("dictionary mode");
                // A dictionary position found under the lock is still valid.
                let pos = match f.loc {
                    Loc::Dict(pos, _) => pos,
                    _ => d.find_locked(k.id()).expect("the key is there"),
                };
                d.remove_locked(pos);
            }
            PropertyKey::Index(i) => {
                if f.entry.is_some() {
                    remove_entry(&g, key)?;
                }
                remove_index(&g, i);
            }
        }
        Ok(true)
    }

    /// Own keys in JS order: array indices ascending (dense and sparse), then names in
    /// insertion order (`length` first for arrays), in shape and dictionary mode alike.
    pub fn own_keys(self) -> Result<Vec<PropertyKey>, Error> {
        self.check_thread()?;
        let mut keys: Vec<PropertyKey> = self
            .index_keys()
            .into_iter()
            .map(PropertyKey::Index)
            .collect();
        if self.is_array_raw() {
            keys.push(PropertyKey::Name(length_key()));
        }
        let shape = self.shape();
        let names: Vec<Key> = if shape.is_dict() {
            let d = self.names().expect("dictionary mode without a dictionary");
            d.keys().into_iter().map(Key::from_raw).collect()
        } else {
            shape.keys_in_order().collect()
        };
        // Strings, then symbols, each in creation order (OrdinaryOwnPropertyKeys).
        let (strings, symbols): (Vec<Key>, Vec<Key>) =
            names.into_iter().partition(|k| !k.is_symbol());
        keys.extend(strings.into_iter().chain(symbols).map(PropertyKey::Name));
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
        g.add_side_flags(SIDE_RESTRICTED);
        Ok(())
    }
}

/// How the object layer calls a getter or setter: `call(function, this, argument)`.
pub(crate) type Caller<'a, 'h> =
    dyn FnMut(Obj<'h>, Value<'h>, Value<'h>) -> Result<Value<'h>, Error> + 'a;

/// Calls without a mutator ([`Obj::call`]: native closures answer `NeedsMutator`).
fn default_call<'h>(f: Obj<'h>, this: Value<'h>, arg: Value<'h>) -> Result<Value<'h>, Error> {
    f.call(this, arg)
}

fn call_setter<'h>(
    f: Found<'h>,
    key: PropertyKey,
    receiver: Obj<'h>,
    v: Value<'h>,
    call: &mut Caller<'_, 'h>,
) -> Result<(), Error> {
    let setter = f.entry.map_or(Value::UNDEFINED, |e| e.setter);
    match setter.as_object() {
        Some(s) => call(s, receiver.value(), v).map(|_| ()),
        None => Err(Error::NoSetter(key)),
    }
}

fn write_found<'h>(
    g: &Locked<'h>,
    f: Found<'h>,
    key: PropertyKey,
    value: Value<'h>,
) -> Result<(), Error> {
    if let Loc::Length = f.loc {
        let _ = key;
        return set_length_locked(g, array_length_value(value)?, false);
    }
    store_found(g, f, value);
    Ok(())
}

/// Writes the value of an existing own data property (lock held; not `length`).
fn store_found<'h>(g: &Locked<'h>, f: Found<'h>, value: Value<'h>) {
    let o = g.obj();
    match f.loc {
        Loc::Slot(s) => g.store_slot(s, value),
        Loc::Dict(pos, _) => o.names().expect("dictionary").set_locked(pos, value),
        Loc::Elem(i) => g.store_element(o.elements().expect("elements"), i, value),
        Loc::Sparse(pos, _) => o.sparse().expect("sparse elements").set_locked(pos, value),
        Loc::Length => unreachable!("`length` is written through set_length_locked"),
    }
}

fn add_own<'h>(g: &Locked<'h>, key: PropertyKey, value: Value<'h>) -> Result<(), Error> {
    let o = g.obj();
    if !o.is_extensible_flag() {
        return Err(Error::NotExtensible(key));
    }
    match key {
        PropertyKey::Name(k) => add_named(g, k, value, None),
        PropertyKey::Index(i) => add_index(g, i, value, None),
    }
}

/// Adds the new named property `k` (lock held), with the attribute entry `entry` (a
/// complete new cold state) in the same transaction: the next shape in shape mode, else
/// (past [`MAX_SHAPE_KEYS`](crate::MAX_SHAPE_KEYS) keys) dictionary mode.
fn add_named<'h>(
    g: &Locked<'h>,
    k: Key,
    value: Value<'h>,
    entry: Option<&ColdDraft<'h>>,
) -> Result<(), Error> {
    let o = g.obj();
    let heap = o.heap();
    if entry.is_none() && !o.is_dictionary() {
        // The common add: the next shape, the slot inline, no side state to change.
        let from = o.shape();
        let slot = from.slot_count();
        if (slot as usize) < INLINE_SLOTS && from.can_add() {
            let next = heap.shapes.add(from, k, || g.store_slot(slot, value));
            if !core::ptr::eq(next, from) {
                g.set_shape(next);
            }
            return Ok(());
        }
    }
    let mut t = g.txn(heap.raw());
    let shape_mode = if o.is_dictionary() {
        t.dict_room(false)?;
        false
    } else if o.shape().can_add() {
        t.slots(o.shape().slot_count() + 1)?;
        true
    } else {
        t.prepare_dictionary()?;
        false
    };
    if let Some(d) = entry {
        t.cold(d)?;
    }
    t.commit()?;
    if entry.is_some() {
        // The object's shape stops being plain (its not-plain twin), so the add below
        // follows the not-plain side.
        g.add_side_flags(SIDE_ENTRIES);
    }
    if shape_mode {
        // The value first, then the shape (release): a reader that sees the key sees it.
        let from = o.shape();
        let slot = from.slot_count();
        let next = heap.shapes.add(from, k, || g.store_slot(slot, value));
        if !core::ptr::eq(next, from) {
            g.set_shape(next);
        }
    } else {
        if !o.is_dictionary() {
            g.enter_dictionary(heap.shapes.dict());
        }
        o.names()
            .expect("dictionary mode")
            .append_locked(k.id(), value);
    }
    Ok(())
}

fn draft_with_entry<'h>(
    o: Obj<'h>,
    key: PropertyKey,
    attrs: u8,
    getter: Value<'h>,
    setter: Value<'h>,
) -> ColdDraft<'h> {
    let mut d = draft_of(o);
    put_entry(&mut d, key, attrs, getter, setter);
    d
}

/// Sets (or adds) the attribute entry of `key` in a draft.
fn put_entry<'h>(
    d: &mut ColdDraft<'h>,
    key: PropertyKey,
    attrs: u8,
    getter: Value<'h>,
    setter: Value<'h>,
) {
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
    g.add_side_flags(SIDE_ENTRIES);
    Ok(())
}

fn remove_entry(g: &Locked<'_>, key: PropertyKey) -> Result<(), Error> {
    let o = g.obj();
    let mut d = draft_of(o);
    d.entries.retain(|x| x.key != key);
    g.replace_cold(o.heap().raw(), &d)
}
