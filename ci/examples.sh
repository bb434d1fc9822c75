#!/usr/bin/env bash
# Runs every example of every crate (each checks its own answers and exits non-zero on a
# wrong one), with small arguments so the step stays short. An example under
# <crate>/examples/ (a file, or a folder with a main.rs) that this script does not know
# fails the step: add its arguments here.
set -euo pipefail
shopt -s nullglob # no example folders: the folder pattern matches nothing
cd "$(dirname "$0")/.."
declare -A args=(
  [lean-string/tour]=""
  [gc-object/linked_list]=""
  [gc-object/tiny_js]="3000|--file gc-object/examples/tiny_js/tree.js 10"
  [cob-tree/quick]="20000"
  [cob-tree/index_layouts]="10"
  [cob-tree/profile]="get 1000|mix 1000|bt-rand 1000"
  [cob-tree/str_profile]="1000|1000 range|1000 build"
  [cob-tree/growth]="10000|one struct 2000|btree path 2000"
  [cob-tree/memory]="10000"
  [arena-alloc/size_classes]=""
  [arena-alloc/stress]="200"
)
status=0
for f in */examples/*.rs */examples/*/main.rs; do
  crate=${f%%/*}
  # An example in a folder (<crate>/examples/<name>/main.rs) is named after the folder.
  if [[ $f == */main.rs ]]; then name=$(basename "$(dirname "$f")"); else name=$(basename "$f" .rs); fi
  key="$crate/$name"
  if [[ ! -v args[$key] ]]; then
    echo "examples: $key has no entry in ci/examples.sh" >&2
    status=1
    continue
  fi
  IFS='|' read -r -a runs <<< "${args[$key]}"
  [ ${#runs[@]} -gt 0 ] || runs=("")
  for a in "${runs[@]}"; do
    echo "== example: $key $a"
    # shellcheck disable=SC2086 # the arguments are words
    cargo run -q --release -p "memlayout-$crate" --example "$name" -- $a
  done
done
exit $status
