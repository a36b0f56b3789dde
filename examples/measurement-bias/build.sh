#!/bin/sh
# Build the two binaries under comparison from the same sources: o2 (cc -O2) and o3 (cc -O3),
# each linked from its objects in the order given (benchsage's link-order contexts pass a
# permutation of them as {objects}).
#
#   sh build.sh                          # default order: main.o scan.o smooth.o tables.o
#   sh build.sh tables.o main.o smooth.o scan.o
#   sh build.sh --if-missing             # only when o2 or o3 does not exist yet (the reset)
#
# Objects are compiled once into build/O2 and build/O3 (again when their source is newer);
# each binary is linked to a temporary name and renamed, so a run never sees half a binary.
set -eu
cd "$(dirname "$0")"
CC=${CC:-cc}
if [ "${1:-}" = "--if-missing" ]; then
    [ -x o2 ] && [ -x o3 ] && exit 0
    shift
fi
objects=${*:-main.o scan.o smooth.o tables.o}
for level in O2 O3; do
    mkdir -p "build/$level"
    linked=""
    for object in $objects; do
        source=${object%.o}.c
        target=build/$level/$object
        if [ ! "$target" -nt "$source" ]; then
            "$CC" "-$level" -c "$source" -o "$target.tmp"
            mv -f "$target.tmp" "$target"
        fi
        linked="$linked $target"
    done
    binary=$(echo "$level" | tr 'O' 'o')
    # shellcheck disable=SC2086 # the objects are words, in this order
    "$CC" -o "$binary.tmp" $linked
    mv -f "$binary.tmp" "$binary"
done
echo "built o2 and o3, objects linked in this order: $objects"
