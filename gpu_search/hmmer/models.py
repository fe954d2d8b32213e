"""Reading profile HMMs (HMMER3 text or binary, plain or gzip) with clear errors."""

from __future__ import annotations

import io
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import AlphabetError, EmptyInputError, FormatError, OptionError, printable
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
_ALPH_LINE = re.compile(rb"^[ \t]*ALPH(?=\s|\Z)[ \t]*(\S*)", re.MULTILINE)
# the alphabet names HMMER's parser reads (Easel's esl_abc_EncodeType, any case): it refuses
# any other, and Easel ends the process on "custom" (no alphabet made of it); refused here with
# a message we write ourselves, the same every time
_ALPH_NAMES = {name.lower().encode() for name in EASEL_ALPHABETS.values()}
# a text HMM file: "HMMER" after any blank or comment ('#') lines, which HMMER's parser skips
_TEXT_FILE = re.compile(rb"(?:[ \t\r]*(?:#[^\n]*)?\n)*[ \t\r]*HMMER")
_NOT_BLANK = re.compile(rb"\S")
_LENG_LINE = re.compile(rb"^LENG[ \t]+(\d+)", re.MULTILINE)
# the same after the first line: a literal first character lets the regex engine skip ahead
# (ten times faster over a 176 MB file than ^ at every position)
_LENG_AFTER_FIRST_LINE = re.compile(rb"\nLENG[ \t]+(\d+)")
_FASTA_START = re.compile(rb"\s*>")


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
    return _models_of(*_read_file(path, program), threads or os.cpu_count() or 1, program)


def _models_of(path: Path, data: bytes, records: int | None, threads: int, program: str) -> list:
    """read_hmms of a file read and checked by :func:`_read_file`."""
    try:
        hmms = _parse_in_pieces(data, threads)
        if hmms is None:
            hmms = _parse_whole(data)
    except Exception as exc:
        raise _parse_error(path, data, exc) from None
    if not hmms:
        raise EmptyInputError(f"{printable(path)}: no models in file")
    _check_text_fields(path, hmms)
    _check_complete(path, data)
    _check_records(path, data, hmms, records)
    for hmm in hmms:
        _check_model(path, hmm, program)
    return hmms


def open_hmms(path: str | os.PathLike, threads: int | None = None, program: str = "hmmsearch"):
    """The models of an HMM file as :func:`read_hmms` reads and checks them: a list, or for a
    large HMMER3 text file (PARALLEL_PARSE_BYTES and more) an :class:`HMMStream`, which hands
    the models on in file order as its pieces are parsed, so that a search starts on the
    first models while the rest are read.  A fault found in a later piece is raised when the
    search reaches it (the command then writes no output)."""
    threads = threads or os.cpu_count() or 1
    path, data, records = _read_file(path, program)
    pieces = _pieces(data, threads)
    if pieces is None or not records:
        return _models_of(path, data, records, threads, program)
    return HMMStream(path, data, records, pieces, threads, program)


class HMMStream:
    """The models of a large HMMER3 text file, parsed in pieces on a pool of threads and
    handed on in file order, each checked as :func:`read_hmms` checks it; the file's own
    checks (its end, one model per record) when the last piece has been handed on.  Read
    once.  ``len()`` is the number of records (``//`` lines), the models of a sound file."""

    def __init__(self, path: Path, data: bytes, records: int, pieces: list, threads: int, program: str):
        self.path, self.data, self.records = path, data, records
        self.pieces, self.threads, self.program = pieces, threads, program
        self.bit_cutoffs = None       # --cut_ga/nc/tc: also checked on every model as it is handed on
        self._read = False

    def __len__(self) -> int:
        return self.records

    @property
    def nodes(self) -> int:
        """The models' M summed (their LENG lines)."""
        first = _LENG_LINE.match(self.data)
        return (int(first.group(1)) if first else 0) + sum(
            int(m.group(1)) for m in _LENG_AFTER_FIRST_LINE.finditer(self.data))

    def __iter__(self):
        if self._read:
            raise RuntimeError("an HMMStream is read once")
        self._read = True
        pool = ThreadPoolExecutor(max_workers=min(self.threads, len(self.pieces)), thread_name_prefix="hmm-read")
        parsed = [pool.submit(_parse_whole, piece) for piece in self.pieces]
        names = []
        try:
            for future in parsed:
                try:
                    hmms = future.result()
                except Exception:
                    # as read_hmms: the whole file parsed at once, whose error names the real
                    # place (or whose models, where it reads, are the rest)
                    try:
                        hmms = _parse_whole(self.data)[len(names):]
                    except Exception as exc:
                        raise _parse_error(self.path, self.data, exc) from None
                    yield from self._checked(hmms, names)
                    break
                yield from self._checked(hmms, names)
            if not names:
                raise EmptyInputError(f"{printable(self.path)}: no models in file")
            _check_complete(self.path, self.data)
            _check_record_count(self.path, self.data, names, self.records)
        finally:
            for future in parsed:
                future.cancel()
            pool.shutdown(wait=False)

    def _checked(self, hmms: list, names: list):
        """The models of a piece, each checked; their names added to ``names``."""
        _check_text_fields(self.path, hmms, first=len(names) + 1)
        for hmm in hmms:
            _check_model(self.path, hmm, self.program)
            if self.bit_cutoffs:
                check_cutoff(hmm, self.bit_cutoffs)
        names += [hmm.name for hmm in hmms]
        return hmms


def _read_file(path, program: str) -> tuple[Path, bytes, int | None]:
    """(path, the file's bytes, a text file's number of records), after the checks that come
    before parsing."""
    path = Path(path)
    check_readable(path)
    data = read_bytes(path)
    # (tests that copy nothing: strip() copied a Pfam-sized file, 2.4 s of 1.8 GB)
    if not data or data.isspace():
        raise EmptyInputError(f"{printable(path)}: file is empty")
    if _FASTA_START.match(data):
        raise FormatError(f"{printable(path)}: this is a FASTA file, not a profile HMM file "
                          f"({_ARGUMENT_ORDER[program]})")
    return path, data, _check_before_parsing(path, data)


def _parse_whole(data) -> list:
    """The models of a file's bytes (or a view of a piece of them)."""
    from pyhmmer.plan7 import HMMFile

    with HMMFile(io.BytesIO(data)) as hf:
        return list(hf)


def _parse_error(path: Path, data: bytes, exc: Exception) -> FormatError:
    """The error for HMMER's parser refusing the file."""
    if isinstance(exc, EOFError):
        return FormatError(f"{printable(path)}: truncated HMM file")
    # whatever HMMER's parser raises on a damaged file (ValueError, EaselError, pyhmmer's
    # AllocationError for a damaged model size, SystemError): the file's fault, not ours
    return FormatError(f"{printable(path)}: not a valid HMMER profile file ({_reason(exc, data)})")


def _check_model(path: Path, hmm, program: str) -> None:
    """One model: protein, with a consensus line, its values probabilities."""
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


def _check_text_fields(path: Path, hmms: list, first: int = 1) -> None:
    """pyhmmer reads a model's name, accession, description and annotation lines as ASCII
    text; other bytes (HMMER takes any) would fail the report later, so they are refused here.
    first: the first model's number in the file."""
    for number, hmm in enumerate(hmms, start=first):
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
        alph = hmm_line and _ALPH_LINE.search(data, start, hmm_line.start())
        if hmm_line and (not alph or alph.group(1).lower() not in _ALPH_NAMES):
            name = _NAME_LINE.search(data, start, hmm_line.start())
            which = f"model '{printable(name.group(1), 60)}'" if name else f"record {number}"
            why = (f"has an unrecognized alphabet type '{printable(alph.group(1), 60)}'" if alph
                   else "has no ALPH line")
            raise FormatError(f"{printable(path)}: not a valid HMMER profile file ({which} {why})")
        start = end
    return len(ends)


def _check_records(path: Path, data: bytes, hmms: list, records: int | None) -> None:
    """One model per record: HMMER's parser reads a text record whose ``HMM`` line is
    damaged together with the next one, as one model, silently; and reads a binary file
    cut inside its last model's composition (the last field) as whole.  Both are errors."""
    if records is not None:
        _check_record_count(path, data, [hmm.name for hmm in hmms], records)
        return
    last = io.BytesIO()
    hmms[-1].write(last, binary=True)
    last = last.getvalue()
    # a file in the format written here (HMMER3/f) holds its models byte for byte as written
    if data[:4] == last[:4] and not data.endswith(last):
        raise FormatError(f"{printable(path)}: truncated or damaged binary HMM file (model "
                          f"'{printable(hmms[-1].name, 60)}' does not end the file as written)")


def _check_record_count(path: Path, data: bytes, names_read: list, records: int) -> None:
    """A text file's models read (their names, in order) one per record."""
    if records == len(names_read):
        return
    names = [m.group(1) for m in _NAME_LINE.finditer(data)]
    k = next((i for i, name in enumerate(names_read) if i >= len(names) or names[i] != name.encode()),
             len(names_read))
    which = f"model '{printable(names[k], 60)}'" if k < len(names) else f"record {k + 1}"
    raise FormatError(f"{printable(path)}: not a valid HMMER profile file ({records} records "
                      f"('//' lines) but {len(names_read)} models read: {which} is damaged)")


def check_cutoff(hmm, bit_cutoffs: str) -> None:
    """--cut_ga/nc/tc (``bit_cutoffs``: 'gathering', 'noise' or 'trusted') need the model (an
    HMM or an optimized profile) to carry that cutoff (HMMER refuses otherwise)."""
    from .options import CUTOFF_FLAGS

    if getattr(hmm.cutoffs, bit_cutoffs) is None:
        flag = CUTOFF_FLAGS[bit_cutoffs]
        raise OptionError(f"model '{printable(hmm.name)}' has no {flag[-2:].upper()} cutoff, needed by {flag}")


def _pieces(data: bytes, threads: int) -> list | None:
    """A large HMMER3 text file cut into 4 x threads pieces after a record's ``//`` line
    (blank pieces left out); None where the file is small, binary or not HMMER3 text."""
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
    # (views, not copies: each piece is copied by the thread that parses it; blank ones left out)
    view = memoryview(data)
    return [view[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if _NOT_BLANK.search(data, a, b)]


def _parse_in_pieces(data: bytes, threads: int) -> list | None:
    """The models of a large HMMER3 text file parsed in pieces (:func:`_pieces`) on
    ``threads`` threads, in file order; None where the file is not cut in pieces, or where
    any piece fails to parse (the caller then parses the whole file at once, whose error
    names the real place)."""
    pieces = _pieces(data, threads)
    if pieces is None:
        return None
    try:
        with ThreadPoolExecutor(max_workers=min(threads, len(pieces)), thread_name_prefix="hmm-read") as pool:
            return [hmm for models in pool.map(_parse_whole, pieces) for hmm in models]
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
