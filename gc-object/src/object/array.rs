//! Elements and arrays: index properties are dense (one block of values with holes) while
//! they stay dense enough, and sparse (a dictionary keyed by index) past that; an array's
//! `length` follows JavaScript (setting it deletes every element at or above it).

use super::{ACCESSOR, C, W, draft_of};
use crate::cell::{ColdDraft, Locked, Obj, SIDE_ENTRIES, TAG_ARRAY, Value};
use crate::error::Error;
use crate::key::{MAX_ARRAY_INDEX, PropertyKey};

/// A new index below this always goes into the dense elements.
pub const DENSE_ALWAYS: u32 = 16;
/// A new index `i` past the dense block goes into it only if the grown block would be at
/// least `1 / DENSE_SPREAD` full (`i + 1 <= DENSE_SPREAD * (elements + 1)`); otherwise it
/// is a sparse element. So dense elements cost at most `DENSE_SPREAD` words per element
/// (twice that right after a growth), and sparse ones a dictionary entry each.
pub const DENSE_SPREAD: u32 = 4;

/// Does a new index `i` go into the dense elements?
fn wants_dense(o: Obj<'_>, i: u32) -> bool {
    let (cap, count) = o.elements().map_or((0, 0), |e| (e.cap(), e.count()));
    i < cap || i < DENSE_ALWAYS || u64::from(i) < u64::from(DENSE_SPREAD) * u64::from(count + 1)
}

impl<'h> Obj<'h> {
    /// Is this an array?
    pub fn is_array(self) -> Result<bool, Error> {
        self.check_thread()?;
        Ok(self.is_array_raw())
    }

    /// The array's `length` (`None` for a non-array).
    pub fn array_length(self) -> Result<Option<u32>, Error> {
        self.check_thread()?;
        Ok(self.length_raw())
    }

    #[inline]
    pub(super) fn is_array_raw(self) -> bool {
        self.tags() & TAG_ARRAY != 0
    }

    pub(super) fn length_raw(self) -> Option<u32> {
        self.is_array_raw()
            .then(|| self.dense_len().max(self.length_floor()))
    }

    fn dense_len(self) -> u32 {
        self.elements().map_or(0, |e| e.len())
    }

    /// Own index keys, ascending (dense and sparse).
    pub(super) fn index_keys(self) -> Vec<u32> {
        let mut keys = Vec::new();
        if let Some(e) = self.elements() {
            keys.extend((0..e.len()).filter(|&i| e.get(i).is_some()));
        }
        if let Some(s) = self.sparse() {
            let dense = keys.len();
            keys.extend(s.keys());
            keys[dense..].sort_unstable();
            // Sparse indices may sit below the dense length (in holes): merge.
            if keys[..dense].last() > keys.get(dense) {
                keys.sort_unstable();
            }
        }
        keys
    }

    /// Sets an array's `length`: truncating deletes every element at or above it (sparse
    /// ones included), extending adds none.
    pub fn set_array_length(self, len: u32) -> Result<(), Error> {
        self.check_thread()?;
        if !self.is_array_raw() {
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

    /// Appends to an array (`a[a.length] = v`), as one atomic step: two threads pushing
    /// onto one array never take the same index.
    pub fn push(self, v: Value<'h>) -> Result<(), Error> {
        self.check_thread()?;
        if !self.is_array_raw() {
            return Err(Error::NotAnArray);
        }
        self.check_value(v)?;
        let g = self.lock();
        let len = self.length_raw().unwrap_or(0);
        if len > MAX_ARRAY_INDEX {
            return Err(Error::InvalidArrayLength);
        }
        let key = PropertyKey::Index(len);
        // No own property sits at `length`; an inherited setter or read-only property
        // decides, as in `set`.
        if let Some(f) = self.inherited(key)? {
            if f.attrs & ACCESSOR != 0 {
                drop(g);
                return super::call_setter(f, key, self, v, &mut super::default_call);
            }
            if f.attrs & W == 0 {
                return Err(Error::NotWritable(key));
            }
        }
        if !self.is_extensible_flag() {
            return Err(Error::NotExtensible(key));
        }
        add_index(&g, len, v, None)
    }
}

pub(super) fn array_length_value(v: Value<'_>) -> Result<u32, Error> {
    let n = v.as_number().ok_or(Error::InvalidArrayLength)?;
    if n >= 0.0 && n <= f64::from(u32::MAX) && n.fract() == 0.0 {
        Ok(n as u32)
    } else {
        Err(Error::InvalidArrayLength)
    }
}

/// Adds the new index property `i` (lock held): dense or sparse, with the attribute entry
/// `entry` (a complete new cold state) in the same transaction.
pub(super) fn add_index<'h>(
    g: &Locked<'h>,
    i: u32,
    value: Value<'h>,
    entry: Option<&ColdDraft<'h>>,
) -> Result<(), Error> {
    let o = g.obj();
    let length = o.length_raw();
    if let Some(len) = length
        && i >= len
        && let Some(f) = o.find_own(PropertyKey::length())
        && f.attrs & W == 0
    {
        return Err(Error::NotWritable(PropertyKey::length()));
    }
    let dense = wants_dense(o, i);
    let mut t = g.txn(o.heap().raw());
    if dense {
        t.elements(i + 1)?;
    } else {
        t.dict_room(true)?;
    }
    if let Some(d) = entry {
        t.cold(d)?;
    }
    t.commit()?;
    if entry.is_some() {
        g.add_side_flags(SIDE_ENTRIES);
    }
    if dense {
        g.store_element(o.elements().expect("elements just made"), i, value);
    } else {
        // The length first: a reader may see a length with no element there yet (a legal
        // array), never an element at or above the length.
        if let Some(len) = length
            && i >= len
        {
            g.set_length(i + 1);
        }
        o.sparse()
            .expect("sparse elements just made")
            .append_locked(i, value);
    }
    Ok(())
}

/// Removes the element at `i` (lock held; it exists and may be deleted).
pub(super) fn remove_index(g: &Locked<'_>, i: u32) {
    let o = g.obj();
    if let Some(e) = o.elements()
        && e.get(i).is_some()
    {
        g.clear_element(e, i);
        return;
    }
    let s = o.sparse().expect("an element is dense or sparse");
    let pos = s.find_locked(i).expect("the element exists");
    s.remove_locked(pos);
}

/// Sets an array's length (lock held); `read_only` also makes `length` non-writable, in the
/// same cold-state change. Elements at or above `len` are deleted; if one of them cannot
/// be, nothing changes and the error names it.
pub(super) fn set_length_locked(g: &Locked<'_>, len: u32, read_only: bool) -> Result<(), Error> {
    let o = g.obj();
    let cur = o.length_raw().unwrap_or(0);
    let doomed: Vec<u32> = if len < cur {
        o.index_keys().into_iter().filter(|&i| i >= len).collect()
    } else {
        Vec::new()
    };
    if o.side() & SIDE_ENTRIES != 0 || o.integrity() != 0 {
        for &i in &doomed {
            if let Some(f) = o.find_own(PropertyKey::Index(i))
                && f.attrs & C == 0
            {
                return Err(Error::NotConfigurable(PropertyKey::Index(i)));
            }
        }
    }
    let drop_entries = o.side() & SIDE_ENTRIES != 0
        && o.cold().is_some_and(|c| {
            c.draft()
                .entries
                .iter()
                .any(|x| matches!(x.key, PropertyKey::Index(i) if i >= len))
        });
    let mut t = g.txn(o.heap().raw());
    if drop_entries || read_only {
        let mut d = draft_of(o);
        if read_only {
            super::put_entry(
                &mut d,
                PropertyKey::length(),
                0,
                Value::UNDEFINED,
                Value::UNDEFINED,
            );
        }
        d.entries
            .retain(|x| !matches!(x.key, PropertyKey::Index(i) if i >= len));
        t.cold(&d)?;
    }
    if len > 0 {
        t.storage();
    }
    t.commit()?;
    // Nothing below can fail.
    if read_only {
        g.add_side_flags(SIDE_ENTRIES);
    }
    if let Some(e) = o.elements()
        && len < e.len()
    {
        g.truncate_elements(e, len);
    }
    if let Some(s) = o.sparse() {
        for &i in &doomed {
            if let Some(pos) = s.find_locked(i) {
                s.remove_locked(pos);
            }
        }
    }
    g.set_length(len);
    Ok(())
}
