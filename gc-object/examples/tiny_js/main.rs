//! A small tree-walking interpreter for a JavaScript-like language, built on gc-object:
//! numbers, string values (collectable `HeapString`s), objects and arrays (literals,
//! property get/set, computed keys, `length`), functions and closures whose environments
//! are heap objects (a scope is an object whose prototype is the enclosing scope), native
//! functions (`print`, a stateful `counter`, `Symbol`, `freeze`) as native closures, and
//! collections that run *while the program executes*, at every statement boundary.
//!
//! Rooting discipline: collection needs `&mut Heap`, so the evaluator passes `&mut Heap`
//! down and does every heap operation inside a short-lived `Mutator` (`step`). Every value
//! the evaluator keeps in a Rust variable across a step is a [`Held`]: a number, boolean or
//! interned string without its heap borrow (`Value::as_static`), or a `Root`. Between two
//! steps no `Obj` or `Value<'h>` exists, so `safepoint` may collect.
//!
//! It runs embedded programs, compares each one's output with the expected text, once
//! collecting at every statement and once every `GC_EVERY` cells, and exits non-zero on a
//! mismatch. `cargo run -p memlayout-gc-object --example tiny_js [garbage-iterations | --file PATH]`

mod interp;
mod parse;

use interp::run;
use std::process::ExitCode;

// ---------------------------------------------------------------- the programs

const GC_EVERY: u64 = 1000;

fn programs(garbage: u32) -> Vec<(&'static str, String, &'static str, Option<&'static str>)> {
    vec![
        (
            "numbers and strings",
            r#"
            let a = 6 * 7;
            print(a);
            print("a is " + a);
            print(1 / 4, 7 % 3, -2 + 0.5, 1 / 0);
            let s = 'ab';
            s = s + "cd";
            print(s, s.length, s == "abcd", "b" < "a");
            "#
            .into(),
            "42\na is 42\n0.25 1 -1.5 Infinity\nabcd 4 true false\n",
            None,
        ),
        (
            "objects and arrays",
            r#"
            let o = {x: 1, "y z": 2, ["k" + 1]: 3};
            o.w = o.x + o["y z"];
            print(o.x, o["y z"], o.k1, o.w, o.missing);
            let arr = [10, 20, 30];
            arr[5] = 60;
            print(arr.length, arr[1], arr[4], arr);
            arr.length = 2;
            print(arr.length, arr);
            let m = {};
            m[1 + 1] = "two";
            print(m[2], m["2"], {}, [[1, 2], 3]);
            "#
            .into(),
            "1 2 3 3 undefined\n6 20 undefined 10,20,30,,,60\n2 10,20\ntwo two [object Object] 1,2,3\n",
            None,
        ),
        (
            "closures",
            r#"
            function makeAdder(n) { return function(x) { return x + n; }; }
            let add5 = makeAdder(5);
            print(add5(10), makeAdder("n=")(1));
            function makeCounter() {
              let c = 0;
              return function() { c = c + 1; return c; };
            }
            let c1 = makeCounter();
            let c2 = makeCounter();
            c1(); c1();
            print(c1(), c2());
            function fib(n) { if (n < 2) { return n; } return fib(n - 1) + fib(n - 2); }
            print(fib(15));
            let obj = {v: 3, get: function() { return this.v; }};
            print(obj.get());
            "#
            .into(),
            "15 1n=\n3 1\n610\n3\n",
            None,
        ),
        (
            "natives and symbols",
            r#"
            print(counter(), counter(), counter());
            let s1 = Symbol("tag");
            let s2 = Symbol("tag");
            let o = {[s1]: "one"};
            o[s2] = "two";
            print(o[s1], o[s2], s1 == s2, s1 == s1, s1, Symbol());
            print(counter()); // the count survived the collections since the first line
            print(typeof 1, typeof "s", typeof o, typeof null, typeof undefined, typeof s1,
                  typeof print, typeof function() {});
            let f = freeze({x: 1});
            f.x = 2;
            "#
            .into(),
            "1 2 3\none two false true Symbol(tag) Symbol()\n4\n\
             number string object object undefined symbol function function\n",
            Some("TypeError: property x is not writable"),
        ),
        (
            "garbage while running",
            format!(
                r#"
                let keep = [];
                let i = 0;
                let n = {garbage};
                while (i < n) {{
                  let tmp = {{i: i, label: "item " + i, list: [i, i + 1]}};
                  if (i % 1000 == 0) {{ keep[keep.length] = tmp; }}
                  i = i + 1;
                }}
                print(keep.length, keep[2].label, keep[1].list[1]);
                let total = 0;
                let j = 0;
                while (j < keep.length) {{ total = total + keep[j].i; j = j + 1; }}
                print(total);
                "#
            ),
            "3 item 2000 1001\n3000\n",
            None,
        ),
        (
            "errors are values",
            "let x = 1; print(x); print(nope);".into(),
            "1\n",
            Some("ReferenceError: nope is not defined"),
        ),
    ]
}

/// `tiny_js --file PATH`: runs a script (collecting every `GC_EVERY` cells), prints its
/// output, its error and how many collections ran.
fn run_file(path: &str) -> ExitCode {
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let start = std::time::Instant::now();
    match run(&src, GC_EVERY) {
        Ok(o) => {
            print!("{}", o.output);
            let took = start.elapsed();
            eprintln!(
                "{} collections, {} cells freed, {took:?}",
                o.collections, o.freed
            );
            match o.error {
                Some(e) => {
                    eprintln!("uncaught {e}");
                    ExitCode::FAILURE
                }
                None => ExitCode::SUCCESS,
            }
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, path] = args.as_slice()
        && flag == "--file"
    {
        return run_file(path);
    }
    let garbage: u32 = args
        .first()
        .map_or(3000, |a| a.parse().expect("a count, or --file PATH"));
    assert!(
        (2001..=3000).contains(&garbage),
        "the expected output needs 2001..=3000"
    );
    let mut failed = 0;
    for (name, src, want, want_error) in programs(garbage) {
        // Collecting before every statement finds any value the evaluator forgot to root.
        for gc_every in [0, GC_EVERY] {
            let got = match run(&src, gc_every) {
                Ok(o) => o,
                Err(e) => {
                    println!("FAIL {name}: {e}");
                    failed += 1;
                    continue;
                }
            };
            let ok = got.output == want && got.error.as_deref() == want_error;
            let mode = if gc_every == 0 {
                "collecting at every statement".to_string()
            } else {
                format!("collecting every {gc_every} cells")
            };
            println!(
                "{} {name} ({mode}): {} collections during the run, {} cells freed by them",
                if ok { "ok  " } else { "FAIL" },
                got.collections,
                got.freed
            );
            if !ok {
                println!("  output {:?}\n  wanted {want:?}", got.output);
                println!("  error  {:?}\n  wanted {want_error:?}", got.error);
                failed += 1;
            }
            if name.starts_with("garbage") && gc_every == GC_EVERY && got.collections < 5 {
                println!("FAIL {name}: only {} collections ran", got.collections);
                failed += 1;
            }
        }
    }
    if failed > 0 {
        println!("{failed} failures");
        return ExitCode::FAILURE;
    }
    println!("all programs gave the expected output");
    ExitCode::SUCCESS
}
