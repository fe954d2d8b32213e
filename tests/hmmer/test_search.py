"""The staged pipeline: the reference filter stage + pyhmmer gives pyhmmer's own results.

The CPU path (pyhmmer's whole pipeline) is HMMER 3.4; the reference path
runs MSV/bias/Viterbi in gpu_search and lets pyhmmer finish the survivors
with Z fixed to the whole database.  Their tables and pipeline counters must
be identical, including with --F3 1 and --F2 1 --F3 1 (every filter survivor
in the output).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_search import seqdb
from gpu_search.hmmer import merge, search
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.options import SearchOptions
from conftest import TEST_DATA, counters, tables

OPTION_SETS = [
    {},
    {"F3": 1.0},
    {"F2": 1.0, "F3": 1.0, "E": 1e6, "domE": 1e6},
    {"nobias": True, "F3": 1.0, "E": 1e3},
    {"max": True},
    {"Z": 5e6, "domZ": 3, "incE": 1e-3},
    {"T": 15.0, "domT": 10.0},
]


@pytest.mark.parametrize("opts", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
@pytest.mark.parametrize("model", ["Thioesterase", "PF02826", "RREFam"])
def test_reference_stage_equals_pyhmmer(model, opts, data_dir, proteome):
    hmms = read_hmms(data_dir / "hmms" / "txt" / f"{model}.hmm")
    options = SearchOptions(**opts)
    cpu = list(search.hmmsearch(hmms, proteome, options, device="cpu", cpus=2))
    ref = list(search.hmmsearch(hmms, proteome, options, device="reference", cpus=2))
    assert [r.hmm.name for r in ref] == [h.name for h in hmms]
    assert tables(ref) == tables(cpu)
    assert counters(ref) == counters(cpu)
    if opts.get("F2") == 1.0:  # sanity: the option really exposed many survivors
        assert sum(len(r.hits) for r in cpu) >= 20


def test_models_in_order_and_a_failure_stops_the_rest(data_dir, proteome):
    """Many models through the filtered path: results in model order, equal to the CPU path's;
    a model whose filters fail ends the search with that error, and the models not yet
    started are dropped, not run to the end (at most the window of models in flight ran)."""
    from gpu_search.hmmer import reference

    hmms = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm") * 100
    db = proteome.subset(range(100))
    cpu = list(search.hmmsearch(hmms[:3], db, device="cpu", cpus=2))
    ref = list(search.hmmsearch(hmms[:3], db, device="reference", cpus=2))
    assert tables(ref) == tables(cpu)

    class Failing(reference.ReferenceBackend):
        calls = 0

        def msv(self, prof, idx):
            Failing.calls += 1
            if Failing.calls == 3:
                raise RuntimeError("a failing filter")
            return super().msv(prof, idx)

    with pytest.raises(RuntimeError, match="a failing filter"):
        list(search.hmmsearch(hmms, db, device="reference", cpus=2, backend=Failing(db)))
    # the failing batch's three, and the rest of one batch being filtered beside it (two filter
    # threads with two cpus): every other batch is stopped before its first stage
    assert 3 <= Failing.calls <= search.BATCH_MODELS + 2


def test_switch_interval_while_filtering_then_restored(data_dir, proteome):
    """The filtered search runs at SWITCH_INTERVAL (its threads feeding the GPU wait less for the
    interpreter's lock) and gives the caller's interval back after, also where it fails."""
    import sys

    from gpu_search.hmmer import reference

    class Failing(reference.ReferenceBackend):
        def msv(self, prof, idx):
            raise RuntimeError("a failing filter")

    hmms = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm") * 3
    db = proteome.subset(range(50))
    saved = sys.getswitchinterval()
    sys.setswitchinterval(0.004)                 # (the caller's, whatever the tests before left)
    try:
        assert search.SWITCH_INTERVAL != 0.004
        seen = []
        list(search.hmmsearch(hmms, db, device="reference", cpus=2,
                              callback=lambda hmm, n: seen.append(sys.getswitchinterval())))
        assert seen == [search.SWITCH_INTERVAL] * 3
        assert sys.getswitchinterval() == 0.004
        with pytest.raises(RuntimeError, match="a failing filter"):
            list(search.hmmsearch(hmms, db, device="reference", cpus=2, backend=Failing(db)))
        assert sys.getswitchinterval() == 0.004
    finally:
        sys.setswitchinterval(saved)


def test_batches_started_out_of_order_yield_in_model_order(data_dir, proteome):
    """Models batched by kernel geometry (a backend's batch_key) start out of their order; the
    results still come in model order, each equal to the CPU path's, and every batch holds
    models of one key only."""
    from gpu_search.hmmer import reference

    hmms = [h for m in ("Thioesterase", "PF02826", "RREFam") for h in read_hmms(data_dir / "hmms" / "txt" / f"{m}.hmm")]
    hmms = (hmms * 4)[:10]
    db = proteome.subset(range(0, proteome.n_seqs, 10))
    batches = []

    class Keyed(reference.ReferenceBackend):
        @staticmethod
        def batch_key(M):
            return M % 2

        def msv_batch(self, profs, idx):
            batches.append([p.M % 2 for p in profs])
            return [self.msv(p, idx) for p in profs]

    got = list(search.hmmsearch(hmms, db, device="reference", cpus=2, backend=Keyed(db)))
    cpu = list(search.hmmsearch(hmms, db, device="cpu", cpus=2))
    assert [r.hmm.name for r in got] == [h.name for h in hmms]
    assert tables(got) == tables(cpu)
    assert all(len(set(b)) == 1 for b in batches) and len(batches) == len({h.M % 2 for h in hmms})


def test_stopping_early_ends_batches_at_their_next_stage(data_dir, proteome, monkeypatch):
    """A caller that stops taking results (an error, Ctrl-C) ends the search at once: the
    batches being filtered stop at their next stage, none goes on to the next filter (the
    kill switch), and leaving waits only for the stage under way.

    Timed with room for a loaded machine (CI runs a test on each core, some of them running
    processes of their own): a model's MSV stage takes 60 ms, so the rest of the search
    (about five seconds on two threads) would go on well past the 2 s allowed for the
    stages under way if nothing stopped it."""
    import time

    from gpu_search.hmmer import reference

    monkeypatch.setattr(search, "BATCH_MODELS", 4)             # (the reference filters are slow)
    hmms = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm") * 160
    db = proteome.subset(range(8))
    events = []

    class Slow(reference.ReferenceBackend):
        @staticmethod
        def batch_key(M):
            return 0

        def msv(self, prof, idx):
            events.append(("msv", time.monotonic()))
            time.sleep(0.06)
            return super().msv(prof, idx)

        def viterbi(self, prof, idx):
            events.append(("viterbi", time.monotonic()))
            return super().viterbi(prof, idx)

    results = search.hmmsearch(hmms, db, device="reference", cpus=2, backend=Slow(db), filter_threads=2,
                               options=SearchOptions(F1=1.0))     # (every sequence reaches the Viterbi filter)
    first = next(results)
    assert first.hmm.name == hmms[0].name
    stopped_at = time.monotonic()
    results.close()
    closed_at = time.monotonic()
    assert not [stage for stage, t in events if t > closed_at], "a stage started after the search was left"
    later = [stage for stage, t in events if t > stopped_at + 2.0]
    assert "viterbi" not in later, later
    # at most the stage under way on each of the two filter threads: one filter of a batch
    assert len([stage for stage, t in events if t > stopped_at]) <= 2 * search.BATCH_MODELS, len(events)


def test_batches_are_the_same_whatever_the_timing(data_dir, proteome, monkeypatch):
    """Which models share a batch (and so a launch and its kernel shape) does not depend on how
    fast the filters and the finishing run: every batch is whole (BATCH_MODELS models of one
    key) but the last of each key, and two runs with different timings make the same batches.
    A second run of the same models then compiles no kernel shape the first did not."""
    import random
    import time

    from gpu_search.hmmer import cascade, reference

    hmms = [h for m in ("Thioesterase", "PF02826", "RREFam") for h in read_hmms(data_dir / "hmms" / "txt" / f"{m}.hmm")]
    hmms = hmms * 70
    db = proteome.subset(range(0, 50))
    real = search.run_cascade_batch

    class Keyed(reference.ReferenceBackend):
        @staticmethod
        def batch_key(M):
            return M % 2

    def batches_of_a_run(seed):
        rng, batches = random.Random(seed), []

        def stand_in(profs, db, backend, **kwargs):        # no survivors, after a random delay
            time.sleep(rng.uniform(0, 0.004))
            batches.append(tuple(p.M for p in profs))
            return [cascade.CascadeResult(np.zeros(0, dtype=np.int64), 0, 0, 0) for _ in profs]

        monkeypatch.setattr(search, "run_cascade_batch", stand_in)
        got = list(search.hmmsearch(hmms, db, device="reference", cpus=2, backend=Keyed(db)))
        monkeypatch.setattr(search, "run_cascade_batch", real)
        assert [r.hmm.M for r in got] == [h.M for h in hmms]
        return batches

    first, second = batches_of_a_run(1), batches_of_a_run(2)
    assert sorted(first) == sorted(second)
    assert sum(map(len, first)) == len(hmms)
    assert all(len({M % 2 for M in b}) == 1 for b in first)
    short = [b for b in first if len(b) < search.BATCH_MODELS]
    assert len(short) <= len({h.M % 2 for h in hmms}), [len(b) for b in first]


def test_kernel_shapes_are_prepared_before_their_batches(data_dir, proteome, monkeypatch):
    """A backend that compiles kernel shapes ahead (prepare_kernels: the GPU's, on a fresh host)
    is given every model's size as the search reads it, before the model's batch is filtered,
    each model once, and is told to stop once the search ends, also where it stops early."""
    from gpu_search.hmmer import cascade, reference

    hmms = [h for m in ("Thioesterase", "PF02826", "RREFam") for h in read_hmms(data_dir / "hmms" / "txt" / f"{m}.hmm")]
    hmms = hmms * 250                    # (past the models read ahead at the start)
    db = proteome.subset(range(0, 50))
    prepared, events = [], []

    class Preparing(reference.ReferenceBackend):
        def prepare_kernels(self, Ms, threads, finishing):
            assert threads == 2 and finishing is False    # (the search's CPU threads; no GPU finishing here)
            prepared.extend(Ms)

        def stop_preparing(self):
            events.append("stop")

    def stand_in(profs, db, backend, **kwargs):
        events.append(all(p.M in prepared for p in profs))
        return [cascade.CascadeResult(np.zeros(0, dtype=np.int64), 0, 0, 0) for _ in profs]

    monkeypatch.setattr(search, "run_cascade_batch", stand_in)
    got = list(search.hmmsearch(hmms, db, device="reference", cpus=2, backend=Preparing(db)))
    assert len(got) == len(hmms) and prepared == [h.M for h in hmms]
    assert events[-1] == "stop" and events[:-1] == [True] * (len(events) - 1) and len(events) > 2
    events.clear()
    results = search.hmmsearch(hmms, db, device="reference", cpus=2, backend=Preparing(db))
    next(results)
    results.close()                      # a caller that stops early
    assert events.count("stop") == 1


def test_backend_prepares_each_shape_once_and_again_after_a_stop(monkeypatch):
    """GpuBackend.prepare_kernels (no GPU needed: the loader's prepare stood in for) asks for
    the filters' fixed shapes and each model size's shapes once, the domain definition's only
    for a search that finishes on the GPU, the int32 Viterbi shapes after the rest; a shape
    whose compilation a stopped search dropped is asked for again by the next search."""
    import threading
    import types
    from concurrent.futures import Future

    import gpu_search.gpu.loader as loader
    from gpu_search.hmmer.gpu import backend as gpu_backend
    from gpu_search.hmmer.gpu.kernels import FILTER_SHAPES, FINISHING_SHAPES, model_shapes

    asked = []

    def prepare(shapes, device_id, threads=None):
        asked.append(list(shapes))
        return [Future() for _ in shapes]          # (queued, never started)

    monkeypatch.setattr(loader, "prepare", prepare)
    monkeypatch.setattr(gpu_backend, "device_props", lambda d: types.SimpleNamespace(smem_optin=232_448))
    fake = types.SimpleNamespace(gpus=[0], _prepared=set(), _preparing=[], _preparing_lock=threading.Lock())
    prepare_kernels = gpu_backend.GpuBackend.prepare_kernels.__get__(fake)
    stop_preparing = gpu_backend.GpuBackend.stop_preparing.__get__(fake)
    prepare_kernels([100, 300, 100], 2)
    first = asked[-1]
    assert first[:len(FILTER_SHAPES)] == list(FILTER_SHAPES) and not set(FINISHING_SHAPES) & set(first)
    sixteen = {*model_shapes(100, 232_448)[:2], *model_shapes(300, 232_448)[:2]}     # (MSV, 16-bit Viterbi)
    int32 = [first.index(shape) for shape in first if shape not in sixteen and shape not in FILTER_SHAPES]
    assert len(first) == len(set(first)) and int32 and min(int32) > max(first.index(x) for x in sixteen)
    assert set(first) == {*FILTER_SHAPES, *model_shapes(100, 232_448), *model_shapes(300, 232_448)}
    prepare_kernels([300], 2)                      # nothing new
    assert len(asked) == 1
    prepare_kernels([300], 2, finishing=True)      # the domain definition's shape, alone
    assert asked[-1] == list(FINISHING_SHAPES)
    stop_preparing()                               # every queued shape dropped: asked for again
    prepare_kernels([100], 2)
    assert set(asked[-1]) == {*FILTER_SHAPES, *model_shapes(100, 232_448)}


def test_launch_groups_hold_every_model():
    """launch_groups: every model once, in a group whose geometry holds it, at most GROUP_SLACK
    times the nodes of the group's smallest model's own geometry."""
    from gpu_search.hmmer.gpu.geometry import GROUP_SLACK, launch_groups, msv_geometry, viterbi_geometry

    Ms = [1, 7, 30, 31, 64, 65, 100, 129, 160, 161, 300, 512, 513, 1000, 1413, 2485, 30, 300]
    for geometry_of in (msv_geometry, viterbi_geometry):
        groups = launch_groups(Ms, geometry_of)
        assert sorted(j for _, members in groups for j in members) == list(range(len(Ms)))
        for geo, members in groups:
            assert all(geo.nodes >= Ms[j] for j in members)
            assert geo.nodes <= GROUP_SLACK * min(geometry_of(Ms[j]).nodes for j in members)
        assert len(groups) < len(set(Ms))


def test_profile_bytes_as_packed():
    """packing.profile_nbytes (what kernel_shapes decides shared memory by, ahead of time) equals
    the bytes of the profiles the backend packs, for every kernel and model sizes of every group
    size."""
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    from gpu_search.hmmer.gpu.geometry import msv_geometry, viterbi_geometry
    from gpu_search.hmmer.gpu.packing import pack_msv_profile, pack_viterbi_profile, profile_nbytes
    from gpu_search.hmmer.profile import FilterProfile

    for M in (3, 40, 130, 161, 300, 700, 1500):
        prof = FilterProfile.from_hmm(HMM.sample(Alphabet.amino(), M, Randomness(M)))
        assert profile_nbytes("msv", msv_geometry(M)) == pack_msv_profile(prof, msv_geometry(M)).nbytes
        for geo in (viterbi_geometry(M), viterbi_geometry(M, cells=1)):
            nbytes = sum(a.nbytes for a in pack_viterbi_profile(prof, geo))
            assert profile_nbytes("viterbi", geo) == nbytes + (-nbytes) % 16


def test_compiled_kernel_names_follow_what_makes_the_binary(tmp_path):
    """A cubin compiled ahead of time is found by a hash of the source, its options, the
    headers beside it and the architecture: an edited header or another option or
    architecture never loads a stale binary."""
    from gpu_search.gpu import compiled

    (tmp_path / "groups.cuh").write_text("#define A 1\n")
    base = compiled.key("src", ("-DG=8",), tmp_path, "90")
    assert compiled.key("src", ("-DG=8",), tmp_path, "90") == base
    assert compiled.key("src", ("-DG=4",), tmp_path, "90") != base
    assert compiled.key("src", ("-DG=8",), tmp_path, "100") != base
    assert compiled.key("src2", ("-DG=8",), tmp_path, "90") != base
    (tmp_path / "groups.cuh").write_text("#define A 2\n")
    assert compiled.key("src", ("-DG=8",), tmp_path, "90") != base


def test_cutoffs(data_dir, proteome):
    hmms = read_hmms(data_dir / "hmms" / "txt" / "PF02826.hmm")
    options = SearchOptions(bit_cutoffs="gathering")
    cpu = list(search.hmmsearch(hmms, proteome, options, device="cpu", cpus=2))
    ref = list(search.hmmsearch(hmms, proteome, options, device="reference", cpus=2))
    assert tables(ref) == tables(cpu) and len(cpu[0].hits) > 0


@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_sharded_then_merged_equals_unsharded(device, tmp_path, proteome_path):
    whole = seqdb.open_database(proteome_path)
    paths = seqdb.makedb(proteome_path, tmp_path / "db.gsdb", shards=3)
    from conftest import TEST_DATA

    hmms = read_hmms(TEST_DATA / "four-models.hmm")
    for opts in ({}, {"E": 100, "F3": 1.0}):
        options = SearchOptions(**opts)
        full = list(search.hmmsearch(hmms, whole, options, device=device, cpus=2))
        files = []
        for p in paths:
            shard = seqdb.open_database(p)   # a shard defaults Z to the whole database
            res = list(search.hmmsearch(hmms, shard, options, device=device, cpus=2))
            assert all(r.stats.Z == whole.n_seqs for r in res)
            f = tmp_path / f"{p.stem}.gshits"
            merge.save_results(f, res, hmmfile="four-models.hmm", seqfile=str(p), options=options)
            files.append(f)
        merged, meta = merge.read_shards(files)
        assert tables(merged) == tables(full)
        assert counters(merged) == counters(full)
        # without the whole database's Z the shards' E-values are wrong: the test can fail
        wrong = list(search.hmmsearch(hmms, seqdb.open_database(paths[0]),
                                      SearchOptions(Z=seqdb.open_database(paths[0]).n_seqs, **opts),
                                      device="cpu", cpus=2))
        assert tables(wrong) != tables(list(search.hmmsearch(hmms, seqdb.open_database(paths[0]), options,
                                                             device="cpu", cpus=2)))


@pytest.mark.parametrize("F1", [0.02, 0.2, 0.005])
def test_msv_floor_keeps_every_passing_sequence(F1, data_dir, proteome):
    """The xJ floor that spares exact P-values never drops a sequence that passes."""
    import numpy as np

    from gpu_search.hmmer import reference, scores
    from gpu_search.hmmer.cascade import LengthTables, exact_pass
    from gpu_search.hmmer.profile import FilterProfile

    for hmm in read_hmms(data_dir / "hmms" / "txt" / "RREFam.hmm")[:3]:
        prof = FilterProfile.from_hmm(hmm)
        searched = np.arange(proteome.n_seqs)
        tables = LengthTables(proteome, searched, prof)
        xJ, ovf = reference.msv_filter(prof, proteome.residues, proteome.offsets, proteome.lengths)
        usc = scores.msv_score(prof, xJ, tables.tjb, ovf)
        mu, lam = float(prof.evparam[0]), float(prof.evparam[1])
        passing = exact_pass(usc, tables.null, mu, lam, F1)
        floor = tables.msv_floor(prof, mu, lam, F1)
        assert passing.sum() > 0
        assert np.all((xJ >= floor) | ovf | ~passing)
        # and the floor really spares work: most sequences fall below it
        assert (xJ < floor).mean() > 0.5


def test_length_tables_index_as_np_unique(data_dir, proteome):
    """LengthTables' distinct lengths and inverse index are np.unique's."""
    import numpy as np

    from gpu_search.hmmer.cascade import LengthTables
    from gpu_search.hmmer.profile import FilterProfile

    prof = FilterProfile.from_hmm(read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm")[0])
    for searched in (np.arange(proteome.n_seqs), np.arange(5, proteome.n_seqs, 7), np.array([3])):
        tables = LengthTables(proteome, searched, prof)
        uniq, inv = np.unique(proteome.lengths[searched], return_inverse=True)
        assert np.array_equal(tables.uniq, uniq) and np.array_equal(tables.inv, inv)


@pytest.mark.parametrize("max_cells", [None, 60_000])
def test_exact_forward_stage_keeps_results_exact(max_cells, data_dir, proteome, proteome_path, filters_oracle,
                                                 monkeypatch):
    """The cascade's Forward stage (used with the GPU: HMMER's own Forward score, some pairs left
    to the CPU) changes no result and no counter: run here with HMMER's scores from the filters
    oracle standing in for the GPU's, every third one flagged; and with the pairs over a small
    FORWARD_MAX_CELLS left unscored."""
    from conftest import run_filters_oracle

    from gpu_search.hmmer import cascade, reference

    if max_cells is not None:
        monkeypatch.setattr(cascade, "FORWARD_MAX_CELLS", max_cells)

    class WithForward(reference.ReferenceBackend):
        def __init__(self, db, fwd_by_model):
            super().__init__(db)
            self.fwd_by_model = fwd_by_model

        def forward_exact_batch(self, profs, idxs):
            out = []
            for prof, idx in zip(profs, idxs):
                fwd = self.fwd_by_model[prof.name][idx].copy()
                fwd[::3] = np.nan
                out.append(fwd)
            return out

    paths = [data_dir / "hmms" / "txt" / "RREFam.hmm", TEST_DATA / "four-models.hmm"]
    fwd = {name: o["fwd"] for path in paths for name, o in run_filters_oracle(filters_oracle, path,
                                                                              proteome_path).items()}
    hmms = read_hmms(paths[0])[:4] + read_hmms(paths[1])
    for opts in ({}, {"F3": 1e-3, "E": 100}):
        options = SearchOptions(**opts)
        cpu = list(search.hmmsearch(hmms, proteome, options, device="cpu", cpus=2))
        exact = list(search.hmmsearch(hmms, proteome, options, device="reference", cpus=2,
                                      backend=WithForward(proteome, fwd)))
        assert tables(exact) == tables(cpu)
        assert counters(exact) == counters(cpu)
        assert any("forward" in (r.seconds or {}) for r in exact)


def test_finisher_builds_each_survivor_once(data_dir, proteome, monkeypatch):
    """The finishing stage's blocks hold the survivors asked for, in that order, as
    ``digital_block`` makes them; a sequence that survives again is the same object (built
    once); past the cache's bound a piece's new sequences are built for it alone; and the
    finished hits are those of a block built afresh."""
    from pyhmmer.plan7 import Background, Pipeline

    hmm = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm")[0]
    bg = Background(hmm.alphabet)
    kwargs = SearchOptions().pipeline_kwargs(float(proteome.n_seqs))
    finish = search.Finisher(proteome, hmm.alphabet, bg, kwargs)
    built = []
    real = proteome.digital_block
    monkeypatch.setattr(proteome, "digital_block", lambda idx, abc=None: built.extend(idx) or real(idx, abc))

    def same(block, idx):
        fresh = real(idx, hmm.alphabet)
        return [(s.name, s.description, bytes(s.sequence)) for s in block] == \
               [(s.name, s.description, bytes(s.sequence)) for s in fresh]

    first = np.array([5, 3, 200, 7])
    block = finish.block(first)
    assert same(block, first) and sorted(built) == [3, 5, 7, 200]
    again = finish.block(np.array([7, 9, 5]))
    assert same(again, [7, 9, 5]) and sorted(built) == [3, 5, 7, 9, 200]
    assert again[0] is block[3] and again[2] is block[0]
    monkeypatch.setattr(search.Finisher, "CACHED_RESIDUES", 0)      # the bound passed
    past = finish.block(np.array([11, 5]))
    assert same(past, [11, 5]) and past[1] is block[0] and 11 not in finish._sequences
    hits, _ = finish(hmm, np.arange(0, proteome.n_seqs, 2))
    pipeline = Pipeline(hmm.alphabet, background=bg, **dict(kwargs, F1=1.0, F2=1.0))
    expected = pipeline.search_hmm(hmm, real(np.arange(0, proteome.n_seqs, 2), hmm.alphabet))
    assert [(h.name, h.score, h.evalue) for h in hits] == [(h.name, h.score, h.evalue) for h in expected]
    assert len(hits) > 0


@pytest.mark.parametrize("cpus", [1, 2])
def test_few_cpus_and_batches_of_one_geometry_keep_every_model(data_dir, proteome, cpus):
    """With one or two CPUs the window of models in flight is one or two batches wide; a batch
    takes the models of its kernel geometry from further on, past models of another: every
    model is still searched and handed on, in order (models were left out, silently)."""
    from gpu_search.hmmer.gpu.geometry import msv_geometry

    small = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm")
    large = read_hmms(data_dir / "hmms" / "txt" / "LuxC.hmm")
    assert msv_geometry(small[0].M).G != msv_geometry(large[0].M).G
    hmms = (small + large + large) * 30
    db = proteome.subset(range(60))
    backend = search.make_backend("reference", db)
    backend.batch_key = lambda M: msv_geometry(M).G
    got = list(search.hmmsearch(hmms, db, device="reference", backend=backend, cpus=cpus))
    assert [r.hmm.name for r in got] == [h.name for h in hmms]
    cpu = list(search.hmmsearch(hmms[:3], db, device="cpu", cpus=2))
    assert tables(got[:3]) == tables(cpu)


def test_finishing_backlog_in_seconds_at_the_measured_rate():
    """The backlog is the cells handed on and not done, at the rate of the pieces done so far
    over all threads; none is known before a piece is done; a failed piece leaves the backlog
    and not the rate."""
    backlog = search.FinishingBacklog(threads=4)
    backlog.add(1e6)
    assert backlog.seconds() == 0.0                     # (no rate yet)
    backlog.add(3e6)
    backlog.done(1e6, 2.0)                              # 1e6 cells in 2 thread-seconds
    assert backlog.seconds() == pytest.approx(3e6 * 2.0 / 1e6 / 4)
    backlog.add(5e5)
    backlog.done(5e5, None)                             # failed: out of the backlog, not in the rate
    assert backlog.seconds() == pytest.approx(1.5)
    backlog.done(3e6, 2.0)
    assert backlog.seconds() == 0.0


def test_gpu_finishing_tests_the_pairs_the_cascade_left_and_leaves_the_longest(proteome, monkeypatch):
    """GpuFinishing.finish leaves the pairs over MAX_GPU_CELLS (length x M) to the CPU and sends
    every other one to the domain definition (a stand-in here, no GPU), with HMMER's Forward test
    for the pairs whose test the cascade left (CascadeResult.untested): one failing it is dropped
    (neither the GPU's nor left), one whose score is unsure (NaN) is left to the CPU."""
    from types import SimpleNamespace

    from gpu_search.hmmer.gpu import domaindef
    from gpu_search.hmmer.gpufinish import GpuFinishing

    sent = []

    def define_domains(kernels, profs, residues, offsets, models, seqs, degeneracy, budget, forward_test=None):
        # a database sequence's Forward score by its number: passing (1,000 nats), failing
        # (-1,000: under the exponential's tau, P = 1) or unsure (NaN) as i % 3 is 0, 1 or 2
        ids = np.concatenate(given)
        fwd = np.array([(1000.0, -1000.0, np.nan)[i % 3] for i in ids], np.float32)
        passed = np.ones(len(models), bool) if forward_test is None else forward_test(fwd)
        sent.append((np.bincount(models, minlength=len(profs)), forward_test is not None))
        return SimpleNamespace(simple=passed & ~np.isnan(fwd), passed=passed), None

    monkeypatch.setattr(domaindef, "define_domains", define_domains)
    finishing = GpuFinishing(proteome, None, {}, kernels=SimpleNamespace(matrix_floats=lambda: 1 << 20), F3=1e-5)
    monkeypatch.setattr(finishing, "_hits_maker", lambda *args, **kwargs: "maker")
    evparam = [0.0, 0.7, 0.0, 0.7, -4.0, 0.7]
    profs = [SimpleNamespace(M=100, evparam=evparam), SimpleNamespace(M=300, evparam=evparam)]
    survivors = [np.arange(0, proteome.n_seqs, 2), np.arange(proteome.n_seqs)]
    for gpu_cells, with_untested in ((50_000, False), (50_000, True), (100_000, True)):
        finishing.MAX_GPU_CELLS = gpu_cells
        long = [proteome.lengths[s].astype(np.int64) * p.M > gpu_cells for s, p in zip(survivors, profs)]
        given = [s[~x] for s, x in zip(survivors, long)]
        # the second model's sequences under 400 residues left untested by the cascade
        untested = [None, (survivors[1][proteome.lengths[survivors[1]] < 400],
                           np.zeros(int((proteome.lengths[survivors[1]] < 400).sum()), np.float32))]
        sent.clear()
        failed_before, n_failed = finishing.pairs_failed, 0
        out = finishing.finish(["a", "b"], profs, survivors, untested if with_untested else None)
        assert len(sent) == 1 and sent[0][1] == with_untested
        for m, ((make, left), s, x, g) in enumerate(zip(out, survivors, long, given)):
            assert 0 < x.sum() < len(s) and sent[0][0][m] == len(g)
            tested = np.isin(g, untested[m][0]) if with_untested and untested[m] is not None else np.zeros(len(g), bool)
            failed = tested & (g % 3 == 1)
            assert tested.sum() > 100 if m == 1 and with_untested else not tested.any()
            assert make == "maker" and left.tolist() == sorted(s[x].tolist() + g[(g % 3 == 2)].tolist())
            assert not np.isin(g[failed], left).any()
            n_failed += int(failed.sum())
        assert finishing.pairs_failed - failed_before == n_failed and (n_failed > 0) == with_untested


def test_gpu_finishing_workers_run_calls_side_by_side_each_batch_its_own_results(monkeypatch):
    """GpuFinishing's workers (a stand-in finish(), no GPU): WORKERS calls under way at once,
    each batch's callback given its own models' results in order (with the untested pairs given
    for them), or the error of its call alone; close() ends every worker."""
    import threading

    from gpu_search.hmmer.gpufinish import GpuFinishing

    finishing = GpuFinishing(None, None, {}, F3=1.0)
    finishing.GATHER_PAIRS = 1                       # (a batch a call)
    together = threading.Barrier(finishing.WORKERS, timeout=20)
    calls = []
    lock = threading.Lock()

    def finish(hmms, profs, survivors, untested):
        with lock:
            calls.append(threading.current_thread().name)
            first_calls = len(calls) <= finishing.WORKERS
        if first_calls:
            together.wait()                          # (broken unless WORKERS calls run at once)
        if any(-1 in s for s in survivors):
            raise ValueError("this batch's error")
        return [(h, list(s), u) for h, s, u in zip(hmms, survivors, untested)]

    monkeypatch.setattr(finishing, "finish", finish)
    got = {}
    done = threading.Semaphore(0)

    def then_for(b):
        def then(results):
            got[b] = results
            done.release()
        return then

    batches = {b: ([f"m{b}a", f"m{b}b"], [None, None], [[b, 100 + b], [-1 if b == 7 else 200 + b]])
               for b in range(12)}
    for b, (hmms, profs, surv) in batches.items():
        finishing.submit(hmms, profs, surv, then_for(b), *([[f"u{b}", None]] if b % 2 else []))
    for _ in batches:
        assert done.acquire(timeout=30)
    finishing.close()
    assert not any(w.is_alive() for w in finishing._workers)
    assert len(set(calls[:finishing.WORKERS])) == finishing.WORKERS > 1
    assert isinstance(got.pop(7), ValueError)
    assert got == {b: [(h, list(s), u) for h, s, u in zip(hmms, surv, [f"u{b}", None] if b % 2 else [None, None])]
                   for b, (hmms, _, surv) in batches.items() if b != 7}


@pytest.mark.parametrize("gather, expected", [(10 ** 6, [4, 4, 4, 8, 20]), (8, [4, 4, 8, 8, 8, 8])])
def test_gpu_finishing_worker_takes_its_share_of_the_batches_waiting(monkeypatch, gather, expected):
    """A GPU finishing worker takes the oldest batches waiting up to its share of their pairs
    (all over WORKERS) and at most GATHER_PAIRS: with both workers busy while ten batches of
    four pairs wait, no call takes them all (stand-in finish(), no GPU)."""
    import threading

    from gpu_search.hmmer.gpufinish import GpuFinishing

    finishing = GpuFinishing(None, None, {}, F3=1.0)
    monkeypatch.setattr(finishing, "WORKERS", 2)
    monkeypatch.setattr(finishing, "GATHER_PAIRS", gather)
    gate, lock, sizes = threading.Event(), threading.Lock(), []

    def finish(hmms, profs, survivors, untested):
        with lock:
            sizes.append(sum(map(len, survivors)))
        assert gate.wait(timeout=30)
        return [(None, s) for s in survivors]

    monkeypatch.setattr(finishing, "finish", finish)
    done = threading.Semaphore(0)
    batch = (["a", "b"], [None, None], [[1, 2], [3, 4]])
    for b in range(12):
        finishing.submit(*batch, lambda results: done.release())
        if b == 1:                     # (both workers busy with a batch each before the ten others wait)
            for _ in range(3000):
                with lock:
                    if len(sizes) == 2:
                        break
                threading.Event().wait(0.01)
    gate.set()
    for _ in range(12):
        assert done.acquire(timeout=30)
    finishing.close()
    assert sizes[:2] == [4, 4] and sorted(sizes[2:]) == expected


def test_every_finishing_piece_leaves_the_backlog(data_dir, proteome, monkeypatch):
    """Each piece handed to the CPU threads is counted into the backlog and out again when
    done: after a search none is left, and every cell counted in was done."""
    made = []

    class Recorded(search.FinishingBacklog):
        def __init__(self, threads):
            super().__init__(threads)
            self.added = []
            made.append(self)

        def add(self, cells):
            self.added.append(cells)
            super().add(cells)

    monkeypatch.setattr(search, "FinishingBacklog", Recorded)
    hmms = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm") * 3
    list(search.hmmsearch(hmms, proteome, SearchOptions(F3=1.0), device="reference", cpus=2))
    backlog, = made
    assert len(backlog.added) >= 3 and backlog._cells == 0.0
    assert backlog._done_cells == sum(backlog.added) > 0.0 and backlog._done_seconds > 0.0


def test_gpu_finishing_takes_true_false_or_auto(proteome, data_dir):
    hmms = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm")
    for wrong in ("yes", 1, 0, None):
        with pytest.raises(ValueError, match="gpu_finishing"):
            list(search.hmmsearch(hmms, proteome, device="reference", gpu_finishing=wrong))
