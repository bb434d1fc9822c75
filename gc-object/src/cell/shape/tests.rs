use super::*;

fn keys(n: usize, prefix: &str) -> Vec<Key> {
    (0..n).map(|i| Key::new(&format!("{prefix}{i}"))).collect()
}

/// An object as far as shapes go: its current shape.
struct Obj<'t>(&'t Shape);

impl<'t> Obj<'t> {
    fn add(&mut self, t: &'t ShapeTable, k: Key) -> &'t Shape {
        let mut stored = false;
        let next = t.add(self.0, k, || stored = true);
        assert!(stored, "the slot is stored before the add is visible");
        self.0 = next;
        next
    }
}

fn build<'t>(t: &'t ShapeTable, ks: &[Key]) -> Obj<'t> {
    let mut o = Obj(t.root());
    for &k in ks {
        o.add(t, k);
    }
    o
}

#[test]
fn objects_with_the_same_keys_in_the_same_order_share_a_shape() {
    let t = ShapeTable::new();
    let (a, b, c) = (Key::new("a"), Key::new("b"), Key::new("c"));
    let o1 = build(&t, &[a, b, c]);
    let o2 = build(&t, &[a, b, c]);
    assert!(core::ptr::eq(o1.0, o2.0));
    assert!(o1.0.is_shared());
    assert_eq!(o1.0.lookup(b), Some(1));
    assert_eq!(o1.0.keys_in_order().collect::<Vec<_>>(), vec![a, b, c]);
    // Another order is another shape.
    let o3 = build(&t, &[b, a, c]);
    assert!(!core::ptr::eq(o1.0, o3.0));
    assert_eq!(o3.0.lookup(a), Some(1));
    // A literal of the same keys is the same shape.
    assert!(core::ptr::eq(t.for_keys(&[a, b, c]), o1.0));
}

#[test]
fn a_private_shape_grows_in_place_and_a_shared_one_never_changes() {
    let t = ShapeTable::new();
    let ks = keys(30, "grow");
    let mut o = Obj(t.root());
    let first = o.add(&t, ks[0]);
    let id = first.id();
    for (i, &k) in ks.iter().enumerate().skip(1) {
        let s = o.add(&t, k);
        assert!(
            core::ptr::eq(s, first),
            "one shape for a sequence of its own"
        );
        assert_eq!(s.slot_count() as usize, i + 1);
    }
    assert_eq!(t.len(), 3, "root, dictionary shape, the object's shape");
    assert_eq!(first.id(), id);
    for (i, &k) in ks.iter().enumerate() {
        assert_eq!(first.lookup(k), Some(i as u32));
    }
    // A second object with the same keys ends on the same shape, which is shared from
    // then on: the first object's next key makes a new shape.
    let o2 = build(&t, &ks);
    assert!(core::ptr::eq(o2.0, first) && first.is_shared());
    let extra = Key::new("grow-extra");
    let next = o.add(&t, extra);
    assert!(!core::ptr::eq(next, first));
    assert_eq!(first.slot_count(), 30);
    assert_eq!(first.lookup(extra), None);
    assert_eq!(next.lookup(extra), Some(30));
    assert_eq!(next.lookup(ks[29]), Some(29));
}

#[test]
fn the_objects_of_a_class_share_every_prefix_once_built() {
    let t = ShapeTable::new();
    let ks = keys(6, "cls");
    let first = build(&t, &ks).0;
    for _ in 0..10 {
        assert!(core::ptr::eq(build(&t, &ks).0, first));
    }
    // By now every prefix is a shape of its own (made by the first objects), so the next
    // object makes none.
    let before = t.len();
    let mut o = Obj(t.root());
    for &k in &ks {
        o.add(&t, k);
        assert!(o.0.is_shared());
    }
    assert_eq!(t.len(), before);
}

#[test]
fn a_path_stops_at_the_key_limit() {
    let t = ShapeTable::new();
    let ks = keys(MAX_SHAPE_KEYS, "lim");
    let o = build(&t, &ks);
    assert!(!o.0.can_add());
    assert!(!t.dict().can_add());
    for (i, &k) in ks.iter().enumerate() {
        assert_eq!(o.0.lookup(k), Some(i as u32));
    }
}

#[test]
fn hot_big_shared_shapes_get_a_table_with_the_same_answers() {
    let t = ShapeTable::new();
    let ks = keys(LINEAR_LOOKUP_MAX + 5, "hot");
    let mine = build(&t, &ks).0;
    let missing = Key::new("hot-missing");
    for _ in 0..HOT_LOOKUPS * 2 {
        assert_eq!(mine.lookup(missing), None);
        assert_eq!(mine.lookup(ks[3]), Some(3));
    }
    assert!(!mine.has_hot_table(), "a private shape may still grow");
    let s = t.for_keys(&ks);
    assert!(core::ptr::eq(s, mine));
    for _ in 0..HOT_LOOKUPS * 2 {
        assert_eq!(s.lookup(missing), None);
    }
    assert!(!s.has_hot_table(), "misses do not make a shape hot");
    for _ in 0..HOT_LOOKUPS {
        assert_eq!(s.lookup(ks[3]), Some(3));
    }
    assert!(s.has_hot_table());
    for (i, &k) in ks.iter().enumerate() {
        assert_eq!(s.lookup(k), Some(i as u32));
    }
    assert_eq!(s.lookup(missing), None);
}

#[test]
fn a_not_plain_twin_has_the_same_keys_a_new_id_and_not_plain_children() {
    let t = ShapeTable::new();
    let ks = keys(4, "tw");
    let s = t.for_keys(&ks[..2]);
    assert!(s.is_plain() && t.root().is_plain());
    assert!(!t.dict().is_plain());
    let tw = t.not_plain(s);
    assert!(!tw.is_plain());
    assert_ne!(tw.id(), s.id());
    assert!(core::ptr::eq(t.not_plain(s), tw), "one twin per shape");
    assert!(core::ptr::eq(t.not_plain(tw), tw), "not plain already");
    assert_eq!(tw.keys_in_order().collect::<Vec<_>>(), ks[..2].to_vec());
    assert_eq!(tw.lookup(ks[1]), Some(1));
    // Growing either side: the twin's child is not plain; the plain side is not confused
    // with it.
    let c = Obj(tw).add(&t, ks[2]);
    assert!(!c.is_plain());
    assert_eq!(c.lookup(ks[2]), Some(2));
    let p = Obj(s).add(&t, ks[2]);
    assert!(p.is_plain() && !core::ptr::eq(p, c));
    let q = Obj(s).add(&t, ks[3]);
    assert_eq!((q.lookup(ks[3]), q.lookup(ks[2])), (Some(2), None));
    assert_eq!(c.lookup(ks[3]), None);
    // The twin of a private shape, and of the root.
    let mine = build(&t, &keys(3, "tw-own")).0;
    let own_twin = t.not_plain(mine);
    assert_eq!(own_twin.slot_count(), 3);
    let rt = t.not_plain(t.root());
    assert_eq!(rt.slot_count(), 0);
    let before = t.len();
    // SAFETY: nothing else uses the table.
    let freed = unsafe { t.sweep() };
    assert_eq!(
        freed, 7,
        "twin, its child, the two plain adds, private shape and twin, root twin"
    );
    assert_eq!(t.len(), before - 7);
    assert_eq!(s.lookup(ks[1]), Some(1));
}

#[test]
fn sweep_frees_unmarked_shapes_and_keeps_pinned_and_marked_ones() {
    let t = ShapeTable::new();
    let ks = keys(6, "sw");
    let lit = t.for_keys(&ks[..2]);
    let live = build(&t, &ks[3..5]).0;
    let dead = Obj(lit).add(&t, ks[5]);
    let dead_id = dead.id();
    assert_eq!(
        t.len(),
        2 + 4,
        "the literal's two, the live and the dead one"
    );
    live.mark();
    // SAFETY: nothing else uses the table.
    let freed = unsafe { t.sweep() };
    assert_eq!(freed, 1);
    assert_eq!(t.len(), 5);
    // The shape is made again on demand, as a new shape.
    let again = Obj(lit).add(&t, ks[5]);
    assert_ne!(again.id(), dead_id);
    assert_eq!(again.lookup(ks[5]), Some(2));
    assert_eq!(live.lookup(ks[4]), Some(1));
    // Nothing marked: the live one goes too, the literal stays.
    // SAFETY: as above.
    assert_eq!(unsafe { t.sweep() }, 2);
    assert_eq!(lit.lookup(ks[1]), Some(1));
    assert_eq!(t.len(), 4);
}

#[test]
fn many_siblings_and_many_private_shapes_stay_findable_and_are_swept() {
    let t = ShapeTable::new();
    let n = if cfg!(miri) { 200 } else { 20_000 };
    let ks = keys(n, "sib");
    let a = Key::new("sib-a");
    let objs: Vec<&Shape> = ks
        .iter()
        .map(|&k| {
            let mut o = Obj(t.root());
            o.add(&t, k);
            o.add(&t, a)
        })
        .collect();
    assert_eq!(t.len(), n + 2);
    for (i, s) in objs.iter().enumerate() {
        assert_eq!(s.lookup(ks[i]), Some(0));
        assert_eq!(s.lookup(a), Some(1));
        // The same sequence again ends on the same shape (through a private shape of
        // one key: the first object's grew past it).
        assert!(core::ptr::eq(build(&t, &[ks[i], a]).0, *s));
    }
    assert_eq!(t.len(), 2 * n + 2);
    for s in objs.iter().step_by(2) {
        s.mark();
    }
    // SAFETY: nothing else uses the table.
    assert_eq!(unsafe { t.sweep() }, n + n / 2);
    assert_eq!(t.len(), n - n / 2 + 2);
    for (i, s) in objs.iter().enumerate().step_by(2) {
        assert!(core::ptr::eq(build(&t, &[ks[i], a]).0, *s));
    }
}

#[test]
fn find_key_agrees_with_a_scan() {
    for n in 0..40u32 {
        let keys: Vec<u32> = (0..n).map(|i| i * 7 + 1).collect();
        for probe in 0..(n * 7 + 3) {
            assert_eq!(
                find_key(&keys, probe),
                keys.iter().position(|&k| k == probe).map(|i| i as u32)
            );
        }
    }
}
