#!/usr/bin/env bash
# install_test.sh - installs vigil into a temporary prefix (or takes one already made,
# e.g. a dpkg -x root) and builds and runs tests/install/consumer.c out of tree, once
# through find_package(vigil) and once through pkg-config; checks that the shared
# library exports only the public API (vg_*, no vg__*) and that `vigil --help` runs.
#
# usage: install_test.sh --build BUILD_DIR     install BUILD_DIR with cmake --install
#        install_test.sh --prefix PREFIX       use an existing install under PREFIX
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/vigil-install-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
case "${1:-}" in
  --build) prefix="$work/prefix"; cmake --install "$2" --prefix "$prefix" >"$work/install.log" ;;
  --prefix) prefix="$(cd "$2" && pwd)" ;;
  *) echo "usage: $0 --build DIR | --prefix DIR" >&2; exit 2 ;;
esac
cc="${CC:-cc}"

# The shared library, its SONAME link and the public symbols.
lib="$(find "$prefix" -name 'libvigil.so.0' | head -n1)"
[ -n "$lib" ] || { echo "no libvigil.so.0 under $prefix" >&2; exit 1; }
libdir="$(dirname "$lib")"
soname="$(objdump -p "$lib" | awk '/SONAME/ {print $2}')"
[ "$soname" = "libvigil.so.0" ] || { echo "SONAME is '$soname'" >&2; exit 1; }
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort >"$work/syms"
bad="$(grep -v '^vg_' "$work/syms" | grep -v '^_' || true)"
hidden="$(grep '^vg__' "$work/syms" || true)"
if [ -n "$bad$hidden" ]; then
  echo "libvigil.so exports non-public symbols:" >&2; echo "$bad$hidden" | head -20 >&2; exit 1
fi
grep -qx vg_version "$work/syms" || { echo "vg_version is not exported" >&2; exit 1; }
echo "exports: $(wc -l <"$work/syms") public symbols, none hidden"

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# 1. find_package(vigil) -> vigil::vigil
cmake -S "$here/install" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" >"$work/cfg.log" \
  || { cat "$work/cfg.log" >&2; exit 1; }
cmake --build "$work/cmake-build" >"$work/build.log" || { cat "$work/build.log" >&2; exit 1; }
"$work/cmake-build/consumer"

# 2. pkg-config --cflags --libs vigil
pcdir="$(dirname "$(find "$prefix" -name vigil.pc | head -n1)")"
flags="$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs vigil)"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Werror -o "$work/consumer-pc" "$here/install/consumer.c" $flags
"$work/consumer-pc"

# 3. the command and its help
if [ -x "$prefix/bin/vigil" ]; then
  "$prefix/bin/vigil" --help | grep -q '^usage: vigil' || { echo "vigil --help" >&2; exit 1; }
  "$prefix/bin/vigil" --version
fi
echo "install test: ok ($prefix)"
