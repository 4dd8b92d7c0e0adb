#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian/Ubuntu machine (no-op when present).
# The CUDA toolkit is optional: without nvcc the library builds CPU-only.
set -e
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v make >/dev/null || need+=(make)
command -v gcc >/dev/null || need+=(gcc)
[ -e /usr/lib/gcc/x86_64-linux-gnu/*/include/omp.h ] || ls /usr/lib/gcc/*/*/include/omp.h >/dev/null 2>&1 || need+=(libgomp1)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}"
fi
