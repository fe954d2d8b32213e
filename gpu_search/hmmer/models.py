"""Reading profile HMMs (HMMER3 text or binary, plain or gzip) with clear errors."""

from __future__ import annotations

import io
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import AlphabetError, EmptyInputError, FormatError, printable
from ..seqdb import check_readable, read_bytes


# text HMM files at least this large are parsed in pieces on several threads (a Pfam-sized
# file: 2,000 models took 3 s on one thread; the parser releases the interpreter's lock)
PARALLEL_PARSE_BYTES = 4 << 20

# Easel's alphabet codes (esl_alphabet.h): a binary model's fourth 32-bit field.  Any other
# value makes Easel end the process (esl_fatal: "bad alphabet type"), so it is checked first.
EASEL_ALPHABETS = {1: "RNA", 2: "DNA", 3: "amino", 4: "coins", 5: "dice"}

# a record's closing line in a text HMM file (HMMER2 and HMMER3); a text file starts with
# "HMMER", so every one follows a newline (a pattern starting with one is scanned fast)
_RECORD_END = re.compile(rb"\n[ \t]*//[ \t]*\r?(?=\n|\Z)")
_NAME_LINE = re.compile(rb"^NAME[ \t]+(\S+)", re.MULTILINE)
_HMM_LINE = re.compile(rb"^[ \t]*HMM(?=\s|\Z)", re.MULTILINE)           # a record's header ends here
_ALPH_LINE = re.compile(rb"^[ \t]*ALPH(?=\s|\Z)", re.MULTILINE)
# a text HMM file: "HMMER" after any blank or comment ('#') lines, which HMMER's parser skips
_TEXT_FILE = re.compile(rb"(?:[ \t\r]*(?:#[^\n]*)?\n)*[ \t\r]*HMMER")
_NOT_BLANK = re.compile(rb"\S")


# how each program's messages name its HMM argument and what it searches
_ARGUMENT_ORDER = {"hmmsearch": "the HMM file comes first: hmmsearch HMMFILE SEQDB",
                   "hmmscan": "the HMM database comes first: hmmscan HMMDB SEQFILE"}
_SEARCHES = {"hmmsearch": "hmmsearch searches protein databases (use nhmmer for nucleotide models)",
             "hmmscan": "hmmscan searches protein sequences (use nhmmscan for nucleotide models)"}


def read_hmms(path: str | os.PathLike, threads: int | None = None, program: str = "hmmsearch") -> list:
    """All models of an HMM file, checked to be protein models.

    threads: threads parsing a large text file (all cores by default).
    program: the command whose messages these are (hmmsearch or hmmscan).

    Raises:
        InputFileError, EmptyInputError, FormatError (not an HMM file, truncated
        or corrupt), AlphabetError (a nucleotide model).
    """
    from pyhmmer.plan7 import HMMFile

    path = Path(path)
    check_readable(path)
    data = read_bytes(path)
    if not data.strip():
        raise EmptyInputError(f"{printable(path)}: file is empty")
    if data.lstrip().startswith(b">"):
        raise FormatError(f"{printable(path)}: this is a FASTA file, not a profile HMM file "
                          f"({_ARGUMENT_ORDER[program]})")
    records = _check_before_parsing(path, data)
    try:
        hmms = _parse_in_pieces(data, threads or os.cpu_count() or 1)
        if hmms is None:
            with HMMFile(io.BytesIO(data)) as hf:
                hmms = list(hf)
    except EOFError:
        raise FormatError(f"{printable(path)}: truncated HMM file") from None
    except Exception as exc:
        # whatever HMMER's parser raises on a damaged file (ValueError, EaselError, pyhmmer's
        # AllocationError for a damaged model size, SystemError): the file's fault, not ours
        raise FormatError(f"{printable(path)}: not a valid HMMER profile file ({_reason(exc, data)})") from None
    if not hmms:
        raise EmptyInputError(f"{printable(path)}: no models in file")
    _check_text_fields(path, hmms)
    _check_complete(path, data)
    _check_records(path, data, hmms, records)
    for hmm in hmms:
        if hmm.alphabet.type != "amino":
            raise AlphabetError(
                f"{printable(path)}: model '{printable(hmm.name)}' is a {hmm.alphabet.type} model; "
                f"gpu-search {_SEARCHES[program]}"
            )
        if hmm.consensus is None:
            # HMMER's profile configuration stops the program on such a model (modelconfig.c:
            # "HMM must have a consensus to transfer to the profile")
            raise FormatError(f"{printable(path)}: model '{printable(hmm.name)}' has no consensus line "
                              f"(CONS): a damaged HMM file")
        _check_probabilities(path, hmm)
    return hmms


# how far a distribution's sum may stray from 1 (HMMER's files, 5 decimals of -log p, stray
# under 1e-5): beyond, the model is damaged
PROBABILITY_TOLERANCE = 1e-3


def _check_probabilities(path: Path, hmm) -> None:
    """A model's emissions and transitions must be probabilities, each distribution summing
    to 1 (HMMER's p7_hmm_Validate, which lets NaN through: hence the sums' check).  A damaged
    binary file can read as a model with, say, an emission of 1.7e36: HMMER's search then
    crashes (segmentation fault), so such a model is refused."""
    import numpy as np
    from pyhmmer.errors import InvalidHMM

    try:
        hmm.validate(tolerance=PROBABILITY_TOLERANCE)
        if np.isfinite([np.asarray(hmm.match_emissions).sum(), np.asarray(hmm.insert_emissions).sum(),
                        np.asarray(hmm.transition_probabilities).sum()]).all():
            return
    except InvalidHMM:
        pass
    raise FormatError(f"{printable(path)}: model '{printable(hmm.name)}' holds values that are not "
                      f"probabilities (emissions or transitions out of [0, 1], or not summing to 1): "
                      f"a damaged HMM file")


def _check_text_fields(path: Path, hmms: list) -> None:
    """pyhmmer reads a model's name, accession, description and annotation lines as ASCII
    text; other bytes (HMMER takes any) would fail the report later, so they are refused here."""
    for number, hmm in enumerate(hmms, start=1):
        for field in ("name", "accession", "description", "consensus", "consensus_structure", "reference"):
            try:
                getattr(hmm, field)
            except UnicodeDecodeError as exc:
                raise FormatError(f"{printable(path)}: model {number}'s {field} is not ASCII text "
                                  f"('{printable(exc.object, 60)}')") from None


def _reason(exc: Exception, data: bytes) -> str:
    """Why HMMER's parser refused the file, in words fit for the message."""
    msg = str(exc)
    if msg.startswith("Unrecognized format tag"):
        # pyhmmer quotes the first token from its buffer, past the token's end: bytes the
        # file does not hold; quote the file's own first bytes instead
        head = data.lstrip()[:24].split(b"\n", 1)[0]
        return f"unrecognized format: the file starts with '{printable(head, 40)}'"
    if isinstance(exc, MemoryError) or "malloc of size" in msg:
        return "a model's size is damaged: too large to allocate"
    return printable(msg) or type(exc).__name__


def _check_before_parsing(path: Path, data: bytes) -> int | None:
    """What HMMER's parser cannot survive: a binary model with an alphabet code Easel does
    not know (Easel ends the process), a text model without an ALPH line (HMMER's parser
    dereferences a missing alphabet), a NUL byte in a text file.  Returns a text file's count
    of records ('//' lines)."""
    from pyhmmer.plan7 import HMMFile

    if int.from_bytes(data[:4], sys.byteorder) in HMMFile._MAGIC:
        code = int.from_bytes(data[12:16], sys.byteorder)
        if len(data) >= 16 and code not in EASEL_ALPHABETS:
            raise FormatError(f"{printable(path)}: not a valid HMMER profile file (binary model with "
                              f"alphabet code {code}, not one of Easel's: a damaged file)")
        return None
    if not _TEXT_FILE.match(data):
        return None
    nul = data.find(b"\0")
    if nul >= 0:
        # HMMER's parser reads a line only up to a NUL byte: "LENG  24<NUL>3" read as 24
        # nodes while 243 followed overran its arrays (a segmentation fault)
        line = data.count(b"\n", 0, nul) + 1
        raise FormatError(f"{printable(path)}: not a valid HMMER profile file (a NUL byte on line {line})")
    start = 0
    ends = [m.end() for m in _RECORD_END.finditer(data)]
    for number, end in enumerate(ends + [len(data)], start=1):
        hmm_line = _HMM_LINE.search(data, start, end)
        if hmm_line and not _ALPH_LINE.search(data, start, hmm_line.start()):
            name = _NAME_LINE.search(data, start, hmm_line.start())
            which = f"model '{printable(name.group(1), 60)}'" if name else f"record {number}"
            raise FormatError(f"{printable(path)}: not a valid HMMER profile file ({which} has no "
                              f"ALPH line)")
        start = end
    return len(ends)


def _check_records(path: Path, data: bytes, hmms: list, records: int | None) -> None:
    """One model per record: HMMER's parser reads a text record whose ``HMM`` line is
    damaged together with the next one, as one model, silently; and reads a binary file
    cut inside its last model's composition (the last field) as whole.  Both are errors."""
    if records is not None:
        if records == len(hmms):
            return
        names = [m.group(1) for m in _NAME_LINE.finditer(data)]
        k = next((i for i, hmm in enumerate(hmms) if i >= len(names) or names[i] != hmm.name.encode()),
                 len(hmms))
        which = f"model '{printable(names[k], 60)}'" if k < len(names) else f"record {k + 1}"
        raise FormatError(f"{printable(path)}: not a valid HMMER profile file ({records} records "
                          f"('//' lines) but {len(hmms)} models read: {which} is damaged)")
    last = io.BytesIO()
    hmms[-1].write(last, binary=True)
    last = last.getvalue()
    # a file in the format written here (HMMER3/f) holds its models byte for byte as written
    if data[:4] == last[:4] and not data.endswith(last):
        raise FormatError(f"{printable(path)}: truncated or damaged binary HMM file (model "
                          f"'{printable(hmms[-1].name, 60)}' does not end the file as written)")


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
    # (blank pieces left out, found without copying them)
    pieces = [data[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if _NOT_BLANK.search(data, a, b)]

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
    if not _TEXT_FILE.match(data):
        return
    # (offsets into the file, not copies of it: a Pfam-sized file is gigabytes)
    end = len(data)
    while end and data[end - 1] in b" \t\n\r\x0b\x0c":
        end -= 1
    if data[data.rfind(b"\n", 0, end) + 1:end].strip() == b"//":
        return
    tail = data[data.rfind(b"\n//", 0, end) + 1:end]
    name = next((line.split(None, 1)[1].strip()
                 for line in tail.splitlines() if line.startswith(b"NAME ") and len(line.split(None, 1)) > 1),
                None)
    which = f"model '{printable(name, 60)}'" if name else "the last model"
    raise FormatError(f"{printable(path)}: truncated HMM file ({which} has no closing '//' line)")
