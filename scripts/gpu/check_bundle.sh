#!/usr/bin/env bash
# Proves a GPU bundle closed (Note [GPU bundle] in scripts/gpu_bundle.sh): every shared library
# that a carried program or library names (its DT_NEEDED entries, read with readelf, so that
# what this machine has installed cannot hide a missing one) is either in the bundle's lib/ or
# among the sonames the GPU machine provides (scripts/gpu/device_libs.txt). Prints the highest
# glibc and libstdc++ symbol versions the carried files ask for (the GPU machine's runtime must
# be at least as new). Exit 0 when closed, 1 with each missing library and who needs it.
#   scripts/gpu/check_bundle.sh BUNDLE_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
BUNDLE="${1:?usage: check_bundle.sh BUNDLE_DIR}"
declare -A have=()
while read -r soname; do have[$soname]=1; done < <(grep -v '^#' scripts/gpu/device_libs.txt | grep -v '^$')
for f in "$BUNDLE"/lib/*; do [ -f "$f" ] && have[$(basename "$f")]=1; done
missing=0 files=0
for f in "$BUNDLE"/bin/* "$BUNDLE"/bin/tests/* "$BUNDLE"/lib/*; do
  [ -f "$f" ] || continue
  files=$((files + 1))
  while read -r needed; do
    if [ -z "${have[$needed]:-}" ]; then
      echo "check_bundle: ${f#"$BUNDLE"/} needs $needed, which is neither in lib/ nor provided by the GPU machine" >&2
      missing=$((missing + 1))
    fi
  done < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
versions=$(for f in "$BUNDLE"/bin/* "$BUNDLE"/bin/tests/* "$BUNDLE"/lib/*; do
  [ -f "$f" ] && readelf -V "$f" 2>/dev/null | grep -o 'GLIBC\(XX\)\?_[0-9.]*'; done | sort -u)
glibc=$(grep '^GLIBC_' <<<"$versions" | sort -V | tail -1)
glibcxx=$(grep '^GLIBCXX_' <<<"$versions" | sort -V | tail -1)
echo "check_bundle: $files files; needs at most $glibc and $glibcxx from the GPU machine"
if ((missing)); then
  echo "check_bundle: $missing missing libraries" >&2
  exit 1
fi
echo "check_bundle: closed"
