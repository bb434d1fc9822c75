// A call-heavy tiny_js script for measuring the interpreter (README, "Building an
// interpreter on it"): cargo run --release -p memlayout-gc-object --example tiny_js -- --file gc-object/examples/tiny_js/fib.js
function fib(n) { if (n < 2) { return n; } return fib(n - 1) + fib(n - 2); }
print(fib(16));
