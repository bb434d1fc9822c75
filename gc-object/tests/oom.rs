//! Failure injection: every allocation of every path fails in turn; the operation returns
//! `OutOfMemory`, the object is exactly as before, and nothing leaks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

use gc_object::{Error, Heap, INLINE_SLOTS, Mutator, Obj, Property, PropertyKey, RawAlloc, Value};

#[derive(Default)]
struct State {
    /// Allocations to let through before failing one; negative: never fail.
    countdown: AtomicIsize,
    fired: AtomicBool,
    live: AtomicUsize,
}

#[derive(Clone)]
struct Failing(Arc<State>);

impl Failing {
    fn new() -> Self {
        let s = State::default();
        s.countdown.store(-1, Ordering::SeqCst);
        Failing(Arc::new(s))
    }
    fn arm(&self, n: isize) {
        self.0.countdown.store(n, Ordering::SeqCst);
        self.0.fired.store(false, Ordering::SeqCst);
    }
    fn disarm(&self) {
        self.0.countdown.store(-1, Ordering::SeqCst);
    }
}

// SAFETY: forwards to `System` or returns `None`.
unsafe impl RawAlloc for Failing {
    fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        let c = self.0.countdown.load(Ordering::SeqCst);
        if c == 0 {
            self.0.countdown.store(-1, Ordering::SeqCst);
            self.0.fired.store(true, Ordering::SeqCst);
            return None;
        }
        if c > 0 {
            self.0.countdown.store(c - 1, Ordering::SeqCst);
        }
        self.0.live.fetch_add(1, Ordering::SeqCst);
        // SAFETY: non-zero-sized layouts from the heap.
        NonNull::new(unsafe { System.alloc(layout) })
    }
    unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr.as_ptr(), layout) }
    }
}

fn snapshot(o: Obj<'_>) -> String {
    let keys = o.own_keys().unwrap();
    let props: Vec<String> = keys
        .iter()
        .map(|&k| format!("{k}={:?}", o.get_own_property(k).unwrap()))
        .collect();
    format!(
        "{props:?} ext={} len={:?} side={} proto={:?}",
        o.is_extensible().unwrap(),
        o.array_length().unwrap(),
        o.has_side_state().unwrap(),
        o.prototype().unwrap()
    )
}

fn n(x: f64) -> Value<'static> {
    Value::number(x)
}

/// Runs `op` with the k-th allocation failing, k = 0, 1, ... until it succeeds. Returns how
/// many allocations could fail.
fn inject<'a>(
    what: &str,
    setup: impl for<'h> Fn(&mut Mutator<'h>) -> Obj<'h>,
    op: impl for<'h> Fn(&mut Mutator<'h>, Obj<'h>) -> Result<(), Error>,
) -> usize {
    for k in 0..32 {
        let alloc = Failing::new();
        {
            let heap = Heap::with_allocator(alloc.clone());
            let mut m = heap.mutator();
            let o = setup(&mut m);
            let before = snapshot(o);
            alloc.arm(k);
            let r = op(&mut m, o);
            alloc.disarm();
            let fired = alloc.0.fired.load(Ordering::SeqCst);
            match r {
                Err(Error::OutOfMemory) => {
                    assert!(fired, "{what}: OOM without a failed allocation");
                    assert_eq!(
                        snapshot(o),
                        before,
                        "{what}: object changed by failed allocation {k}"
                    );
                    // The object still works afterwards.
                    op(&mut m, o).unwrap_or_else(|e| panic!("{what}: retry after OOM failed: {e}"));
                }
                Ok(()) => {
                    assert!(!fired, "{what}: succeeded although allocation {k} failed");
                    drop(m);
                    drop(heap);
                    assert_eq!(alloc.0.live.load(Ordering::SeqCst), 0, "{what}: leak");
                    return k as usize;
                }
                Err(e) => panic!("{what}: unexpected error {e}"),
            }
        }
        assert_eq!(
            alloc.0.live.load(Ordering::SeqCst),
            0,
            "{what}: leak after failure {k}"
        );
    }
    panic!("{what}: never succeeded")
}

fn names(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("k{i}")).collect()
}

fn full_inline<'h>(m: &mut Mutator<'h>) -> Obj<'h> {
    let o = m.object().unwrap();
    for k in names(INLINE_SLOTS) {
        o.set(k.as_str(), n(1.0)).unwrap();
    }
    o
}

#[test]
fn cell_allocation() {
    let fails = inject(
        "cell",
        |m| m.object().unwrap(),
        |m, _| {
            // Fill the current chunk, then the next cell needs a new chunk.
            let mut last = None;
            for _ in 0..(gc_object::CHUNK_BYTES / gc_object::OBJECT_CLASS_BYTES) {
                last = Some(m.object()?);
            }
            last.map(|_| ()).ok_or(Error::Unsupported("no cell"))
        },
    );
    assert_eq!(fails, 1);
}

#[test]
fn first_spill_storage_and_slots() {
    let fails = inject("spill", full_inline, |_, o| o.set("extra", n(2.0)));
    assert_eq!(fails, if gc_object::WIDE_OBJECT { 1 } else { 2 });
}

#[test]
fn slot_block_growth() {
    let fails = inject(
        "slot growth",
        |m| {
            let o = full_inline(m);
            for i in 0..4 {
                o.set(format!("x{i}").as_str(), n(1.0)).unwrap();
            }
            o
        },
        |_, o| o.set("x4", n(2.0)),
    );
    assert_eq!(fails, 1);
}

#[test]
fn cold_state_attributes() {
    let ro = Property::Data {
        value: n(5.0),
        writable: false,
        enumerable: false,
        configurable: true,
    };
    let fails = inject(
        "cold (fresh)",
        |m| {
            let o = m.object().unwrap();
            o.set("a", n(1.0)).unwrap();
            o
        },
        move |_, o| o.define("a", ro),
    );
    // entries block, cold state, storage wrapper (inline in the wide layout)
    assert_eq!(fails, if gc_object::WIDE_OBJECT { 2 } else { 3 });
    let fails = inject(
        "cold (replace)",
        |m| {
            let o = full_inline(m);
            o.set("spilled", n(1.0)).unwrap();
            o.define(
                "k1",
                Property::Data {
                    value: n(5.0),
                    writable: false,
                    enumerable: true,
                    configurable: true,
                },
            )
            .unwrap();
            o
        },
        move |_, o| o.define("k2", ro),
    );
    assert_eq!(fails, 2);
    inject("new property with attributes", full_inline, move |_, o| {
        o.define("new", ro)
    });
    inject(
        "delete with entry",
        |m| {
            let o = m.object().unwrap();
            o.define(
                "a",
                Property::Data {
                    value: n(5.0),
                    writable: true,
                    enumerable: false,
                    configurable: true,
                },
            )
            .unwrap();
            o.define(
                "b",
                Property::Data {
                    value: n(5.0),
                    writable: true,
                    enumerable: false,
                    configurable: true,
                },
            )
            .unwrap();
            o
        },
        |_, o| o.delete("a").map(|_| ()),
    );
}

fn getter<'h>(_t: Value<'h>, _a: Value<'h>) -> Result<Value<'h>, Error> {
    Ok(Value::number(1.0))
}

#[test]
fn accessors_functions_and_restriction() {
    inject(
        "accessor",
        |m| {
            let o = m.object().unwrap();
            let g = m.function(getter).unwrap();
            o.set("g", g.value()).unwrap();
            o
        },
        |_, o| {
            let g = o.get("g")?.as_object().unwrap();
            o.define(
                "acc",
                Property::Accessor {
                    get: Some(g),
                    set: None,
                    enumerable: true,
                    configurable: true,
                },
            )
        },
    );
    inject(
        "function",
        |m| m.object().unwrap(),
        |m, o| {
            let f = m.function(getter)?;
            o.set("f", f.value())
        },
    );
    inject("restrict", full_inline, |_, o| {
        o.restrict_to_current_thread()
    });
}

#[test]
fn elements() {
    let fails = inject(
        "first element",
        |m| m.array().unwrap(),
        |_, o| o.push(n(1.0)),
    );
    assert_eq!(fails, if gc_object::WIDE_OBJECT { 1 } else { 2 });
    let fails = inject(
        "element growth",
        |m| {
            let a = m.array().unwrap();
            for i in 0..4 {
                a.push(n(i as f64)).unwrap();
            }
            a
        },
        |_, o| o.push(n(9.0)),
    );
    assert_eq!(fails, 1);
    inject(
        "sparse length",
        |m| {
            let a = m.array().unwrap();
            a.push(n(1.0)).unwrap();
            a
        },
        |_, o| o.set_array_length(100),
    );
    inject(
        "index on plain object",
        |m| m.object().unwrap(),
        |_, o| o.set(PropertyKey::Index(3), n(1.0)),
    );
    inject(
        "index with attributes",
        |m| m.array().unwrap(),
        |_, o| {
            o.define(
                PropertyKey::Index(0),
                Property::Data {
                    value: n(1.0),
                    writable: false,
                    enumerable: true,
                    configurable: true,
                },
            )
        },
    );
}

fn named<'h>(m: &mut Mutator<'h>, count: usize) -> Obj<'h> {
    let o = m.object().unwrap();
    for k in names(count) {
        o.set(k.as_str(), n(1.0)).unwrap();
    }
    o
}

/// A dictionary-mode object: a delete moves 3 keys into a table of 8 (`[-, k1, k2]`).
fn dict<'h>(m: &mut Mutator<'h>) -> Obj<'h> {
    let o = named(m, 3);
    o.delete("k0").unwrap();
    o
}

/// A full dictionary: 5 more keys make 7 live entries of 8, so the next key needs a bigger
/// table (no compaction can make room).
fn small_dict<'h>(m: &mut Mutator<'h>) -> Obj<'h> {
    let o = dict(m);
    for i in 0..5 {
        o.set(format!("x{i}").as_str(), n(1.0)).unwrap();
    }
    o
}

#[test]
fn dictionary_mode() {
    let fails = inject(
        "first delete",
        |m| named(m, 3),
        |_, o| o.delete("k1").map(|_| ()),
    );
    // the dictionary, the storage wrapper (inline in the wide layout)
    assert_eq!(fails, if gc_object::WIDE_OBJECT { 1 } else { 2 });
    let fails = inject(
        "past MAX_SHAPE_KEYS",
        |m| named(m, gc_object::MAX_SHAPE_KEYS),
        |_, o| o.set("one-more", n(2.0)),
    );
    assert_eq!(fails, 1);
    let fails = inject("dictionary growth", small_dict, |_, o| {
        o.set("grow", n(2.0))
    });
    assert_eq!(fails, 1);
    let ro = Property::Data {
        value: n(5.0),
        writable: false,
        enumerable: false,
        configurable: true,
    };
    let fails = inject("dictionary define with attributes", dict, move |_, o| {
        o.define("attr", ro)
    });
    // entries block, cold state
    assert_eq!(fails, 2);
    inject(
        "dictionary delete with entry",
        move |m| {
            let o = dict(m);
            o.define("attr", ro).unwrap();
            o
        },
        |_, o| o.delete("attr").map(|_| ()),
    );
}

#[test]
fn sparse_elements() {
    let fails = inject(
        "first sparse element",
        |m| m.array().unwrap(),
        |_, o| o.set(PropertyKey::Index(1_000_000), n(1.0)),
    );
    // the sparse dictionary, the storage wrapper (inline in the wide layout)
    assert_eq!(fails, if gc_object::WIDE_OBJECT { 1 } else { 2 });
    let fails = inject(
        "sparse growth",
        |m| {
            let o = m.object().unwrap();
            for i in 0..8 {
                o.set(PropertyKey::Index(1_000_000 * (i + 1)), n(1.0))
                    .unwrap();
            }
            o
        },
        |_, o| o.set(PropertyKey::Index(999), n(2.0)),
    );
    assert_eq!(fails, 1);
}

// The counting global allocator is not needed here; keep `System` explicit for clarity.
#[global_allocator]
static GLOBAL: Sys = Sys;
struct Sys;
// SAFETY: forwards to `System`.
unsafe impl GlobalAlloc for Sys {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(p, l) }
    }
}

/// `length` made non-writable while it changes: the new length and the attribute entry
/// are one change (an allocation failure leaves the old length, still writable).
#[test]
fn length_changed_and_made_read_only() {
    for (what, target) in [("shrink", 2.0), ("extend", 9.0)] {
        inject(
            what,
            |m| {
                let a = m.array().unwrap();
                for i in 0..5 {
                    a.push(n(i as f64)).unwrap();
                }
                a
            },
            move |_, o| {
                o.define(
                    PropertyKey::length(),
                    Property::Data {
                        value: n(target),
                        writable: false,
                        enumerable: false,
                        configurable: false,
                    },
                )
            },
        );
    }
}

#[test]
fn weak_reference_cell() {
    // The first weak reference of a mutator needs a chunk of its class: one allocation
    // that can fail, and nothing of the target changes.
    let fails = inject(
        "weak ref",
        |m| m.object().unwrap(),
        |m, o| {
            let w = m.weak_ref(o)?;
            assert_eq!(w.upgrade(), Some(o));
            Ok(())
        },
    );
    assert_eq!(fails, 1);
}

#[test]
fn weak_map_cell_and_tables() {
    // The map's cell (a new chunk of its class), its first table, two growths: each can
    // fail; a failed `set` leaves every entry as it was.
    let fails = inject(
        "weak map",
        |m| m.object().unwrap(),
        |m, o| {
            let map = m.weak_map()?;
            let mut keys = Vec::new();
            for i in 0..20u32 {
                let k = m.object()?;
                keys.push(k);
                if let Err(e) = map.set(k, o.value()) {
                    assert_eq!(map.len(), i as usize);
                    for &old in &keys[..i as usize] {
                        assert_eq!(map.get(old).unwrap(), Some(o.value()));
                    }
                    assert_eq!(map.get(k).unwrap(), None);
                    return Err(e);
                }
            }
            assert_eq!(map.len(), 20);
            Ok(())
        },
    );
    assert_eq!(fails, 4);
}

#[test]
fn finalization_registry_callback_cell_and_tables() {
    // The callback's allocation, the registry's cell (a new chunk of its class), its first
    // table and two growths: each can fail; a failed `register` registers nothing and
    // leaves every earlier registration as it was (the closure of a failed creation is
    // dropped, nothing leaks).
    let fails = inject(
        "finalization registry",
        |m| m.object().unwrap(),
        |m, o| {
            let reg = m.finalization_registry(|_, _| Ok(()))?;
            for i in 0..20u32 {
                let t = m.object()?;
                if let Err(e) = reg.register(t, o.value(), Some(o)) {
                    assert_eq!(reg.len(), i as usize);
                    return Err(e);
                }
            }
            assert_eq!(reg.len(), 20);
            assert_eq!(reg.unregister(o), Ok(20));
            Ok(())
        },
    );
    assert_eq!(fails, 5);
}

#[test]
fn symbol_cell() {
    // The first symbol of a mutator needs a chunk of its class: one allocation that can
    // fail; a symbol key then costs what a name key does.
    let fails = inject(
        "symbol",
        |m| m.object().unwrap(),
        |m, o| {
            let s = m.symbol(Some("d"))?;
            let t = m.object()?;
            t.set(s.key(), o.value())?;
            assert_eq!(t.get(s.key())?, o.value());
            Ok(())
        },
    );
    assert_eq!(fails, 1);
}

#[test]
fn string_value_cells() {
    // A short string value is a slab cell: the first of its class needs a chunk, one
    // allocation that can fail. A long one is a large cell: its own allocation.
    let fails = inject(
        "short string",
        |m| m.object().unwrap(),
        |m, o| {
            let s = m.string("a short text")?;
            o.set("s", s.value())?;
            assert_eq!(o.get("s")?.as_str(), Some("a short text"));
            Ok(())
        },
    );
    assert_eq!(fails, 1);
    let long = "x".repeat(gc_object::LARGEST_CLASS * 3);
    let fails = inject(
        "long string",
        |m| m.object().unwrap(),
        |m, o| {
            let s = m.string(&long)?;
            o.set("s", s.value())?;
            assert_eq!(o.get("s")?.as_str().map(str::len), Some(long.len()));
            Ok(())
        },
    );
    assert_eq!(fails, 1);
}

#[test]
fn native_closure_box_cell_and_cold_state() {
    // The closure's box, the function's storage wrapper (not with `wide-object`) and its
    // cold state can each fail; the box is freed (the leak check) and nothing is left.
    let fails = inject(
        "closure",
        |m| m.object().unwrap(),
        |m, o| {
            let f = m.closure(o.value(), |m, _, a, env| {
                let x = m.object()?;
                x.set("a", a)?;
                x.set("env", env)?;
                Ok(x.value())
            })?;
            let r = m.call(f, Value::UNDEFINED, n(1.0))?.as_object().unwrap();
            assert_eq!((r.get("a")?, r.get("env")?), (n(1.0), o.value()));
            Ok(())
        },
    );
    assert_eq!(fails, if cfg!(feature = "wide-object") { 2 } else { 3 });
}

#[test]
fn scoped_closure_box_cell_cold_state_and_handle_block() {
    // As for native closures, plus the call: through a plain mutator the closure's scope
    // roots its arguments in the mutator's handle stack, whose first block can fail.
    let fails = inject(
        "scoped closure",
        |m| m.object().unwrap(),
        |m, o| {
            let f = m.scoped_closure(o.value(), |s, _, a, env| {
                let x = s.mutator().object()?;
                x.set("a", s.get(a))?;
                x.set("env", s.get(env))?;
                s.root(x.value())
            })?;
            let r = m.call(f, Value::UNDEFINED, n(1.0))?.as_object().unwrap();
            assert_eq!((r.get("a")?, r.get("env")?), (n(1.0), o.value()));
            Ok(())
        },
    );
    assert_eq!(fails, if cfg!(feature = "wide-object") { 3 } else { 4 });
}

#[test]
fn handle_stack_blocks_and_escapes() {
    let alloc = Failing::new();
    {
        let mut heap = Heap::with_allocator(alloc.clone());
        let mut cx = heap.context();
        let mut s = cx.scope();
        fn cell<'a>(s: &'a gc_object::Scope<'_>) -> Value<'a> {
            s.mutator().object().unwrap().value()
        }
        // The first handle of a cell allocates the first block.
        let v = cell(&s);
        alloc.arm(0);
        assert_eq!(s.root(v).err(), Some(Error::OutOfMemory));
        alloc.disarm();
        let mut kept = vec![s.root(v).unwrap()];
        while kept.len() < gc_object::HANDLE_BLOCK_SLOTS {
            let v = cell(&s);
            kept.push(s.root(v).unwrap());
        }
        // The block is full: the next cell needs a second one. Numbers need none.
        let v = cell(&s);
        alloc.arm(0);
        assert_eq!(s.root(v).err(), Some(Error::OutOfMemory));
        alloc.arm(0);
        s.root(n(2.0)).unwrap();
        assert!(!alloc.0.fired.load(Ordering::SeqCst));
        alloc.disarm();
        // Nothing changed: every handle reads its object; a collection keeps exactly them.
        let marked = s.collect().unwrap().marked;
        assert_eq!(marked, gc_object::HANDLE_BLOCK_SLOTS as u64);
        let first = kept[0];
        // An escape of an outer handle from an empty inner scope at the block's end must
        // push into a new block: it can fail, and then the outer scope is as it was.
        {
            let t = s.escape_scope();
            alloc.arm(0);
            assert_eq!(t.escape(first).err(), Some(Error::OutOfMemory));
            alloc.disarm();
        }
        assert_eq!(s.collect().unwrap().marked, marked);
        let again = {
            let t = s.escape_scope();
            t.escape(first).unwrap()
        };
        assert_eq!(s.get(again), s.get(first));
        assert_eq!(s.collect().unwrap().marked, marked);
    }
    assert_eq!(alloc.0.live.load(Ordering::SeqCst), 0, "leak");
}
