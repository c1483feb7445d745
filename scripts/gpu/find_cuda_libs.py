#!/usr/bin/env python3
"""Prints the folders (colon-separated) that hold the CUDA 13 runtime, cuBLAS and NCCL libraries
the GPU bundle leaves to the machine (scripts/gpu/device_libs.txt): first PyTorch's nvidia-*
wheels in python3's site-packages, then a CUDA toolkit's lib64 (this machine, in a rehearsal),
then ldconfig's cache. Says on stderr which it could not find."""
import glob
import os
import site
import subprocess
import sys

WANT = ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2"]


def roots():
    out = []
    try:
        out += site.getsitepackages()
    except AttributeError:
        pass
    out.append(site.getusersitepackages())
    out += [p for p in sys.path if p.endswith("site-packages")]
    return [os.path.join(r, "nvidia") for r in dict.fromkeys(out) if os.path.isdir(os.path.join(r, "nvidia"))]


def main():
    found = {}
    for root in roots():
        for lib in WANT:
            for path in sorted(glob.glob(os.path.join(root, "**", lib), recursive=True)):
                found.setdefault(lib, os.path.dirname(path))
    for folder in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"):
        for lib in WANT:
            if lib not in found and os.path.exists(os.path.join(folder, lib)):
                found[lib] = folder
    try:
        cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        cache = ""
    for line in cache.splitlines():
        name = line.strip().split(" ")[0]
        if name in WANT and name not in found and "=>" in line:
            found[name] = os.path.dirname(line.split("=>")[1].strip())
    missing = [lib for lib in WANT if lib not in found]
    if missing:
        print("not found: " + ", ".join(missing), file=sys.stderr)
    print(":".join(dict.fromkeys(found[lib] for lib in WANT if lib in found)))


if __name__ == "__main__":
    main()
