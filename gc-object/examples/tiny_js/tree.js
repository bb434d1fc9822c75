// An object tree built, walked and rebuilt 3 times: how the interpreter's time and the
// collector's cost grow with the live heap. `args[0]` is the depth: 2^(depth+1) - 1 nodes
// (12: 8,191; 14: 32,767; 15: 65,535; 16: 131,071).
// cargo run --release -p memlayout-gc-object --example tiny_js -- --file gc-object/examples/tiny_js/tree.js 16
function make(d) {
  if (d == 0) { return {left: null, right: null, value: 1}; }
  return {left: make(d - 1), right: make(d - 1), value: d};
}
function walk(t) {
  if (t.left == null) { return t.value; }
  return t.value + walk(t.left) + walk(t.right);
}
function count(t) {
  if (t.left == null) { return 1; }
  return 1 + count(t.left) + count(t.right);
}
let depth = args[0];
let nodes = 1;
let i = 0;
while (i <= depth) { nodes = nodes * 2; i = i + 1; }
nodes = nodes - 1;
let round = 0;
while (round < 3) {
  let tree = make(depth);
  let n = count(tree);
  // A wrong count stops the program (an undefined name: a ReferenceError).
  if (n != nodes) { wrong_tree_size(n); }
  print(n, walk(tree));
  round = round + 1;
}
