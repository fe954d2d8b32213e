"""The GPU's hit records: which hits p7_Pipeline keeps, decided for many hits at once exactly as
for one (``hitrecords.reportable_each`` against ``hitrecords.reportable``).  The records
themselves are checked byte for byte against pyhmmer's in tests/kernels/test_domaindef_emulated.py."""

from __future__ import annotations

import math

import numpy as np

from gpu_search.hmmer.hitrecords import reportable, reportable_each


def test_hits_kept_by_E_value_at_once_as_one_at_a_time():
    rng = np.random.default_rng(3)
    for Z, E in ((21000.0, 10.0), (1.0, 1e-5), (8.4e5, 1e9)):
        edge = math.log(E / Z)
        lnP = [edge, -np.inf, 0.0, np.nan] + rng.uniform(-60.0, 0.0, 200).tolist()
        x = edge
        for _ in range(6):                     # the values around the edge, ulp by ulp
            x = np.nextafter(x, -np.inf)
            lnP.append(float(x))
        x = edge
        for _ in range(6):
            x = np.nextafter(x, np.inf)
            lnP.append(float(x))
        pipeline = {"by_E": True, "Z": Z, "E": E, "T": 0.0}
        lnP = np.array(lnP)
        got = reportable_each(pipeline, np.zeros(len(lnP), np.float32), lnP)
        want = [reportable(pipeline, 0.0, float(v)) for v in lnP]
        assert got.tolist() == want
        assert 0 < sum(want) < len(want)
    # exp(lnP) x Z equal to E: kept (<=)
    lnP = -3.25
    pipeline = {"by_E": True, "Z": 1.0, "E": math.exp(lnP), "T": 0.0}
    assert reportable_each(pipeline, np.zeros(1, np.float32), np.array([lnP])).tolist() == [True]


def test_hits_kept_by_bit_score_compared_in_double():
    """A float32 score against a threshold no float32 holds: compared in double, as C compares
    (float) score >= (double) T (in float32 the score below equals the threshold's rounding)."""
    T = 15.0999996
    below = np.float32(15.0999994)
    assert float(below) < T and below == np.float32(T)
    scores = np.array([below, np.float32(15.1000004), np.float32(T), np.float32(-1.0), np.float32(1e4)], np.float32)
    pipeline = {"by_E": False, "Z": 1.0, "E": 10.0, "T": T}
    got = reportable_each(pipeline, scores, np.zeros(len(scores)))
    assert got.tolist() == [reportable(pipeline, s, 0.0) for s in scores] == [False, True, False, False, True]


def test_a_calls_records_built_once_for_all_its_models():
    """GpuFinishing's makers of one call share one build of its records; a failed build fails
    every model of the call with that error as the cause."""
    import pytest

    from gpu_search.hmmer.gpufinish import _CallRecords

    builds = []
    call = _CallRecords(lambda: builds.append(1) or [("a",), ("b",), ("c",)])
    assert [call.take(j) for j in (2, 0, 1, 0)] == [("c",), ("a",), ("b",), ("a",)] and builds == [1]

    def failing():
        raise ValueError("no records")

    call = _CallRecords(failing)
    for j in (0, 1):
        with pytest.raises(RuntimeError, match="hit records failed") as caught:
            call.take(j)
        assert isinstance(caught.value.__cause__, ValueError)


def test_numpys_exp_a_bit_off_leaves_every_verdict_the_c_librarys(monkeypatch):
    """numpy's exp may differ from the C library's in its last bits: at the E-value edge the
    verdict is the C library's (here numpy's made one ulp too large, and too small)."""
    exp = np.exp
    lnP = -3.25
    for way in (np.inf, -np.inf):
        monkeypatch.setattr(np, "exp", lambda x, way=way: np.nextafter(exp(x), way))
        for E in (math.exp(lnP), float(np.nextafter(math.exp(lnP), np.inf)),
                  float(np.nextafter(math.exp(lnP), -np.inf))):
            pipeline = {"by_E": True, "Z": 1.0, "E": E, "T": 0.0}
            got = reportable_each(pipeline, np.zeros(1, np.float32), np.array([lnP]))
            assert got.tolist() == [reportable(pipeline, 0.0, lnP)]
