"""Shared fixtures: the real data shipped in pyhmmer's wheel and in test-data/."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = ROOT / "test-data"


def pyhmmer_data() -> Path:
    import pyhmmer

    return Path(pyhmmer.__file__).parent / "tests" / "data"


PROTEIN_MODELS = ["Thioesterase", "PF02826", "LuxC", "KR", "RREFam"]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return pyhmmer_data()


@pytest.fixture(scope="session")
def proteome_path(data_dir) -> Path:
    return data_dir / "seqs" / "938293.PRJEB85.HG003687.faa"


@pytest.fixture(scope="session")
def proteome(proteome_path):
    from gpu_search.seqdb import open_database

    return open_database(proteome_path)


@pytest.fixture(scope="session")
def filters_oracle():
    """HMMER's own filters (tests/helpers/oracle/filters_oracle.c built against pyhmmer's libhmmer)."""
    from oracle.build import build, missing

    try:
        exe = build("filters_oracle")
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build tests/helpers/oracle/filters_oracle.c ({exc.cmd[0]} exited {exc.returncode}): "
                    f"{exc.stderr.decode(errors='replace')[-1000:]}")
    if exe is None:
        pytest.skip(f"cannot build the HMMER oracle: {missing()}")
    return exe


def run_filters_oracle(exe, hmm_path, fasta_path):
    """Per (model, sequence): HMMER's msv, null, bias-filter and Viterbi-filter scores (float32)."""
    out = subprocess.run([str(exe), str(hmm_path), str(fasta_path)], capture_output=True,
                         text=True, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    by_model = {}
    for r in rows:
        by_model.setdefault(r[0], []).append(r)
    result = {}
    for model, rs in by_model.items():
        cols = {name: np.array([float.fromhex(r[i]) for r in rs], dtype=np.float32)
                for name, i in (("msv", 3), ("null", 4), ("bias", 5), ("vit", 6), ("fwd", 7))}
        cols["names"] = [r[1] for r in rs]
        cols["L"] = np.array([int(r[2]) for r in rs])
        result[model] = cols
    return result


X_CELLS = 6            # HMMER's special-state row (P7_OMX's xmx): E N J B C SCALE


def run_fwdback_oracle(exe, hmm_path, fasta_path) -> dict:
    """Per model, per sequence: HMMER's Forward and Backward scores and rows, the Backward's
    has_own_scales, p7_DomainDecoding's (mocc, btot, etot) rows and P7_DOMAINDEF's nexpected,
    nregions and nclustered (tests/helpers/oracle/fwdback_oracle.c), as a dict of those names."""
    out = subprocess.run([str(exe), str(hmm_path), str(fasta_path)], capture_output=True, text=True,
                         check=True).stdout

    def floats(hexes, width):
        return np.frombuffer(bytes.fromhex(hexes), dtype=">u4").astype(np.uint32).view(np.float32).reshape(-1, width)

    result = {}
    for line in out.splitlines():
        model, _, L, fsc, bsc, frows, brows, own, post, nexp, nreg, nclu = line.split("\t")
        result.setdefault(model, []).append(dict(
            fwd=np.float32(float.fromhex(fsc)), bck=np.float32(float.fromhex(bsc)), fwd_rows=floats(frows, X_CELLS),
            bck_rows=floats(brows, X_CELLS), own=int(own), post=floats(post, 3),
            nexpected=np.float32(float.fromhex(nexp)), nregions=int(nreg), nclustered=int(nclu)))
    return result


def run_segment_oracle(exe, hmm_path, fasta_path, segments, mode: str, tmp_path) -> dict:
    """HMMER's p7_Forward and p7_Backward over each sequence's segment (fwdback_oracle.c's
    segment mode): per model, per sequence, a dict: fwd, bck (scores), fwd_rows, bck_rows
    ((Lr+1, X_CELLS)), fwd_mx ((Lr+1, Q, 3, 4): P7_OMX's dpf rows 0..Lr), bck_mx (rows 1..Lr);
    p7_Decoding's posteriors pp_rows, pp_mx (rows 0..Lr), and range (its eslERANGE);
    p7_OptimalAccuracy's oa_rows, oa_mx (rows 0..Lr) and oasc; p7_OATrace's trace ((n, 4): state,
    node, residue, the posterior's float bits); p7_Null2_ByExpectation's odds null2 (Kp), the logf
    of each residue's n2sc (Lr) and their float sum domcorrection."""
    seg_file = tmp_path / "segments.txt"
    seg_file.write_text("".join(f"{a} {b}\n" for a, b in segments))
    out = subprocess.run([str(exe), str(hmm_path), str(fasta_path), str(seg_file), mode], capture_output=True,
                         text=True, check=True).stdout

    def floats(hexes):
        return np.frombuffer(bytes.fromhex(hexes), dtype=">u4").astype(np.uint32).view(np.float32)

    result = {}
    for line in out.splitlines():
        (model, _, Lr, fsc, bsc, frows, brows, fmx, bmx, prows, pmx, range_error, orows, omx, oasc, trace, null2,
         n2sc, domcorrection) = line.split("\t")
        steps = [step.split(",") for step in trace.split(";") if step]
        result.setdefault(model, []).append(dict(
            fwd=np.float32(float.fromhex(fsc)), bck=np.float32(float.fromhex(bsc)),
            fwd_rows=floats(frows).reshape(-1, X_CELLS), bck_rows=floats(brows).reshape(-1, X_CELLS),
            fwd_mx=floats(fmx).reshape(int(Lr) + 1, -1, 3, 4), bck_mx=floats(bmx).reshape(int(Lr), -1, 3, 4),
            pp_rows=floats(prows).reshape(-1, X_CELLS), pp_mx=floats(pmx).reshape(int(Lr) + 1, -1, 3, 4),
            range=int(range_error), oa_rows=floats(orows).reshape(-1, X_CELLS),
            oa_mx=floats(omx).reshape(int(Lr) + 1, -1, 3, 4), oasc=np.float32(float.fromhex(oasc)),
            trace=np.array([(int(a), int(b), int(c), int(d, 16)) for a, b, c, d in steps], dtype=np.int64),
            null2=floats(null2), n2sc=floats(n2sc), domcorrection=np.float32(float.fromhex(domcorrection))))
    return result


@pytest.fixture(scope="session")
def fwdback_oracle():
    """HMMER's own Forward and Backward parsers (tests/helpers/oracle/fwdback_oracle.c)."""
    from oracle.build import build, missing

    try:
        exe = build("fwdback_oracle")
    except subprocess.CalledProcessError as exc:
        pytest.skip("cannot build tests/helpers/oracle/fwdback_oracle.c: "
                    f"{exc.stderr.decode(errors='replace')[-1000:]}")
    if exe is None:
        pytest.skip(f"cannot build the HMMER oracle: {missing()}")
    return exe


def profile_of(hmm):
    """HMMER's filter profile of a model (local, L = 100, as hmmsearch configures it)."""
    from pyhmmer.plan7 import Background, Profile

    from gpu_search.hmmer.profile import FilterProfile

    gm = Profile(hmm.M, hmm.alphabet)
    gm.configure(hmm, Background(hmm.alphabet), 100)
    return FilterProfile.from_optimized(gm.to_optimized())


def assert_filter_equal(label: str, got, ref) -> None:
    """A filter's (scores, overflow flags) per sequence equal to the reference's: the flags
    everywhere, the scores (MSV's xJ, the Viterbi filter's xC) where it did not overflow."""
    (g, g_over), (r, r_over) = got, ref
    assert np.array_equal(g_over, r_over), f"{label}: overflow flags differ at {np.flatnonzero(g_over != r_over)[:5]}"
    bad = np.flatnonzero(~r_over & (g != r))
    assert len(bad) == 0, f"{label}: scores differ for {len(bad)} sequences: {g[bad[:5]]} vs {r[bad[:5]]}"


def records(results) -> list[list[bytes]]:
    """Each result's reported hits as HMMER serializes them (p7_hit_Serialize: every score,
    domain and alignment display), in the hits' sorted order, the fields HMMER leaves unset
    masked.  (Which hits are kept and not reported may differ between searches of the same
    hits: HMMER's running Z; no output shows them.)"""
    from domaindef_check import masked

    out = []
    for r in results:
        state = r.hits.__getstate__()
        kept = [bytes(state["unsrt"][j]) for j in state["hit"]]
        out.append([masked(b) for b in kept if int.from_bytes(b[76:80], "big") & 2])     # p7_IS_REPORTED
    return out


def tables(results) -> list[str]:
    """tblout, domtblout and pfamtblout rows of search results (no headers)."""
    import io

    out = []
    for r in results:
        for fmt in ("targets", "domains", "pfam"):
            buf = io.BytesIO()
            r.hits.write(buf, format=fmt, header=False)
            out.append(buf.getvalue().decode())
    return out


def counters(results) -> list[tuple]:
    """HMMER's pipeline statistics of search results."""
    return [(r.stats.nseqs, r.stats.nres, r.stats.n_past_msv, r.stats.n_past_bias, r.stats.n_past_vit,
             r.stats.n_past_fwd, r.stats.Z, r.stats.domZ) for r in results]
