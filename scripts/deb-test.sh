#!/usr/bin/env bash
# deb-test.sh - builds vigil's Debian packages (cpack -G DEB: libvigil0, libvigil-dev,
# vigil-tools), checks their dependencies are installable here (and, as root, that
# dpkg --dry-run -i accepts them), unpacks them into a
# throwaway root with dpkg -x and runs the install consumer test (tests/install_test.sh:
# find_package, pkg-config, exported symbols, vigil --help) against that root.
# With --dpkg (as root, on a throwaway Debian 12 machine or container) it also installs
# them with dpkg -i, runs the same test against /usr and removes them again.
#
# usage: scripts/deb-test.sh [--dpkg] [BUILD_DIR]   (default build-deb, configured here
#        when it has no CMakeCache.txt; an existing build directory is reused as it is)
set -euo pipefail
cd "$(dirname "$0")/.."
src="$(pwd)"
real_dpkg=0
if [ "${1:-}" = "--dpkg" ]; then real_dpkg=1; shift; fi
build="${1:-build-deb}"

if [ ! -f "$build/CMakeCache.txt" ]; then   # an existing build directory is used as it is
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DVIGIL_TESTS=OFF -DVIGIL_BENCH=OFF -DVIGIL_EXAMPLES=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" >/dev/null
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB >/dev/null)
debs=("$build"/libvigil0_*.deb "$build"/libvigil-dev_*.deb "$build"/vigil-tools_*.deb)
for d in "${debs[@]}"; do
  [ -f "$d" ] || { echo "deb-test: missing package $d" >&2; exit 1; }
  echo "$(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version): Depends: $(dpkg-deb -f "$d" Depends)"
done

# Every Depends group (a | b) must be met by an installed package or by one of ours.
ours="libvigil0 libvigil-dev vigil-tools"
for d in "${debs[@]}"; do
  dpkg-deb -f "$d" Depends | tr ',' '\n' | while read -r group; do
    [ -n "$group" ] || continue
    ok=0
    IFS='|' read -ra alts <<<"$group"
    for alt in "${alts[@]}"; do
      name="$(echo "$alt" | awk '{print $1}')"
      if [[ " $ours " == *" $name "* ]] || dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q 'install ok installed'; then
        ok=1
      fi
    done
    [ "$ok" = 1 ] || { echo "deb-test: $(basename "$d"): dependency not installable here: $group" >&2; exit 1; }
  done
done

# As root, let dpkg itself check that the three install together here (nothing is written).
if [ "$(id -u)" = 0 ]; then
  if ! out="$(dpkg --dry-run -i "${debs[@]}" 2>&1)"; then
    if grep -q 'lock' <<<"$out"; then echo "deb-test: dpkg database busy, dry-run skipped" >&2
    else echo "$out" >&2; echo "deb-test: dpkg --dry-run -i failed" >&2; exit 1; fi
  else
    echo "dpkg --dry-run -i: the packages install together"
  fi
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/vigil-deb-root.XXXXXX")"
trap 'rm -rf "$root"' EXIT
for d in "${debs[@]}"; do dpkg -x "$d" "$root"; done
tests/install_test.sh --prefix "$root/usr"

if [ "$real_dpkg" = 1 ]; then
  dpkg -i "${debs[@]}"
  tests/install_test.sh --prefix /usr
  man -w vigil >/dev/null 2>&1 || true
  dpkg -r vigil-tools libvigil-dev libvigil0
fi
echo "deb-test: ok"
