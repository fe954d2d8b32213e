"""Kernels compiled ahead of time: cubins made once (a container image's build) and loaded
at run time without NVRTC.

At run time every kernel shape (a .cu file with its compile-time sizes) is compiled
by NVRTC the first time a host meets it, then found in CuPy's disk cache.  A fresh
host or container has no cache: a search of a few hundred models then spends
seconds in NVRTC (about 0.19 s a shape) before its first result, and so does blastp
(100 queries against 273 M residues on an H200: 16.7 s the first time, 5 s later;
docs/benchmarks.md); every Galaxy job or Nextflow task that starts from the image
pays it again.  ``python -m gpu_search.gpu.compiled --arch 90`` compiles the shapes
both searches can ask for (each search's module lists them:
``gpu_search.hmmer.gpu.kernels.kernel_shapes``, ``gpu_search.blast.gpu.kernel_shapes``)
into this package's ``compiled/`` folder, one cubin a shape and GPU architecture; the
loader (:mod:`.loader`) takes a cubin from there when it has one for the device's
architecture and falls back to NVRTC otherwise (or where the driver cannot load it).

A cubin's name is a hash of everything that makes the binary: the source with its
compile-time constants, the headers beside it, the compiler options and the
architecture.  An edited kernel or header therefore never loads a stale binary.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FOLDER = Path(__file__).with_name("compiled")
STD = "-std=c++17"


def key(source: str, flags: tuple, folder: Path, arch: str) -> str:
    """The cubin's name for a source (compile-time constants included), its flags, the
    headers of its folder and an architecture ('90' for sm_90)."""
    h = hashlib.sha256()
    for part in (source, "\0".join(flags), arch):
        h.update(part.encode())
        h.update(b"\0")
    h.update(_headers(folder))
    return h.hexdigest()[:32]


def _headers(folder: Path) -> bytes:
    """The names and contents of the folder's headers (the kernels include them)."""
    return b"".join(header.name.encode() + b"\0" + header.read_bytes() + b"\0"
                    for header in sorted(folder.glob("*.cuh")))


def cubin_path(source: str, flags: tuple, folder: Path, arch: str) -> Path:
    return FOLDER / f"{key(source, flags, folder, arch)}.sm_{arch}.cubin"


def compile_cubin(source: str, flags: tuple, folder: Path, arch: str, name: str) -> bytes:
    """NVRTC (through CuPy's bindings; no GPU needed) to a cubin for sm_<arch>."""
    import importlib

    importlib.import_module("cupy")          # finds NVRTC (the CUDA wheels' or a toolkit's)
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(source, name, [], [])
    try:
        nvrtc.compileProgram(prog, [*flags, f"-I{folder}", f"-arch=sm_{arch}"])
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


SEARCHES = ("hmmsearch", "blastp")


def _shapes(max_M: int, arch: str, searches: tuple = SEARCHES) -> list:
    """(file, options) of every kernel shape the searches list for an architecture: hmmsearch's
    for models up to max_M (the architecture's shared memory decides where large profiles
    go), blastp's (the same on every architecture)."""
    from ..blast.gpu import kernel_shapes as blastp_shapes
    from ..hmmer.gpu.kernels import SMEM_OPTIN, kernel_shapes

    shapes = []
    if "hmmsearch" in searches:
        shapes += kernel_shapes(max_M, SMEM_OPTIN[arch])
    if "blastp" in searches:
        shapes += blastp_shapes()
    return list(dict.fromkeys(shapes))


def main(argv=None) -> int:
    from .loader import source_with_defines

    parser = argparse.ArgumentParser(prog="python -m gpu_search.gpu.compiled",
                                     description="Compile gpu-search's kernels (hmmsearch's and blastp's) "
                                                 "ahead of time for GPU architectures (into the installed "
                                                 "package).")
    parser.add_argument("--arch", default="90",
                        help="compute capabilities, comma-separated (80: A100; 86, 89; 90: H100 and H200)")
    parser.add_argument("--max-m", type=int, default=None,
                        help="largest model the hmmsearch shapes are made for (default: 3,000; larger "
                             "models compile at run time)")
    parser.add_argument("--searches", default=",".join(SEARCHES),
                        help=f"the searches whose kernels are built, comma-separated (default: "
                             f"{','.join(SEARCHES)})")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    from ..hmmer.gpu.kernels import MAX_M_AHEAD, SMEM_OPTIN

    archs = [a.strip().removeprefix("sm_") for a in args.arch.split(",") if a.strip()]
    unknown = [a for a in archs if a not in SMEM_OPTIN]
    if unknown or not archs:
        parser.error(f"--arch: {', '.join(unknown) or 'none given'}; known: {', '.join(SMEM_OPTIN)}")
    searches = tuple(s.strip() for s in args.searches.split(",") if s.strip())
    unknown = [s for s in searches if s not in SEARCHES]
    if unknown or not searches:
        parser.error(f"--searches: {', '.join(unknown) or 'none given'}; known: {', '.join(SEARCHES)}")
    FOLDER.mkdir(exist_ok=True)
    jobs = []
    for arch in archs:
        for path, options in _shapes(args.max_m or MAX_M_AHEAD, arch, searches):
            source, flags = source_with_defines(path.read_text(), options, path.name)
            flags = (STD, *flags)
            out = cubin_path(source, flags, path.parent, arch)
            if not out.exists():
                jobs.append((source, flags, path, arch, out))

    def one(job):
        source, flags, path, arch, out = job
        cubin = compile_cubin(source, flags, path.parent, arch, path.name)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(cubin)
        os.replace(tmp, out)          # whole or not at all

    with ThreadPoolExecutor(max(1, args.threads)) as pool:
        list(pool.map(one, jobs))
    n = sum(1 for _ in FOLDER.glob("*.cubin"))
    print(f"compiled: {len(jobs)} kernel shapes built for sm_{', sm_'.join(archs)}; {n} cubins in {FOLDER}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
