"""Reading profile HMMs (HMMER3 text or binary, plain or gzip) with clear errors."""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import AlphabetError, EmptyInputError, FormatError
from ..seqdb import check_readable, read_bytes


# text HMM files at least this large are parsed in pieces on several threads (a Pfam-sized
# file: 2,000 models took 3 s on one thread; the parser releases the interpreter's lock)
PARALLEL_PARSE_BYTES = 4 << 20


def read_hmms(path: str | os.PathLike, threads: int | None = None) -> list:
    """All models of an HMM file, checked to be protein models.

    threads: threads parsing a large text file (all cores by default).

    Raises:
        InputFileError, EmptyInputError, FormatError (not an HMM file, truncated
        or corrupt), AlphabetError (a nucleotide model).
    """
    from pyhmmer.plan7 import HMMFile

    path = Path(path)
    check_readable(path)
    data = read_bytes(path)
    if not data.strip():
        raise EmptyInputError(f"{path}: file is empty")
    if data.lstrip().startswith(b">"):
        raise FormatError(f"{path}: this is a FASTA file, not a profile HMM file "
                          f"(the HMM file comes first: hmmsearch HMMFILE SEQDB)")
    try:
        hmms = _parse_in_pieces(data, threads or os.cpu_count() or 1)
        if hmms is None:
            with HMMFile(io.BytesIO(data)) as hf:
                hmms = list(hf)
    except EOFError:
        raise FormatError(f"{path}: truncated HMM file") from None
    except (ValueError, RuntimeError, OSError) as exc:
        msg = " ".join(str(exc).split())
        raise FormatError(f"{path}: not a valid HMMER profile file ({msg})") from None
    if not hmms:
        raise EmptyInputError(f"{path}: no models in file")
    _check_complete(path, data)
    for hmm in hmms:
        if hmm.alphabet.type != "amino":
            raise AlphabetError(
                f"{path}: model '{hmm.name}' is a {hmm.alphabet.type} model; gpu-search hmmsearch "
                f"searches protein databases (use nhmmer for nucleotide models)"
            )
    return hmms


def _parse_in_pieces(data: bytes, threads: int) -> list | None:
    """The models of a large HMMER3 text file parsed in pieces cut after a record's ``//``
    line, on ``threads`` threads, in file order; None where the file is small, binary or
    not HMMER3 text, or where any piece fails to parse (the caller then parses the whole
    file at once, whose error names the real place)."""
    from pyhmmer.plan7 import HMMFile

    if threads < 2 or len(data) < PARALLEL_PARSE_BYTES or not data.lstrip().startswith(b"HMMER3"):
        return None
    parts = 4 * threads
    cuts = [0]
    for k in range(1, parts):
        end = data.find(b"\n//\n", max(cuts[-1], len(data) * k // parts))
        if end < 0:
            break
        cuts.append(end + 4)
    cuts.append(len(data))
    pieces = [data[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if data[a:b].strip()]

    def parse(piece: bytes) -> list:
        with HMMFile(io.BytesIO(piece)) as hf:
            return list(hf)

    try:
        with ThreadPoolExecutor(max_workers=min(threads, len(pieces)), thread_name_prefix="hmm-read") as pool:
            return [hmm for models in pool.map(parse, pieces) for hmm in models]
    except Exception:
        return None


def _check_complete(path: Path, data: bytes) -> None:
    """A text HMM file must end with a record's closing ``//`` line.

    HMMER's parser (and pyhmmer's) reads a file cut inside its last model as one
    model shorter, silently: a partly downloaded Pfam-A would lose families
    without a word.  Binary (hmmpress'd) files are left to the parser."""
    if not data.lstrip().startswith(b"HMMER"):
        return
    body = data.rstrip()
    if body.rsplit(b"\n", 1)[-1].strip() == b"//":
        return
    tail = body[body.rfind(b"\n//") + 1:] if b"\n//" in body else body
    name = next((line.split(None, 1)[1].strip().decode("utf-8", "replace")
                 for line in tail.splitlines() if line.startswith(b"NAME ") and len(line.split(None, 1)) > 1),
                None)
    which = f"model '{name}'" if name else "the last model"
    raise FormatError(f"{path}: truncated HMM file ({which} has no closing '//' line)")
