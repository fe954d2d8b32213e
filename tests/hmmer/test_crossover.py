"""--device auto for hmmsearch: the CPU where the work is too small to repay the GPU's start
(said on stderr), the GPU where it is large; the outputs the same either way."""

from __future__ import annotations

from types import SimpleNamespace

from conftest import TEST_DATA

from gpu_search import cli, device
from gpu_search.hmmer.crossover import Crossover, choose_device


def models(*Ms):
    return [SimpleNamespace(M=M) for M in Ms]


def test_small_work_goes_to_the_cpu_large_to_the_gpu():
    # one model against a proteome: the CPU path is done before the GPU has started
    used, why = choose_device(models(143), n_seqs=21_000, residues=6_800_000, cpus=16)
    assert used == "cpu" and "too little work" in why and "1 model x 6.8 M residues" in why
    # twenty models against 68 M residues: the GPU
    assert choose_device(models(*[187] * 20), n_seqs=210_000, residues=68_000_000, cpus=16)[0] == "gpu"
    # one model against 273 M residues: the GPU (making 840,000 pyhmmer sequences alone takes
    # the CPU path longer than the GPU's start)
    assert choose_device(models(143), n_seqs=840_000, residues=273_000_000, cpus=16)[0] == "gpu"
    # a proteome: 20 models on the CPU, 200 (batched on the GPU: 2.83 s against pyhmmer's 2.78 s
    # and our CPU path's ~3.4 s, docs/benchmarks.md) and 2,000 on the GPU
    assert choose_device(models(*[187] * 20), n_seqs=21_000, residues=6_800_000, cpus=16)[0] == "cpu"
    assert choose_device(models(*[187] * 200), n_seqs=21_000, residues=6_800_000, cpus=16)[0] == "gpu"
    assert choose_device(models(*[187] * 2000), n_seqs=21_000, residues=6_800_000, cpus=16)[0] == "gpu"


def test_estimates_follow_the_work():
    c = Crossover()
    cpu1, gpu1 = c.seconds(20, 20 * 187, 21_000, 6_800_000, 16)
    cpu2, gpu2 = c.seconds(20, 20 * 187, 210_000, 68_000_000, 16)
    assert cpu2 > 5 * cpu1 and gpu2 > gpu1
    # fewer models than cores: the database in pieces, every core busy
    assert abs(16 * c.seconds(1, 187, 0, 10**8, 16)[0] - c.seconds(16, 16 * 187, 0, 10**8, 16)[0]) < 1e-9


def test_auto_says_it_chose_the_cpu_and_matches_device_cpu(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(device, "gpu_status", lambda: (True, "1 GPU(s)", ["A stand-in GPU"]))
    monkeypatch.setattr(device, "start_cuda", lambda *a, **k: None)
    outputs = {}
    for dev in ("auto", "cpu"):
        cli.main(["hmmsearch", "--device", dev, "--cpu", "2", "--tblout", str(tmp_path / f"{dev}.tbl"),
                  "-o", "/dev/null", str(TEST_DATA / "four-models.hmm"), str(TEST_DATA / "proteome.faa")])
        outputs[dev] = [l for l in (tmp_path / f"{dev}.tbl").read_text().splitlines() if not l.startswith("#")]
        err = capsys.readouterr().err
        if dev == "auto":
            assert "--device auto: searching on the CPU" in err and "--device gpu to use the GPU anyway" in err
    assert outputs["auto"] == outputs["cpu"] and outputs["cpu"]
    # --quiet silences progress, not this: a GPU was asked for (auto) and is not used
    cli.main(["hmmsearch", "--quiet", "--device", "auto", "--cpu", "2", "-o", "/dev/null",
              str(TEST_DATA / "four-models.hmm"), str(TEST_DATA / "proteome.faa")])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gpu-search: --device auto: searching on the CPU"), err
