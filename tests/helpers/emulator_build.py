"""How the CPU emulator of the CUDA kernels (tests/helpers/warp_emulator.cpp) is compiled.

``GPU_SEARCH_EMULATOR_TSAN=1`` builds it with ThreadSanitizer (the process must run with
libtsan preloaded; tests/kernels/test_kernels_tsan.py does that): races between the kernel's threads
that the plain emulator cannot show (a read-modify-write that should be atomic, a value read
after a shuffle without a __syncwarp) are then reported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CXX = shutil.which("g++") or shutil.which("c++")
EMULATOR = Path(__file__).with_name("warp_emulator.cpp")
TSAN = os.environ.get("GPU_SEARCH_EMULATOR_TSAN") == "1"


def flags(optimize: str = "-O1") -> list[str]:
    """The compiler's flags for the emulator as a shared library (ctypes)."""
    base = [optimize, "-std=c++17", "-shared", "-fPIC", "-fwrapv"]
    return base + (["-g", "-fsanitize=thread", "-DEMU_TSAN"] if TSAN else [])


def build(out: Path, defines: list[str], optimize: str = "-O1") -> Path:
    """warp_emulator.cpp with these -D/-I options as ``out`` (a TSan build gets its own name)."""
    out = Path(out)
    if TSAN:
        out = out.with_name(out.stem + "_tsan" + out.suffix)
    if not out.exists():
        subprocess.run([CXX, *flags(optimize), *defines, "-o", str(out), str(EMULATOR)], check=True,
                       capture_output=True)
    return out


def libtsan() -> str | None:
    """The path of g++'s ThreadSanitizer runtime, or None."""
    if CXX is None:
        return None
    path = subprocess.run([CXX, "-print-file-name=libtsan.so"], capture_output=True, text=True).stdout.strip()
    return os.path.realpath(path) if path and os.path.isabs(path) and os.path.exists(path) else None
