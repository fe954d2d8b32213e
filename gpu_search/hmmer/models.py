"""Reading profile HMMs (HMMER3 text or binary, plain or gzip) with clear errors."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

from ..errors import AlphabetError, EmptyInputError, FormatError, InputFileError


def _open_bytes(path: Path):
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    if path.is_dir():
        raise InputFileError(f"{path}: is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise InputFileError(f"{path}: permission denied")
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise FormatError(f"{path}: corrupt or truncated gzip file ({exc})") from None
    if not data.strip():
        raise EmptyInputError(f"{path}: file is empty")
    return data


def read_hmms(path: str | os.PathLike) -> list:
    """All models of an HMM file, checked to be protein models.

    Raises:
        InputFileError, EmptyInputError, FormatError (not an HMM file, truncated
        or corrupt), AlphabetError (a nucleotide model).
    """
    from pyhmmer.plan7 import HMMFile

    path = Path(path)
    data = _open_bytes(path)
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
