//! Builds a linked list of objects on a garbage-collected heap, keeps only its head
//! alive through a root, drops the rest, and collects: the list survives, the garbage is
//! freed. Also shows which objects stay in one 128-byte cell and which grow side state.
//!
//! `cargo run -p memlayout-gc-object --example linked_list`

use gc_object::{CELL_BYTES, Heap, INLINE_SLOTS, Value};

const NODES: u32 = 1000;
const GARBAGE: u32 = 5000;

fn main() {
    let mut heap = Heap::new();
    let node = heap.literal(&["value", "next"]);
    let head = {
        let m = heap.mutator();
        let mut next = Value::null();
        for i in (0..NODES).rev() {
            let o = m
                .literal(&node, &[Value::number(f64::from(i)), next])
                .unwrap();
            next = Value::from(o);
        }
        for i in 0..GARBAGE {
            // Unreachable as soon as it is made.
            m.literal(&node, &[Value::number(f64::from(i)), Value::null()])
                .unwrap();
        }
        let first = next.as_object().expect("the list has a head");
        // Up to INLINE_SLOTS properties fit in the cell; one more moves to side state.
        let wide = m.object().unwrap();
        for p in 0..=INLINE_SLOTS {
            wide.set(format!("p{p}").as_str(), Value::number(p as f64))
                .unwrap();
        }
        let (wide_side, node_side) = (
            wide.has_side_state().unwrap(),
            first.has_side_state().unwrap(),
        );
        println!(
            "a {INLINE_SLOTS}+1-property object has side state: {wide_side}; a list node: {node_side}"
        );
        assert!(wide_side && !node_side);
        heap.root(first).unwrap()
    };

    let stats = heap.collect();
    println!(
        "collect: {} reachable, {} freed ({} of them without a finalizer); cells are {CELL_BYTES} bytes",
        stats.marked, stats.freed, stats.freed_without_finalizer
    );
    assert_eq!(stats.marked, u64::from(NODES));
    assert_eq!(stats.freed, u64::from(GARBAGE) + 1);

    // Walk the surviving list and check every value.
    let mut sum = 0.0;
    let mut cur = Some(head.get(&heap).unwrap());
    let mut len = 0;
    while let Some(o) = cur {
        sum += o.get("value").unwrap().as_number().unwrap();
        cur = o.get("next").unwrap().as_object();
        len += 1;
    }
    assert_eq!(len, NODES);
    assert_eq!(sum, f64::from(NODES * (NODES - 1) / 2));
    println!("the list still holds {len} nodes, values summing to {sum}");
}
