//! A small tree-walking interpreter for a JavaScript-like language, built on gc-object:
//! numbers, string values (collectable `HeapString`s), objects and arrays (literals,
//! property get/set, computed keys, `length`), functions and closures whose environments
//! are heap objects (a scope is an object whose prototype is the enclosing scope), native
//! functions (`print`, a stateful `counter`, `Symbol`, `freeze`) as native closures, and
//! collections that run *while the program executes*, at statement boundaries.
//!
//! Rooting discipline: the evaluator holds the heap's `Context` for the whole run and
//! passes a handle `Scope` down; every value it keeps in a Rust variable is a `Local`
//! (a handle), each statement runs in a scope of its own, and a `return` hands its value
//! out of the statement's scope (`EscapeScope`). Raw values borrow the scope, so the
//! safepoint before each statement (it takes the scope by `&mut`) cannot meet one.
//!
//! It runs embedded programs, compares each one's output with the expected text, once
//! collecting at every statement and once as the heap's pacing says, and exits non-zero on
//! a mismatch. `cargo run -p memlayout-gc-object --example tiny_js
//! [garbage-iterations | --file PATH [NUMBER...]]` (the numbers are the script's `args`).

mod interp;
mod parse;

use gc_object::Pacing;
use interp::{Gc, run};
use std::process::ExitCode;

// ---------------------------------------------------------------- the programs

/// The embedded programs are small: a smaller least debt than the default makes the paced
/// runs collect often enough to matter.
const TEST_PACING: Pacing = Pacing {
    debt_percent: Pacing::DEFAULT.debt_percent,
    min_debt: 64 * 1024,
};

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

/// `tiny_js --file PATH [NUMBER...]`: runs a script with the default pacing, prints its
/// output, its error, and what collecting cost.
fn run_file(path: &str, args: &[String]) -> ExitCode {
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let numbers: Vec<f64> = args
        .iter()
        .map(|a| a.parse().unwrap_or_else(|_| panic!("not a number: {a}")))
        .collect();
    let (start, wall) = (interp::cpu_clock(), std::time::Instant::now());
    match run(&src, Gc::Paced(Pacing::DEFAULT), &numbers) {
        Ok(o) => {
            print!("{}", o.output);
            let took = interp::cpu_clock().saturating_sub(start);
            let share = o.gc_time.as_secs_f64() / took.as_secs_f64() * 100.0;
            eprintln!(
                "{took:.3?} CPU ({:.3?} wall): {} collections ({:.3?}, {share:.1}%), {} cells marked, {} freed; \
                 peak heap {} B, most live {} B ({:.2}x)",
                wall.elapsed(),
                o.collections,
                o.gc_time,
                o.marked,
                o.freed,
                o.peak_bytes,
                o.max_live,
                o.peak_bytes as f64 / o.max_live.max(1) as f64
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
    if let [flag, path, rest @ ..] = args.as_slice()
        && flag == "--file"
    {
        return run_file(path, rest);
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
        for gc in [Gc::EveryStatement, Gc::Paced(TEST_PACING)] {
            let got = match run(&src, gc, &[]) {
                Ok(o) => o,
                Err(e) => {
                    println!("FAIL {name}: {e}");
                    failed += 1;
                    continue;
                }
            };
            let ok = got.output == want && got.error.as_deref() == want_error;
            let mode = match gc {
                Gc::EveryStatement => "collecting at every statement".to_string(),
                Gc::Paced(p) => format!(
                    "paced: {}% of the live bytes, at least {} KiB",
                    p.debt_percent,
                    p.min_debt / 1024
                ),
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
            if name.starts_with("garbage") && gc != Gc::EveryStatement && got.collections < 5 {
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
