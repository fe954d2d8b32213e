"""The sequence database on one GPU, in contiguous chunks, resident or streamed.

Both searches keep their database on the GPU through ``DeviceDatabase``:
hmmsearch's ``GpuBackend`` one per GPU over that GPU's share of the sequences,
blastp's ``GpuUngapped`` one per engine over all of them.  The sequences are
cut into contiguous chunks of at most N residues (``residue_chunks``; a
sequence longer than N is a chunk of its own), each with its sequences
longest first (``longest_first``: a persistent grid's blocks then end
together).  A resident database is uploaded once, every chunk kept on the
GPU; a streamed one is uploaded chunk by chunk at each use (``on_gpu``) and
freed after it, for a database larger than GPU memory.

What to do when the GPU runs out of memory stays with each search, as a thin
policy over these primitives, because the two differ and a shared one would
change what they do:

* hmmsearch halves its residues budget and rebuilds every GPU's
  ``DeviceDatabase`` (an error can come from any allocation of a call, and a
  resident database that no longer fits becomes streamed);
* blastp first tries the database resident and streams it where it does not
  fit, and a streamed chunk that cannot be uploaded is cut in two
  (``DeviceDatabase.halve``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .memory import to_gpu


def longest_first(lengths) -> np.ndarray:
    """Indices of the sequences of these lengths, longest first (stable: equal lengths keep
    their order), int32."""
    return np.argsort(-np.asarray(lengths), kind="stable").astype(np.int32)


def residue_chunks(offsets: np.ndarray, max_residues: int) -> list[tuple[int, int]]:
    """Contiguous ranges (a, b) of the sequences with these boundaries, each of at most
    max_residues residues, or of one sequence longer than that."""
    n = len(offsets) - 1
    bounds, a = [], 0
    while a < n:
        b = int(np.searchsorted(offsets, offsets[a] + max_residues, side="right")) - 1
        b = max(b, a + 1)
        bounds.append((a, min(b, n)))
        a = min(b, n)
    return bounds


@dataclasses.dataclass
class Chunk:
    """Database sequences first .. first + n - 1 on one GPU.

    ``host_order``: the chunk's sequences (0 .. n - 1) longest first, or None where
    the search orders them at each call.  ``residues``, ``offsets`` (int64, from 0) and
    ``order`` (``host_order``, int32): its arrays on the GPU, None for a chunk of a
    streamed database until ``DeviceDatabase.on_gpu`` uploads them.
    """
    device_id: int
    first: int
    n: int
    host_order: np.ndarray | None = None
    residues: object = None
    offsets: object = None
    order: object = None

    @property
    def resident(self) -> bool:
        return self.residues is not None


class DeviceDatabase:
    """Sequences [first, last) of a database on one GPU, in chunks of at most
    ``max_residues`` residues.

    Args:
        residues: the database's residues, packed (host).
        offsets: int64 (n + 1,) sequence boundaries.
        device_id: the CUDA device.
        max_residues: most residues a chunk.
        resident: upload every chunk now and keep it (else each is uploaded at each use).
        first, last: the range of sequences held (default: all).
        length_order: the database's sequences longest first (``SequenceDB.length_order``),
            taken as the order of a chunk holding the whole database.
        with_order: give each chunk its longest-first order, on the GPU too (else the
            search orders the sequences it scores at each call).
    """

    def __init__(self, residues, offsets, device_id: int, max_residues: int, resident: bool,
                 first: int = 0, last: int | None = None, length_order: np.ndarray | None = None,
                 with_order: bool = True):
        self.host_residues = residues
        self.host_offsets = np.asarray(offsets, dtype=np.int64)
        self.device_id = device_id
        self.resident = resident
        self.with_order = with_order
        last = len(self.host_offsets) - 1 if last is None else last
        whole = first == 0 and last == len(self.host_offsets) - 1
        chunks = []
        for a, b in residue_chunks(self.host_offsets[first:last + 1], max_residues):
            order = None
            if with_order:
                order = (np.ascontiguousarray(length_order, dtype=np.int32)
                         if length_order is not None and whole and b - a == last - first
                         else self._longest_first(first + a, b - a))
            chunks.append(Chunk(device_id, first + a, b - a, order))
        if resident:
            chunks = [self._upload(c) for c in chunks]
        self.chunks = chunks

    def _longest_first(self, first: int, n: int) -> np.ndarray:
        return longest_first(np.diff(self.host_offsets[first:first + n + 1]))

    def _upload(self, chunk: Chunk) -> Chunk:
        """The chunk with its arrays on the GPU."""
        import cupy as cp

        off = self.host_offsets[chunk.first:chunk.first + chunk.n + 1]
        with cp.cuda.Device(self.device_id):
            return dataclasses.replace(
                chunk, residues=to_gpu(cp, self.host_residues[off[0]:off[-1]]), offsets=to_gpu(cp, off - off[0]),
                order=None if chunk.host_order is None else to_gpu(cp, chunk.host_order))

    def on_gpu(self, chunk: Chunk) -> Chunk:
        """The chunk with its arrays on the GPU: as it is where resident, else uploaded now
        (freed when the caller drops it).  An out-of-memory error is the caller's."""
        return chunk if chunk.resident else self._upload(chunk)

    def halve(self, k: int) -> None:
        """Replace (streamed) chunk k by its two halves, by sequences."""
        c = self.chunks[k]
        mid = c.n // 2
        self.chunks[k:k + 1] = [
            Chunk(c.device_id, first, n, self._longest_first(first, n) if self.with_order else None)
            for first, n in ((c.first, mid), (c.first + mid, c.n - mid))]

    def lengths(self, chunk: Chunk) -> np.ndarray:
        """The chunk's sequence lengths (int64, host)."""
        return np.diff(self.host_offsets[chunk.first:chunk.first + chunk.n + 1])
