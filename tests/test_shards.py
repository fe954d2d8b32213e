"""Result files of database shards (.gshits, .gsblast) and outputs written through symbolic links.

The files are plain data: a pickle behind the right header runs nothing, a damaged, cut or
crafted file is refused with one line and exit 5, shards that are not one search of one
database (other options, databases, query files, the same shard twice, overlapping
sequences) with exit 2; outputs named through a link are written to the link's target.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import random
import shutil
import struct
from pathlib import Path

import pytest
from conftest import ROOT, TEST_DATA

from gpu_search import seqdb
from gpu_search.blast import merge as blast_merge
from gpu_search.errors import FormatError, OptionError
from gpu_search.hmmer import merge as hmmer_merge
from gpu_search.hmmer import report, search
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.options import SearchOptions
from gpu_search.output import RESULTS_VERSION

HMM = TEST_DATA / "four-models.hmm"


# --- the files, written by hand (not by the code under test) ---------------------------------


def container(kind: bytes, header, data: bytes = b"", version: int = RESULTS_VERSION) -> bytes:
    """The documented layout: kind, version, header length, JSON header, data length, data, SHA-256."""
    blob = json.dumps(header).encode() if not isinstance(header, bytes) else header
    body = kind + bytes([version]) + struct.pack("<Q", len(blob)) + blob + struct.pack("<Q", len(data)) + data
    return body + hashlib.sha256(body).digest()


def parts(path) -> tuple[dict, bytes]:
    raw = Path(path).read_bytes()[:-32]
    h = struct.unpack_from("<Q", raw, 8)[0]
    return json.loads(raw[16:16 + h]), raw[24 + h:]


class Runs:
    """Unpickled by a plain pickle, it runs a command that writes a file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def cli(*args) -> tuple[int, str]:
    """gpu-search in this process: (exit code, stderr)."""
    import contextlib

    from gpu_search.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


def one_line(stderr: str) -> bool:
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("gpu-search: ") and "Traceback" not in stderr


# --- fixtures: a database in 3 shards, each searched -------------------------------------------


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    d = tmp_path_factory.mktemp("shards")
    paths = seqdb.makedb(TEST_DATA / "proteome.faa", d / "db.gsdb", shards=3)
    hmms = read_hmms(HMM)
    files = []
    for p in paths:
        db = seqdb.open_database(p)
        res = list(search.hmmsearch(hmms, db, SearchOptions(), device="cpu", cpus=2))
        f = d / f"{p.stem}.gshits"
        hmmer_merge.save_results(f, res, hmmfile=str(HMM), seqfile=str(p), options=SearchOptions(), database=db)
        files.append(f)
    return {"dir": d, "gsdb": paths, "files": files, "hmms": hmms}


def search_shard(shards, i, name, options=None, hmms=None, gsdb=None):
    """Shard ``i`` searched again (other options, models or database), saved as ``name``."""
    p = gsdb or shards["gsdb"][i]
    db = seqdb.open_database(p)
    options = options or SearchOptions()
    res = list(search.hmmsearch(hmms or shards["hmms"], db, options, device="cpu", cpus=2))
    out = shards["dir"] / name
    hmmer_merge.save_results(out, res, hmmfile=str(HMM), seqfile=str(p), options=options, database=db)
    return out


def outputs(results) -> dict[str, str]:
    """Every output a merge writes, as text: the tables and the main report (timing fixed)."""
    out = {}
    for fmt in ("targets", "domains", "pfam"):
        buf = io.BytesIO()
        for i, r in enumerate(results):
            r.hits.write(buf, format=fmt, header=i == 0)
        out[fmt] = buf.getvalue().decode()
    text, alignment = io.StringIO(), io.StringIO()
    for r in results:
        report.write_query(text, r, SearchOptions(), report.Timing(user=0.0, sys=0.0, elapsed=0.0))
        report.write_alignment(alignment, text, r, SearchOptions(), "ali.sto")
    out["report"] = text.getvalue()
    out["alignment"] = alignment.getvalue()      # -A
    return out


# --- hmmsearch: what merges, and exactly -------------------------------------------------------


def test_merged_shards_equal_one_search(shards):
    """Shards in any order merge into every output of one search of the whole database, byte for
    byte (E-values, domZ, thresholds: the hits travel at full precision)."""
    whole = list(search.hmmsearch(shards["hmms"], seqdb.open_database(TEST_DATA / "proteome.faa"),
                                  SearchOptions(), device="cpu", cpus=2))
    files = list(shards["files"])
    random.Random(3).shuffle(files)
    merged, meta = hmmer_merge.read_shards(files)
    assert outputs(merged) == outputs(whole)
    assert outputs(whole)["alignment"].count("# STOCKHOLM 1.0") >= 2         # -A of the merged hits too
    assert meta["seqfile"] == "db.shard1of3.gsdb,db.shard2of3.gsdb,db.shard3of3.gsdb"
    assert [r.stats.nseqs for r in merged] == [300] * 4
    # the test can fail: one shard alone is not the whole database
    alone, _ = hmmer_merge.read_shards(files[:1])
    assert outputs(alone)["targets"] != outputs(whole)["targets"]


def test_a_file_says_what_was_searched(shards):
    header, _ = parts(shards["files"][1])
    db = seqdb.open_database(shards["gsdb"][1])
    assert 0 < db.first_index and db.n_seqs < 300
    assert header["database"] == {"name": "db.gsdb", "total_seqs": 300, "total_residues": 109732,
                                  "shard": [2, 3], "first_index": db.first_index, "n_seqs": db.n_seqs,
                                  "n_residues": int(db.offsets[-1])}
    assert header["options"]["E"] == 10.0 and header["program"] == "hmmsearch"


def test_the_database_when_the_caller_does_not_give_it(shards, tmp_path):
    """Without ``database``: a .gsdb shard is read again (its place in the set), any other
    input is not (a pipe cannot be read twice): its name and the sizes the search counted."""
    header, _ = parts(shards["files"][2])
    db = seqdb.open_database(shards["gsdb"][2])
    res = list(search.hmmsearch(shards["hmms"][:1], db, SearchOptions(), device="cpu", cpus=2))
    hmmer_merge.save_results(tmp_path / "a.gshits", res, hmmfile="m.hmm", seqfile=str(shards["gsdb"][2]),
                             options=SearchOptions())
    assert parts(tmp_path / "a.gshits")[0]["database"] == header["database"]
    whole = seqdb.open_database(TEST_DATA / "proteome.faa")
    res = list(search.hmmsearch(shards["hmms"][:1], whole, SearchOptions(), device="cpu", cpus=2))
    os.mkfifo(tmp_path / "db.fifo")         # (opened for reading, it would wait for a writer)
    for seqfile in (str(TEST_DATA / "proteome.faa"), str(tmp_path / "db.fifo")):    # a FASTA file, a pipe
        hmmer_merge.save_results(tmp_path / "b.gshits", res, hmmfile="m.hmm", seqfile=seqfile,
                                 options=SearchOptions())
        assert parts(tmp_path / "b.gshits")[0]["database"] == {
            "name": os.path.basename(seqfile), "total_seqs": 300, "total_residues": 109732, "shard": None,
            "first_index": 0, "n_seqs": 300, "n_residues": 109732}


def test_no_pickle_in_the_library():
    """Nothing that reads or writes result files, or outputs, unpickles."""
    import re

    for name in ("gpu_search/output.py", "gpu_search/hmmer/merge.py", "gpu_search/blast/merge.py"):
        assert not re.search(r"import pickle|pickle\.|Unpickler|marshal", (ROOT / name).read_text()), name


# --- a pickle, a damaged file, a crafted file ---------------------------------------------------


@pytest.mark.parametrize("kind", ["gshits", "gsblast"])
def test_a_pickle_behind_the_header_runs_nothing(kind, shards, tmp_path):
    """A pickle that runs a command, behind each header this gpu-search and the one before wrote,
    or as the data of a well-formed file: one line, exit 5, the command never run, no output."""
    magic = hmmer_merge.KIND if kind == "gshits" else blast_merge.KIND
    marker = tmp_path / "ran"
    payload = pickle.dumps(Runs(marker))
    header, _ = parts(shards["files"][0])
    header["hmms"] = [0, len(payload)]
    now, before = bytes([RESULTS_VERSION]), bytes([RESULTS_VERSION - 1])
    crafted = [magic + now + payload, magic + before + payload, magic + b"\x01" + payload,
               magic + now + payload + bytes(64)]
    if kind == "gshits":
        crafted.append(container(magic, header, payload))
    for i, blob in enumerate(crafted):
        bad = tmp_path / f"bad{i}.{kind}"
        bad.write_bytes(blob)
        out = tmp_path / "out.txt"
        tables = ["--tblout", tmp_path / "t.tbl"] if kind == "gshits" else []     # (hmmsearch's)
        code, err = cli("merge", bad, "-o", out, *tables)
        assert code == 5 and one_line(err), (i, err)
        assert not marker.exists() and not out.exists() and not (tmp_path / "t.tbl").exists()
        assert sorted(os.listdir(tmp_path)) == sorted(f"bad{j}.{kind}" for j in range(i + 1))


def test_a_flipped_byte_or_a_cut_file_is_refused(shards, tmp_path):
    raw = shards["files"][0].read_bytes()
    for pos in (9, 20, len(raw) // 2, len(raw) - 40, len(raw) - 1):
        bad = tmp_path / "flipped.gshits"
        bad.write_bytes(raw[:pos] + bytes([raw[pos] ^ 0x10]) + raw[pos + 1:])
        with pytest.raises(FormatError, match="checksum|corrupt"):
            hmmer_merge.load_results(bad)
    for size in (0, 5, 8, 15, 40, len(raw) // 2, len(raw) - 1):
        bad = tmp_path / "cut.gshits"
        bad.write_bytes(raw[:size])
        with pytest.raises(FormatError, match="truncated|not a .gshits"):
            hmmer_merge.load_results(bad)
    bad.write_bytes(raw + b"\x00")
    with pytest.raises(FormatError, match="checksum"):
        hmmer_merge.load_results(bad)


def _hit_edit(offset: int, fmt: str, value):
    """An edit of the first hit of the first model with hits, at ``offset`` in its bytes."""
    def edit(header, data):
        model = next(m for m in header["models"] if m["tophits"]["N"] > 0)
        data = bytearray(data)
        struct.pack_into(fmt, data, model["hits"][0] + offset, value)
        return header, bytes(data)
    return edit


def _first_alignment(header, data) -> int:
    """Where the first domain's alignment of the first hit starts in ``data``."""
    model = next(m for m in header["models"] if m["tophits"]["N"] > 0)
    start = model["hits"][0]
    size = struct.unpack_from(">I", data, start)[0]
    dom_size = struct.unpack_from(">I", data, start + size)[0]
    return start + size + dom_size


def _ali_edit(offset: int, fmt: str, value):
    def edit(header, data):
        data = bytearray(data)
        struct.pack_into(fmt, data, _first_alignment(header, data) + offset, value)
        return header, bytes(data)
    return edit


def _unterminated_name(header, data):
    """The first hit's name runs on into the next field (its NUL replaced)."""
    start = _first_with_hits(header)["hits"][0]
    nul = data.index(b"\x00", start + 109)
    return header, data[:nul] + b"A" + data[nul + 1:]


def _header_edit(change):
    def edit(header, data):
        change(header)
        return header, data
    return edit


def _first_with_hits(header):
    return next(m for m in header["models"] if m["tophits"]["N"] > 0)


CRAFTED_GSHITS = {
    "extra field": _header_edit(lambda h: h.update(extra=1)),
    "missing field": _header_edit(lambda h: h.pop("options")),
    "extra model field": _header_edit(lambda h: h["models"][0].update(code="x")),
    "string for a number": _header_edit(lambda h: _first_with_hits(h)["tophits"].update(N="1")),
    "absurd number of hits": _header_edit(lambda h: _first_with_hits(h)["tophits"].update(N=1 << 40)),
    "more hits than stored": _header_edit(lambda h: _first_with_hits(h)["tophits"].update(
        N=_first_with_hits(h)["tophits"]["N"] + 1)),
    "part out of the data": _header_edit(lambda h: _first_with_hits(h).update(hits=[0, 1 << 50])),
    "negative counter": _header_edit(lambda h: h["models"][0]["stats"].update(nseqs=-1)),
    "bad option": _header_edit(lambda h: h["options"].update(E=-1.0)),
    "unknown cutoff": _header_edit(lambda h: h["options"].update(bit_cutoffs="os.system")),
    "shard past its set": _header_edit(lambda h: h["database"].update(shard=[4, 3])),
    "other pipeline mode": _header_edit(lambda h: h["models"][0]["tophits"]["pipeline"].update(mode=1)),
    "hit size": _hit_edit(0, ">I", 1 << 30),
    "number of domains": _hit_edit(72, ">i", 1 << 30),
    "no domain": _hit_edit(72, ">i", 0),
    "best domain past the last": _hit_edit(88, ">i", 1 << 20),
    "negative best domain": _hit_edit(88, ">i", -1),
    "unknown string flags": _hit_edit(108, ">B", 0xFC),
    "name without its end": lambda header, data: _unterminated_name(header, data),
    "alignment length": _ali_edit(4, ">i", 1 << 30),
    "negative alignment length": _ali_edit(4, ">i", -5),
    "model length": _ali_edit(16, ">i", 99999),
    "alignment size": _ali_edit(0, ">I", 7),
    "translated alignment": _ali_edit(44, ">B", 16 | 32),
}


@pytest.mark.parametrize("case", CRAFTED_GSHITS)
def test_a_crafted_gshits_file_is_refused(case, shards, tmp_path):
    """Fields HMMER's C code would trust, out of range in a file with a valid checksum: refused
    before anything is built from them."""
    header, data = parts(shards["files"][0])
    header, data = CRAFTED_GSHITS[case](header, data)
    bad = tmp_path / "bad.gshits"
    bad.write_bytes(container(hmmer_merge.KIND, header, data))
    with pytest.raises(FormatError, match="corrupt .gshits file"):
        hmmer_merge.load_results(bad)


def test_a_crafted_file_through_the_command_line(shards, tmp_path):
    header, data = parts(shards["files"][0])
    header, data = CRAFTED_GSHITS["number of domains"](header, data)
    bad = tmp_path / "bad.gshits"
    bad.write_bytes(container(hmmer_merge.KIND, header, data))
    code, err = cli("merge", bad, *shards["files"][1:], "-o", tmp_path / "out.txt", "--tblout", tmp_path / "t")
    assert code == 5 and one_line(err) and "number of domains" in err, err
    assert sorted(os.listdir(tmp_path)) == ["bad.gshits"]


def test_the_unchanged_file_rebuilt_by_hand_still_reads(shards, tmp_path):
    """(The crafted files above differ from a readable one only by their edit.)"""
    header, data = parts(shards["files"][0])
    ok = tmp_path / "ok.gshits"
    ok.write_bytes(container(hmmer_merge.KIND, header, data))
    assert len(hmmer_merge.load_results(ok)["results"]) == 4


# --- shards that are not one search of one database --------------------------------------------


def test_mismatched_shards_are_refused(shards, tmp_path):
    files = shards["files"]
    other_e = search_shard(shards, 1, "e100.gshits", SearchOptions(E=100.0))
    with pytest.raises(OptionError, match=r"different options \(E: 10.0 and 100.0\)"):
        hmmer_merge.read_shards([files[0], other_e, files[2]])
    other_hmm = search_shard(shards, 1, "two-models.gshits", hmms=shards["hmms"][:2])
    with pytest.raises(OptionError, match="different numbers of models"):
        hmmer_merge.read_shards([files[0], other_hmm, files[2]])
    reordered = search_shard(shards, 1, "reordered.gshits", hmms=shards["hmms"][::-1])
    with pytest.raises(OptionError, match="different models"):
        hmmer_merge.read_shards([files[0], reordered, files[2]])
    halves = seqdb.makedb(TEST_DATA / "proteome.faa", tmp_path / "halves.gsdb", shards=2)
    other_db = search_shard(shards, 1, "halves2.gshits", gsdb=halves[1])
    with pytest.raises(OptionError, match="shards of different databases"):
        hmmer_merge.read_shards([files[0], other_db])
    whole = search_shard(shards, 1, "whole.gshits", gsdb=TEST_DATA / "proteome.faa")
    with pytest.raises(OptionError, match="those of a whole database"):
        hmmer_merge.read_shards([files[0], whole])
    header, data = parts(files[1])
    newer = tmp_path / "newer.gshits"
    newer.write_bytes(container(hmmer_merge.KIND, header, data, version=RESULTS_VERSION + 1))
    with pytest.raises(FormatError, match=f"format version {RESULTS_VERSION + 1}"):
        hmmer_merge.read_shards([files[0], newer, files[2]])
    code, err = cli("merge", files[0], other_e, files[2], "-o", tmp_path / "out.txt")
    assert code == 2 and one_line(err) and not (tmp_path / "out.txt").exists(), err


def test_the_same_shard_twice_is_refused(shards, tmp_path):
    files = shards["files"]
    with pytest.raises(OptionError, match="the same results given twice"):
        hmmer_merge.read_shards([files[0], files[1], files[0]])
    copy = tmp_path / "copy.gshits"
    shutil.copy(files[1], copy)
    with pytest.raises(OptionError, match="the same results given twice"):
        hmmer_merge.read_shards([files[0], files[1], copy, files[2]])
    # shard 2 searched again (another job, other report options): not the same bytes, the same shard
    again = search_shard(shards, 1, "again.gshits", SearchOptions(noali=True))
    with pytest.raises(OptionError, match="both the results of shard 2 of 3"):
        hmmer_merge.read_shards([*files, again])
    code, err = cli("merge", *files, again, "--tblout", tmp_path / "t.tbl")
    assert code == 2 and one_line(err) and not (tmp_path / "t.tbl").exists(), err
    # two pieces of one plain database: refused too
    whole = search_shard(shards, 1, "whole1.gshits", gsdb=TEST_DATA / "proteome.faa")
    whole2 = search_shard(shards, 1, "whole2.gshits", SearchOptions(acc=True), gsdb=TEST_DATA / "proteome.faa")
    with pytest.raises(OptionError, match="both results of proteome.faa"):
        hmmer_merge.read_shards([whole, whole2])


def test_overlapping_shards_are_refused(shards, tmp_path):
    """Shards 1 and 2 of 3 whose sequences overlap (a file edited, or shards of sets cut
    differently with the same sizes): refused, naming the ranges."""
    header, data = parts(shards["files"][1])
    first = parts(shards["files"][0])[0]["database"]
    header["database"]["first_index"] = first["n_seqs"] - 1        # its first sequence is shard 1's last
    moved = tmp_path / "moved.gshits"
    moved.write_bytes(container(hmmer_merge.KIND, header, data))
    with pytest.raises(OptionError, match=f"overlapping sequences \\(1-{first['n_seqs']} and "
                                          f"{first['n_seqs']}-"):
        hmmer_merge.read_shards([shards["files"][0], moved, shards["files"][2]])


# --- phmmer's shards ----------------------------------------------------------------------------


def _queries(tmp_path_factory):
    """Three of the proteome's sequences (homologs in every shard) and one described by hand, as
    phmmer's queries."""
    text = (TEST_DATA / "proteome.faa").read_text()
    records = [">" + r for r in text.split(">")[1:]]
    path = tmp_path_factory.mktemp("phmmer-q") / "queries.faa"
    header, _, body = records[5].partition("\n")
    path.write_text("".join(records[:3]) + f"{header.split()[0]} a description\n{body}")
    return path


@pytest.fixture(scope="module")
def phmmer_shards(shards, tmp_path_factory):
    from gpu_search.hmmer.options import PhmmerOptions
    from gpu_search.hmmer.phmmer import build_models, phmmer, read_queries

    queries = read_queries(_queries(tmp_path_factory))
    options = PhmmerOptions(E=100.0)
    hmms = build_models(queries, options)
    files = []
    for p in shards["gsdb"]:
        db = seqdb.open_database(p)
        # each shard's models built again, as each job builds its own
        res = list(phmmer(queries, db, options, device="cpu", cpus=2))
        f = shards["dir"] / f"{p.stem}.phmmer.gshits"
        hmmer_merge.save_results(f, res, hmmfile="queries.faa", seqfile=str(p), options=options, database=db)
        files.append(f)
    return {"files": files, "queries": queries, "options": options, "hmms": hmms}


def phmmer_outputs(results) -> dict[str, str]:
    """As outputs(), with phmmer's report: each query's "Query: NAME [L=n]" lines, -A's author."""
    out = {}
    for fmt in ("targets", "domains", "pfam"):
        buf = io.BytesIO()
        for i, r in enumerate(results):
            r.hits.write(buf, format=fmt, header=i == 0)
        out[fmt] = buf.getvalue().decode()
    text, alignment = io.StringIO(), io.StringIO()
    for r in results:
        report.write_query(text, r, SearchOptions(), report.Timing(user=0.0, sys=0.0, elapsed=0.0))
        report.write_alignment(alignment, text, r, SearchOptions(), "ali.sto", program=report.PHMMER)
    out["report"] = text.getvalue()
    out["alignment"] = alignment.getvalue()
    return out


def test_merged_phmmer_shards_equal_one_phmmer_search(phmmer_shards, shards):
    """phmmer's shards in any order merge into every output of one phmmer search of the whole
    database (the query sequences too: names, lengths, descriptions)."""
    from gpu_search.hmmer.phmmer import phmmer

    whole = list(phmmer(phmmer_shards["queries"], seqdb.open_database(TEST_DATA / "proteome.faa"),
                        phmmer_shards["options"], device="cpu", cpus=2))
    files = list(phmmer_shards["files"])
    random.Random(5).shuffle(files)
    merged, meta = hmmer_merge.read_shards(files)
    assert meta["program"] == "phmmer" and meta["options"].mx == "BLOSUM62"
    assert [r.query for r in merged] == [r.query for r in whole]
    assert merged[3].query.description == "a description"
    expected = phmmer_outputs(whole)
    assert phmmer_outputs(merged) == expected
    assert expected["report"].count("Query:       ") == 4 and "Description: a description" in expected["report"]
    assert expected["alignment"].count("# STOCKHOLM 1.0") >= 3
    # the test can fail: one shard alone is not the whole database
    alone, _ = hmmer_merge.read_shards(files[:1])
    assert phmmer_outputs(alone)["targets"] != expected["targets"]


def test_a_phmmer_file_says_what_was_searched(phmmer_shards):
    header, _ = parts(phmmer_shards["files"][0])
    assert header["program"] == "phmmer"
    assert (header["options"]["mx"], header["options"]["popen"], header["options"]["pextend"]) == \
        ("BLOSUM62", 0.02, 0.4)
    q = phmmer_shards["queries"]
    assert [m["query"] for m in header["models"]] == [
        {"name": q.name(i), "length": int(q.lengths[i]), "accession": "", "description": q.description(i)}
        for i in range(q.n_seqs)]


def test_hmmsearch_files_keep_their_fields(shards):
    """phmmer's fields are phmmer's files' only: an hmmsearch .gshits has the fields (and format
    version) it had, so the files earlier versions wrote still merge."""
    raw = Path(shards["files"][0]).read_bytes()
    header, _ = parts(shards["files"][0])
    assert raw[7] == 5
    assert sorted(header) == sorted(["program", "hmmfile", "seqfile", "database", "options", "hmms", "models"])
    assert all(sorted(m) == ["hits", "order", "stats", "tophits"] for m in header["models"])
    assert not {"popen", "pextend", "mx"} & set(header["options"])


def test_phmmer_and_hmmsearch_shards_do_not_merge(phmmer_shards, shards, tmp_path):
    with pytest.raises(OptionError, match="phmmer's results, .* hmmsearch's: merge the shards of one search"):
        hmmer_merge.read_shards([phmmer_shards["files"][0], *shards["files"][1:]])
    code, err = cli("merge", shards["files"][0], *phmmer_shards["files"][1:], "-o", tmp_path / "o.txt",
                    "--tblout", tmp_path / "t.tbl")
    assert code == 2 and one_line(err) and "hmmsearch's results" in err, err
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("change, name", [({"mx": "BLOSUM45"}, "mx"), ({"popen": 0.03}, "popen"),
                                          ({"pextend": 0.5}, "pextend"), ({"E": 10.0}, "E")])
def test_phmmer_shards_of_other_scoring_are_refused(change, name, phmmer_shards, shards, tmp_path):
    from gpu_search.hmmer.options import PhmmerOptions
    from gpu_search.hmmer.phmmer import phmmer

    options = PhmmerOptions(**{"E": 100.0, **change})
    db = seqdb.open_database(shards["gsdb"][1])
    res = list(phmmer(phmmer_shards["queries"], db, options, device="cpu", cpus=2))
    other = tmp_path / "other.gshits"
    hmmer_merge.save_results(other, res, hmmfile="queries.faa", seqfile=str(shards["gsdb"][1]), options=options,
                             database=db)
    files = phmmer_shards["files"]
    with pytest.raises(OptionError, match=rf"different options \({name}: "):
        hmmer_merge.read_shards([files[0], other, files[2]])


def test_phmmer_shards_of_other_queries_are_refused(phmmer_shards, shards, tmp_path):
    """The same sequence described otherwise: the same model, not the same report."""
    header, data = parts(phmmer_shards["files"][1])
    header["models"][0]["query"]["description"] = "another description"
    other = tmp_path / "other.gshits"
    other.write_bytes(container(hmmer_merge.KIND, header, data))
    files = phmmer_shards["files"]
    with pytest.raises(OptionError, match="different query sequences"):
        hmmer_merge.read_shards([files[0], other, files[2]])


def _query_edit(change):
    def edit(header, data):
        change(header["models"][0]["query"])
        return header, data
    return edit


CRAFTED_PHMMER = {
    "missing query": _header_edit(lambda h: h["models"][0].pop("query")),
    "query not a record": _header_edit(lambda h: h["models"][0].update(query=["x", 3])),
    "extra query field": _query_edit(lambda q: q.update(code="x")),
    "missing query field": _query_edit(lambda q: q.pop("accession")),
    "length as a string": _query_edit(lambda q: q.update(length="222")),
    "length not the model's": _query_edit(lambda q: q.update(length=q["length"] + 1)),
    "zero length": _query_edit(lambda q: q.update(length=0)),
    "absurd length": _query_edit(lambda q: q.update(length=1 << 40)),
    "name not the model's": _query_edit(lambda q: q.update(name="other")),
    "name as a number": _query_edit(lambda q: q.update(name=3)),
    "description of two lines": _query_edit(lambda q: q.update(description="a\nQuery: forged")),
    "accession with a NUL": _query_edit(lambda q: q.update(accession="A\x00")),
    "unknown matrix": _header_edit(lambda h: h["options"].update(mx="../../etc/passwd")),
    "matrix as a number": _header_edit(lambda h: h["options"].update(mx=62)),
    "gap open out of range": _header_edit(lambda h: h["options"].update(popen=0.5)),
    "gap extend as a string": _header_edit(lambda h: h["options"].update(pextend="0.4")),
    "no scoring options": _header_edit(lambda h: [h["options"].pop(k) for k in ("mx", "popen", "pextend")]),
    "hmmsearch's with a query": _header_edit(lambda h: h.update(program="hmmsearch")),
    "other program": _header_edit(lambda h: h.update(program="jackhmmer")),
}


@pytest.mark.parametrize("case", CRAFTED_PHMMER)
def test_a_crafted_phmmer_gshits_file_is_refused(case, phmmer_shards, tmp_path):
    header, data = parts(phmmer_shards["files"][0])
    header, data = CRAFTED_PHMMER[case](header, data)
    bad = tmp_path / "bad.gshits"
    bad.write_bytes(container(hmmer_merge.KIND, header, data))
    with pytest.raises(FormatError, match="corrupt .gshits file"):
        hmmer_merge.load_results(bad)
    code, err = cli("merge", bad, *phmmer_shards["files"][1:], "-o", tmp_path / "o.txt")
    assert code == 5 and one_line(err), err
    assert sorted(os.listdir(tmp_path)) == ["bad.gshits"]


def test_the_unchanged_phmmer_file_rebuilt_by_hand_still_reads(phmmer_shards, tmp_path):
    header, data = parts(phmmer_shards["files"][0])
    ok = tmp_path / "ok.gshits"
    ok.write_bytes(container(hmmer_merge.KIND, header, data))
    assert [q.name for _, _, q in hmmer_merge.load_results(ok)["results"]] == \
        [phmmer_shards["queries"].name(i) for i in range(4)]


# --- blastp's files ----------------------------------------------------------------------------


def _row(oid: int, evalue: float, score: int, query="q1"):
    from gpu_search.blast.output import Hsp

    return Hsp(query_id=query, query_title=f"{query} a query", query_length=50, subject_id=f"s{oid}",
               subject_title=f"s{oid} a subject", subject_length=60, score=score, bit_score=score * 0.4,
               evalue=evalue, q_start=1, q_end=4, s_start=2, s_end=5, qseq="MKV-", sseq="MKIL", nident=2,
               positive=3, gaps=1, gapopen=1, oid=oid)


class _Shard:
    """A stand-in for seqdb.SequenceDB: what a result file records of it."""

    def __init__(self, k, n, first, count, name="db.shard1of2.gsdb"):
        self.source, self.shard, self.first_index, self.n_seqs = name, (k, n), first, count
        self.total_seqs, self.total_residues, self.n_residues = 20, 1000, 50 * count


def _blast_file(path, subjects, *, database, queries=("q1",), evalue=10.0):
    from gpu_search.blast.hitlist import SubjectResult, list_order_key
    from gpu_search.blast.options import BlastOptions

    per_query = []
    for q in queries:
        results = [SubjectResult(oid, list_order_key(e, s, oid), list_order_key(e, s, oid), [_row(oid, e, s, q)])
                   for oid, e, s in subjects]
        per_query.append((f"{q} a query", 100, results))
    blast_merge.save_hits(path, per_query, options=BlastOptions(evalue=evalue, max_target_seqs=3),
                          db_name="db.gsdb", database=database)
    return path


def test_blast_shards_merge_and_mismatches(tmp_path):
    a = _blast_file(tmp_path / "a.gsblast", [(1, 1e-30, 90), (3, 1e-5, 40)], database=_Shard(1, 2, 0, 10))
    b = _blast_file(tmp_path / "b.gsblast", [(12, 1e-40, 99), (15, 2.0, 20)],
                    database=_Shard(2, 2, 10, 10, "db.shard2of2.gsdb"))
    out = io.StringIO()
    blast_merge.merge_files([b, a], out, fmt=6, columns=["saccver", "evalue"])
    # BLAST's order (best E-value first), cut to -max_target_seqs 3; E-values as BLAST prints them
    assert out.getvalue() == "s12\t1.00e-40\ns1\t1.00e-30\ns3\t1.00e-05\n"
    cases = {
        "the same results given twice": [a, a],
        "both the results of shard 2 of 2": [a, b, _blast_file(tmp_path / "b2.gsblast", [(12, 1e-40, 99)],
                                                               database=_Shard(2, 2, 10, 10))],
        "overlapping sequences": [a, _blast_file(tmp_path / "o.gsblast", [(9, 1e-3, 30)],
                                                 database=_Shard(2, 2, 9, 11))],
        "shards of different databases": [a, _blast_file(tmp_path / "d.gsblast", [(12, 1e-40, 99)],
                                                         database=_Shard(2, 3, 10, 10))],
        "different queries": [a, _blast_file(tmp_path / "q.gsblast", [(12, 1e-40, 99)], queries=("q2",),
                                             database=_Shard(2, 2, 10, 10))],
        r"different options \(-evalue": [a, _blast_file(tmp_path / "e.gsblast", [(12, 1e-40, 99)], evalue=1.0,
                                                        database=_Shard(2, 2, 10, 10))],
        "both hold database sequence 4": [  # files that do not say their database: their subjects
            _blast_file(tmp_path / "n1.gsblast", [(3, 1e-5, 40)], database=None),
            _blast_file(tmp_path / "n2.gsblast", [(3, 1e-5, 40), (5, 1.0, 22)], database=None)],
    }
    for message, files in cases.items():
        with pytest.raises(OptionError, match=message):
            blast_merge.merge_files(files, io.StringIO(), fmt=6, columns=["saccver"])
    # hmmsearch's outputs asked of blastp shards: one line, exit 2, nothing written
    for flag in ("-A", "--tblout"):
        code, err = cli("merge", a, b, "-o", tmp_path / "rows.tsv", flag, tmp_path / "x")
        assert code == 2 and one_line(err) and f"{flag} is an output of hmmsearch" in err, err
        assert not (tmp_path / "rows.tsv").exists() and not (tmp_path / "x").exists()


def _blast_edit(change):
    def edit(header):
        change(header)
        return header
    return edit


def _first_row(h):
    return h["queries"][0]["subjects"][0]["rows"][0]


CRAFTED_GSBLAST = {
    "extra field": _blast_edit(lambda h: h.update(extra=[])),
    "missing option": _blast_edit(lambda h: h["options"].pop("matrix")),
    "extra subject field": _blast_edit(lambda h: h["queries"][0]["subjects"][0].update(rows2=[])),
    "short row": _blast_edit(lambda h: _first_row(h).pop()),
    "string for a number": _blast_edit(lambda h: _first_row(h).__setitem__(8, "1e-5")),
    "negative coordinate": _blast_edit(lambda h: _first_row(h).__setitem__(9, -3)),
    "line break in a title": _blast_edit(lambda h: _first_row(h).__setitem__(4, "s1\nq1\tforged")),
    "alignment strings of two lengths": _blast_edit(lambda h: _first_row(h).__setitem__(14, "MK")),
    "another subject's row": _blast_edit(lambda h: _first_row(h).__setitem__(19, 2)),
    "key of another subject": _blast_edit(lambda h: h["queries"][0]["subjects"][0].update(
        final_key=[1e-30, -90, -7])),
    "bad option": _blast_edit(lambda h: h["options"].update(max_target_seqs=0)),
    "a boolean for a number": _blast_edit(lambda h: h["options"].update(word_size=True)),
}


@pytest.mark.parametrize("case", CRAFTED_GSBLAST)
def test_a_crafted_gsblast_file_is_refused(case, tmp_path):
    good = _blast_file(tmp_path / "a.gsblast", [(1, 1e-30, 90)], database=_Shard(1, 2, 0, 10))
    header, data = parts(good)
    assert blast_merge.load_hits(good)["queries"][0][2][0].rows[0] == _row(1, 1e-30, 90)
    bad = tmp_path / "bad.gsblast"
    bad.write_bytes(container(blast_merge.KIND, CRAFTED_GSBLAST[case](header), data))
    with pytest.raises(FormatError, match="corrupt .gsblast file"):
        blast_merge.load_hits(bad)


# --- outputs through symbolic links -------------------------------------------------------------


def test_outputs_through_a_link_go_to_its_target(tmp_path):
    from gpu_search.output import OutputSet, atomic_path

    results, links = tmp_path / "results", tmp_path / "links"
    results.mkdir()
    links.mkdir()
    (results / "t.tbl").write_text("old\n")
    (links / "t.tbl").symlink_to(results / "t.tbl")
    (links / "o.txt").symlink_to(results / "o.txt")          # dangling: its target is made
    with atomic_path(links / "t.tbl") as tmp:
        assert Path(tmp).parent == results
        Path(tmp).write_text("new\n")
    with OutputSet() as outs:
        outs.open(links / "o.txt").write("report\n")
        outs.commit()
    assert (links / "t.tbl").is_symlink() and (links / "o.txt").is_symlink()
    assert (results / "t.tbl").read_text() == "new\n" and (results / "o.txt").read_text() == "report\n"
    assert sorted(os.listdir(results)) == ["o.txt", "t.tbl"] and sorted(os.listdir(links)) == ["o.txt", "t.tbl"]


def test_merge_through_links(shards, tmp_path):
    """The command line: -o and --tblout through links; a link into a folder that does not exist
    is refused before any work, one line, exit 10."""
    (tmp_path / "out").mkdir()
    (tmp_path / "o.txt").symlink_to(tmp_path / "out" / "merged.txt")
    (tmp_path / "t.tbl").symlink_to(tmp_path / "out" / "merged.tbl")
    code, err = cli("merge", *shards["files"], "-o", tmp_path / "o.txt", "--tblout", tmp_path / "t.tbl")
    assert code == 0, err
    assert (tmp_path / "o.txt").is_symlink() and (tmp_path / "t.tbl").is_symlink()
    assert "2-Hacid_dh_C" in (tmp_path / "out" / "merged.tbl").read_text()
    assert (tmp_path / "out" / "merged.txt").read_text().rstrip().endswith("[ok]")
    (tmp_path / "nowhere.tbl").symlink_to(tmp_path / "missing" / "t.tbl")
    code, err = cli("merge", *shards["files"], "--tblout", tmp_path / "nowhere.tbl")
    assert code == 10 and one_line(err) and "does not exist" in err, err
