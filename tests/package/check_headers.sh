#!/usr/bin/env bash
# The installed package's public headers (Note [Public headers] in cmake/Install.cmake): installs
# BUILD_DIR into a temporary prefix, compiles each header alone (a translation unit of one
# #include <ddp/...>) with the build's C++ compiler against that prefix only (the source tree is
# not on the include path, so a header that includes a non-installed one fails), and configures a
# one-line project with find_package(DdpEngine CONFIG REQUIRED) at the package's version.
#   tests/package/check_headers.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" --component engine >"$tmp/install.log" ||
  { cat "$tmp/install.log"; echo "check_headers: cmake --install $build failed"; exit 1; }
inc="$tmp/prefix/include"
mapfile -t headers < <(cd "$inc" && find ddp -name '*.h' | sort)
((${#headers[@]} > 0)) || { echo "check_headers: no header under $inc/ddp"; exit 1; }
failed=0
for h in "${headers[@]}"; do
  printf '#include <%s>\n' "$h" >"$tmp/one.cc"
  # CUDA builds: the same flags as the engine's own sources (DDP_WITH_CUDA=1).
  flags=()
  [ "$(cat "$build/ddp_cuda_enabled" 2>/dev/null)" = "ON" ] && flags=(-DDDP_WITH_CUDA=1)
  if ! "$cxx" -std=c++20 -fsyntax-only -Wall -Werror "${flags[@]}" -I"$inc" -I"$inc/ddp" "$tmp/one.cc" 2>"$tmp/err"; then
    echo "check_headers: $h does not compile alone against the installed prefix:"
    cat "$tmp/err"
    failed=1
  fi
done
echo "check_headers: ${#headers[@]} public headers compiled alone"
# find_package at the package's own version (DdpEngineConfigVersion.cmake).
version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$tmp/prefix/lib/cmake/DdpEngine/DdpEngineConfigVersion.cmake")
[ -n "$version" ] || { echo "check_headers: DdpEngineConfigVersion.cmake names no version"; exit 1; }
header_version=$(sed -n 's/^#define DDP_ENGINE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  "$inc/ddp/worker/control/engine_version.h" | paste -sd.)
[ "$version" = "$header_version" ] ||
  { echo "check_headers: the package says $version, engine_version.h $header_version"; exit 1; }
mkdir -p "$tmp/app"
cat >"$tmp/app/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(app LANGUAGES CXX)
find_package(DdpEngine $version CONFIG REQUIRED)
if(NOT TARGET DdpEngine::engine)
  message(FATAL_ERROR "no DdpEngine::engine")
endif()
CMAKE
if ! cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/app.log" 2>&1; then
  cat "$tmp/app.log"
  echo "check_headers: find_package(DdpEngine $version) failed"
  exit 1
fi
echo "check_headers: find_package(DdpEngine $version CONFIG REQUIRED) found DdpEngine::engine"
exit $failed
