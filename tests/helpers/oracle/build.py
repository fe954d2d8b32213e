"""Build the HMMER oracle programs against the libhmmer inside the pyhmmer wheel.

The pyhmmer wheel ships HMMER 3.4's own shared libraries and headers
(``pyhmmer.libs/``); the oracles are small C programs calling HMMER's own
functions, so the tests compare gpu-search with HMMER itself.  Returns None
(and the tests skip with the reason) where no C compiler or headers exist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).parent


def pyhmmer_libs() -> Path | None:
    import pyhmmer

    libs = Path(pyhmmer.__file__).parent.parent / "pyhmmer.libs"
    return libs if (libs / "include" / "libhmmer" / "hmmer.h").exists() else None


def compiler() -> str | None:
    """The C compiler: $CC, else cc, else gcc (None if none is on PATH)."""
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def missing() -> str | None:
    """Why the oracles cannot be built here (for a test's skip reason), or None."""
    if compiler() is None:
        return "no C compiler on PATH (cc or gcc, or $CC; Debian: apt-get install gcc)"
    if pyhmmer_libs() is None:
        return "the pyhmmer wheel has no HMMER headers (pyhmmer.libs/include): install pyhmmer from its wheel"
    return None


@lru_cache(maxsize=None)
def build(name: str) -> Path | None:
    """Compile tests/helpers/oracle/<name>.c once per session; the path of the binary, or None where
    ``missing()`` says why it cannot be built.  A failed compile raises CalledProcessError."""
    cc, libs = compiler(), pyhmmer_libs()
    if cc is None or libs is None:
        return None
    out_dir = Path(os.environ.get("GPU_SEARCH_ORACLE_DIR", HERE / ".build"))
    out_dir.mkdir(parents=True, exist_ok=True)
    src = HERE / f"{name}.c"
    exe = out_dir / name
    newest = max(p.stat().st_mtime for p in [src, *HERE.glob("*.h")])     # (the oracles' shared header)
    if exe.exists() and exe.stat().st_mtime >= newest:
        return exe
    inc = libs / "include"
    cmd = [cc, "-O1", "-w", f"-I{inc}/libhmmer", f"-I{inc}/libeasel", f"-I{inc}/libhmmer/impl_sse",
           str(src), f"-L{libs}", "-llibhmmer", "-llibeasel", f"-Wl,-rpath,{libs}",
           "-lm", "-lpthread", "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True)
    return exe
