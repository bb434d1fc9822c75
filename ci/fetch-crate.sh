# Sourced by the compat scripts. `fetch_crate NAME VERSION DIR` has cargo fetch the
# published package NAME (exactly VERSION) through a throwaway crate in DIR, and prints
# the folder cargo unpacked it into (nothing of it is committed to this repository).
fetch_crate() {
  local name=$1 version=$2 dir=$3
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "compat-probe"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
$name = "=$version"

[workspace]
TOML
  : > "$dir/src/lib.rs"
  (cd "$dir" && cargo fetch --quiet)
  local manifest
  manifest=$(cd "$dir" && cargo metadata --format-version 1 | NAME=$name python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == os.environ["NAME"]:
        print(p["manifest_path"])
')
  [ -n "$manifest" ] || { echo "compat: cargo did not fetch $name $version" >&2; return 1; }
  dirname "$manifest"
}
