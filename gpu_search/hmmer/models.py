"""Reading profile HMMs (HMMER3 text or binary, plain or gzip) with clear errors."""

from __future__ import annotations

import io
import os
from pathlib import Path

from ..errors import AlphabetError, EmptyInputError, FormatError
from ..seqdb import check_readable, read_bytes


def read_hmms(path: str | os.PathLike) -> list:
    """All models of an HMM file, checked to be protein models.

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
        with HMMFile(io.BytesIO(data)) as hf:
            hmms = list(hf)
    except EOFError:
        raise FormatError(f"{path}: truncated HMM file") from None
    except (ValueError, RuntimeError, OSError) as exc:
        msg = " ".join(str(exc).split())
        raise FormatError(f"{path}: not a valid HMMER profile file ({msg})") from None
    if not hmms:
        raise EmptyInputError(f"{path}: no models in file")
    for hmm in hmms:
        if hmm.alphabet.type != "amino":
            raise AlphabetError(
                f"{path}: model '{hmm.name}' is a {hmm.alphabet.type} model; gpu-search hmmsearch "
                f"searches protein databases (use nhmmer for nucleotide models)"
            )
    return hmms
