#!/usr/bin/env bash
# scripts/stage_runtime_libs.sh against fake library directories laid out as NVIDIA's images lay
# out CUDA and NCCL (ctest KubernetesImageStageLibs, label kubernetes): each real file staged
# once and byte for byte, each .so.N / .so.N.M symlink staged as a symlink to the same file,
# nothing else staged, the first source directory holding a family wins, and a missing family,
# a link leading out of its family or a family named twice fails naming it.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
stage="$root/scripts/stage_runtime_libs.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A real file of N bytes, each different (so a copy is checked by content).
real() { head -c "$2" /dev/urandom >"$1"; }

cuda="$work/cuda/lib" sys="$work/sys/lib"
mkdir -p "$cuda" "$sys"
real "$cuda/libcudart.so.13.0.96" 1000
ln -s "$cuda/libcudart.so.13.0.96" "$cuda/libcudart.so.13"   # absolute: staged relative
real "$cuda/libcublas.so.13.1.0.3" 2000
ln -s libcublas.so.13.1.0.3 "$cuda/libcublas.so.13"
ln -s libcublas.so.13 "$cuda/libcublas.so"                    # the dev link: not staged
real "$cuda/libcublasLt.so.13.1.0.3" 3000
ln -s libcublasLt.so.13.1.0.3 "$cuda/libcublasLt.so.13.1"     # .so.N.M
ln -s libcublasLt.so.13.1 "$cuda/libcublasLt.so.13"           # .so.N, through .so.N.M
real "$cuda/libcufft.so.12.0.0" 500                           # another family: not staged
real "$cuda/libcudart_static.a" 500
real "$sys/libnccl.so.2.27.7" 4000
ln -s libnccl.so.2.27.7 "$sys/libnccl.so.2"
real "$sys/libcudart.so.12.4.1" 700                           # a later directory: not staged
ln -s libcudart.so.12.4.1 "$sys/libcudart.so.12"
real "$sys/libssl.so.3" 300

dest="$work/staged"
"$stage" --from "$cuda" --from "$sys" "$dest" libcudart libcublas libcublasLt libnccl >"$work/out" 2>&1 ||
  { cat "$work/out"; fail "staging the four families failed"; }

expected="libcublas.so.13
libcublas.so.13.1.0.3
libcublasLt.so.13
libcublasLt.so.13.1
libcublasLt.so.13.1.0.3
libcudart.so.13
libcudart.so.13.0.96
libnccl.so.2
libnccl.so.2.27.7"
got="$(cd "$dest" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort)"
[ "$got" = "$expected" ] || fail "staged entries differ from the families' .so.* entries:
$(diff <(echo "$expected") <(echo "$got") || true)"

# Real files: regular files, once each, byte for byte.
for f in cuda/lib/libcudart.so.13.0.96 cuda/lib/libcublas.so.13.1.0.3 cuda/lib/libcublasLt.so.13.1.0.3 \
         sys/lib/libnccl.so.2.27.7; do
  name="$(basename "$f")"
  if [ -L "$dest/$name" ] || [ ! -f "$dest/$name" ]; then fail "$name is not a regular file"
  elif ! cmp -s "$work/$f" "$dest/$name"; then fail "$name differs from its source"; fi
done
files="$(find "$dest" -type f | wc -l)"
[ "$files" -eq 4 ] || fail "$files regular files staged, expected 4 (each library once)"
bytes="$(find "$dest" -type f -printf '%s\n' | awk '{s += $1} END {print s}')"
[ "$bytes" -eq 10000 ] || fail "$bytes bytes of real files staged, expected 10000 (1000+2000+3000+4000)"
# What tar stores (a directory COPY keeps links the same way): the links as links.
tar_regular="$(tar -C "$dest" -cf - . | tar -tvf - | grep -c '^-')"
[ "$tar_regular" -eq 4 ] || fail "an archive of the staged directory holds $tar_regular regular files, expected 4"

# Symlinks: links, with the link text a relative name, ending at the right real file.
check_link() {  # NAME TEXT REAL
  if [ ! -L "$dest/$1" ]; then fail "$1 is not a symlink"; return; fi
  [ "$(readlink "$dest/$1")" = "$2" ] || fail "$1 -> $(readlink "$dest/$1"), expected -> $2"
  [ "$(basename "$(realpath -e "$dest/$1")")" = "$3" ] && [ "$(dirname "$(realpath "$dest/$1")")" = "$(realpath "$dest")" ] ||
    fail "$1 does not end at $dest/$3"
}
check_link libcudart.so.13 libcudart.so.13.0.96 libcudart.so.13.0.96
check_link libcublas.so.13 libcublas.so.13.1.0.3 libcublas.so.13.1.0.3
check_link libcublasLt.so.13 libcublasLt.so.13.1 libcublasLt.so.13.1.0.3
check_link libcublasLt.so.13.1 libcublasLt.so.13.1.0.3 libcublasLt.so.13.1.0.3
check_link libnccl.so.2 libnccl.so.2.27.7 libnccl.so.2.27.7

# Runs the script expecting failure with $1 in its message.
must_fail() {
  local expect="$1" out; shift
  rm -rf "$work/bad"
  if out="$("$stage" "$@" 2>&1)"; then fail "'$*' succeeded"; return; fi
  grep -qF -- "$expect" <<<"$out" || fail "'$*' failed without '$expect': $out"
}
must_fail "no libcufftw.so.* in $cuda $sys" --from "$cuda" --from "$sys" "$work/bad" libcudart libcufftw
must_fail "bad/libcublas.so.13 already exists (libcublas staged twice?)" \
  --from "$cuda" "$work/bad" libcublas libcublas
must_fail "--from $work/none: not a directory" --from "$work/none" "$work/bad" libcudart
must_fail "usage" --from "$cuda" "$work/bad"
out="$work/outside/lib"
mkdir -p "$out"
real "$work/outside/libbad.so.1.0" 10
ln -s ../libbad.so.1.0 "$out/libbad.so.1"
must_fail "$out/libbad.so.1 points to $work/outside/libbad.so.1.0, outside the libbad.so.* files of $out" \
  --from "$out" "$work/bad" libbad
ln -s libgone.so.1.0 "$out/libgone.so.1"
must_fail "$out/libgone.so.1: a dangling symlink" --from "$out" "$work/bad" libgone

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
cat "$work/out"
echo "PASS: stage_runtime_libs.sh (9 entries, 4 files once, 5 links, 6 refusals)"
