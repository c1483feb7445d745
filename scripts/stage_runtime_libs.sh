#!/usr/bin/env bash
# Stages the shared libraries of the named families for the image (Note [Image layout] in the
# Dockerfile): each real file once, each soname symlink recreated as a symlink, as `cp -a` would,
# so that one directory COPY (which keeps symlinks) ships every library once.
#   stage_runtime_libs.sh --from SRC_DIR [--from SRC_DIR]... DEST FAMILY...
# A FAMILY is a library name without its suffix (libcublasLt): its entries are SRC_DIR/FAMILY.so.*
# (libcublasLt.so.13 -> libcublasLt.so.13.0.2.14, the real file), taken from the first SRC_DIR
# that has any; FAMILY.so.* never matches another family (libcublas.so.* is not libcublasLt.so.*).
# Exits 1 naming the family when no SRC_DIR has it, and naming the link when a symlink leads out
# of its family's files (it would dangle in DEST).
set -euo pipefail

die() { echo "stage_runtime_libs.sh: $*" >&2; exit 1; }

srcs=()
while [ $# -gt 0 ] && [ "$1" = --from ]; do
  [ $# -ge 2 ] || die "--from needs a directory"
  [ -d "$2" ] || die "--from $2: not a directory"
  srcs+=("$2")
  shift 2
done
[ ${#srcs[@]} -gt 0 ] && [ $# -ge 2 ] || die "usage: stage_runtime_libs.sh --from SRC_DIR... DEST FAMILY..."
dest="$1"
shift
mkdir -p "$dest"

# The entries FAMILY.so.* of the first source directory holding any, one per line.
family_entries() {
  local family="$1" src
  for src in "${srcs[@]}"; do
    local found
    found="$(find "$src" -maxdepth 1 -name "$family.so.*" \( -type f -o -type l \) | LC_ALL=C sort)"
    if [ -n "$found" ]; then
      printf '%s\n' "$found"
      return 0
    fi
  done
  return 1
}

stage_family() {
  local family="$1" entries entry name real files=0 links=0
  entries="$(family_entries "$family")" || die "no $family.so.* in ${srcs[*]}"
  while IFS= read -r entry; do
    name="$(basename "$entry")"
    [ ! -e "$dest/$name" ] && [ ! -L "$dest/$name" ] || die "$dest/$name already exists ($family staged twice?)"
    if [ -L "$entry" ]; then
      real="$(realpath -e "$entry" 2>/dev/null)" || die "$entry: a dangling symlink"
      # The link must end at one of this family's real files beside it, which is staged too.
      if [ "$(dirname "$real")" != "$(realpath "$(dirname "$entry")")" ] || ! grep -qxF "$(dirname "$entry")/$(basename "$real")" <<<"$entries"; then
        die "$entry points to $real, outside the $family.so.* files of $(dirname "$entry")"
      fi
      if [[ "$(readlink "$entry")" == */* ]]; then
        ln -s "$(basename "$real")" "$dest/$name"
      else
        cp -P "$entry" "$dest/$name"
      fi
      links=$((links + 1))
    else
      cp -p "$entry" "$dest/$name"
      files=$((files + 1))
    fi
  done <<<"$entries"
  echo "$family: $files file(s), $links symlink(s) from $(dirname "$(head -n1 <<<"$entries")")"
}

for family in "$@"; do
  stage_family "$family"
done
