#!/usr/bin/env bash
# The installed package, from a clean temporary prefix (ctest embed/installed):
#  1. `cmake --install BUILD --prefix P` (the already built libraries, merged);
#  2. the installed dtensorc runs a program that imports from the installed
#     stdlib (a module that exists only there);
#  3. examples/embed, a separate CMake project, configured with
#     find_package(dtensor) against P, built and run: its matmuls are right
#     and its two training steps print the losses `dtensorc run
#     examples/mlp_tp.dt` prints.
# usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$(cd "$2" && pwd)
build=$(cd "$build" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"
for f in bin/dtensorc lib/libdtensor.a include/dtensor/dtensor.hpp share/dtensor/stdlib/nn.dt \
         lib/cmake/dtensor/dtensorConfig.cmake; do
  test -f "$prefix/$f" || { echo "FAIL: not installed: $f"; exit 1; }
done

# The installed dtensorc finds the installed stdlib.
cat > "$prefix/share/dtensor/stdlib/only_installed.dt" <<'DT'
fn triple(a: f32[N] @ *) -> f32[N] @ * {
  return a * 3.0
}
DT
mkdir -p "$tmp/work"
cat > "$tmp/work/prog.dt" <<'DT'
import only_installed
import nn
mesh m = [x = 2]
let a : f32[4] @ m[x] = [1, 2, 3, 4]
print(only_installed.triple(a))
DT
(cd "$tmp/work" && env -u DTENSOR_STDLIB "$prefix/bin/dtensorc" run prog.dt) > "$tmp/prog.out"
test "$(cat "$tmp/prog.out")" = "[3, 6, 9, 12]" || { echo "FAIL: installed dtensorc:"; cat "$tmp/prog.out"; exit 1; }

# A host project against the installed package.
gen=()
command -v ninja > /dev/null && gen=(-G Ninja)
cmake -S "$src/examples/embed" -B "$tmp/host" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/host" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
(cd "$tmp/work" && env -u DTENSOR_STDLIB "$tmp/host/embed_example" "$src/examples/embed/mlp_step.dt") \
  > "$tmp/embed.out"
cat "$tmp/embed.out"
grep '^loss ' "$tmp/embed.out" | cut -d' ' -f2 > "$tmp/embed.loss"
# (whole output to a file: `| head` would close the pipe early, and a
# write error on stdout is an error exit of dtensorc)
"$build/dtensorc" run "$src/examples/mlp_tp.dt" > "$tmp/run.all"
head -2 "$tmp/run.all" > "$tmp/run.loss"
diff "$tmp/run.loss" "$tmp/embed.loss" || { echo "FAIL: the host's losses differ from dtensorc run"; exit 1; }
grep -q '^diagnostic ParseError bad.dt:1:' "$tmp/embed.out"
echo "PASS"
