"""Reading HMM files: a large text file parsed in pieces on several threads gives the models
of a one-thread parse, in file order, and a bad record the same error."""

from __future__ import annotations

import io

import pytest

from gpu_search.errors import FormatError
from gpu_search.hmmer import models


def serial(data: bytes) -> list:
    from pyhmmer.plan7 import HMMFile

    with HMMFile(io.BytesIO(data)) as hf:
        return list(hf)


@pytest.fixture(scope="module")
def many_models(data_dir) -> bytes:
    """Real Pfam-like models of several files, 24 records, as one text file."""
    names = ["Thioesterase", "PF02826", "LuxC", "KR", "RREFam"]
    texts = [(data_dir / "hmms" / "txt" / f"{n}.hmm").read_bytes() for n in names]
    return b"".join(texts * 4)


def test_pieces_equal_one_thread(many_models, tmp_path, monkeypatch):
    path = tmp_path / "many.hmm"
    path.write_bytes(many_models)
    expected = serial(many_models)
    assert len(expected) >= 20
    monkeypatch.setattr(models, "PARALLEL_PARSE_BYTES", 1)
    assert models._parse_in_pieces(many_models, 3) is not None        # really cut into pieces
    for threads in (2, 3, 8):
        got = models.read_hmms(path, threads=threads)
        assert [h.name for h in got] == [h.name for h in expected]
        assert all(a == b for a, b in zip(got, expected))


def test_bad_record_in_a_piece_reports_as_one_thread(many_models, tmp_path, monkeypatch):
    """A corrupt record half-way: the pieces give up, and the whole file's parse reports it."""
    middle = many_models.find(b"\n//\n", len(many_models) // 2) + 4
    line = many_models.find(b"\n  1 ", middle)           # the first match line of the next model
    bad = many_models[:line + 1] + b"  1   garbage\n" + many_models[many_models.find(b"\n", line + 1) + 1:]
    path = tmp_path / "bad.hmm"
    path.write_bytes(bad)
    with pytest.raises(FormatError) as one:
        models.read_hmms(path, threads=1)
    monkeypatch.setattr(models, "PARALLEL_PARSE_BYTES", 1)
    assert models._parse_in_pieces(bad, 4) is None
    with pytest.raises(FormatError) as pieces:
        models.read_hmms(path, threads=4)
    assert str(pieces.value).split(" (")[0] == str(one.value).split(" (")[0]
    assert "not a valid HMMER profile file" in str(pieces.value)


def test_a_file_cut_inside_its_last_model_is_an_error(many_models, tmp_path):
    """HMMER reads a text HMM file cut inside its last model as one model shorter, silently;
    here it is a FormatError naming that model, wherever the cut falls in it (its header, its
    match states, just before its '//'), in one piece or parsed on threads; a complete file,
    with trailing blank lines or CRLF line ends, still reads."""
    last_start = many_models.rstrip().rfind(b"\nHMMER3") + 1
    last_name = many_models[last_start:].split(b"\nNAME", 1)[1].split()[0].decode()
    end = len(many_models.rstrip()) - len(b"//")
    named = f"truncated HMM file \\(model '{last_name}' has no closing '//' line\\)"
    # cut at line ends (where HMMER's parser is silent) and inside lines (where it sometimes
    # fails itself): never a silent success
    line_ends = [i + 1 for i in range(last_start, end) if many_models[i] == 10]
    for cut in line_ends[5::max(1, len(line_ends) // 9)] + [last_start + 200, end - 1, end]:
        path = tmp_path / f"cut{cut}.hmm"
        path.write_bytes(many_models[:cut])
        for threads in (1, 4):
            with pytest.raises(FormatError, match=named if cut in line_ends or cut >= end - 1 else "HMM file"):
                models.read_hmms(path, threads=threads)
    whole = tmp_path / "whole.hmm"
    for text in (many_models + b"\n\n", many_models.replace(b"\n", b"\r\n")):
        whole.write_bytes(text)
        assert len(models.read_hmms(whole, threads=1)) == len(serial(many_models))
