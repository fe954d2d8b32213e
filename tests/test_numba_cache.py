"""Where numba's compiled loops go when the configured cache folder cannot be written
(a SIF made from the Docker image, `docker run --read-only`, Apptainer --no-home/--containall).

Each check imports gpu_search in a fresh interpreter, as a run does, with the environment
a container gives it.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from gpu_search import _numba

# compile one small loop of ours (FASTA scanning's count of headers) and say where numba put it
COMPILE_ONE = ("from gpu_search import _fasta; import numpy; count_gt = _fasta.scanners()[0]; "
               "assert count_gt(numpy.frombuffer(b'>a>b', numpy.uint8)) == 2; "
               "import os; print(os.environ.get('NUMBA_CACHE_DIR', ''))")


def run_python(code: str, tmp_path: Path, **env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    base.update(PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path / "tmp"), PYTHONDONTWRITEBYTECODE="1", **env)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=base, cwd=tmp_path)


def cached_loops(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.nbi"))


def test_unwritable_configured_cache_falls_back_to_a_private_folder(tmp_path):
    """NUMBA_CACHE_DIR that cannot be made (a path under a file: unwritable even for root)
    and no home: the loop is compiled into <TMPDIR>/gpu-search-<uid>/numba, made 0700."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    r = run_python(COMPILE_ONE, tmp_path, NUMBA_CACHE_DIR=str(blocker / "numba-cache"),
                   HOME=str(blocker / "home"))
    assert r.returncode == 0, r.stderr
    private = tmp_path / "tmp" / f"gpu-search-{os.getuid()}"
    assert r.stdout.strip() == str(private / "numba")
    assert any(name.startswith("_fasta.count_gt") for name in cached_loops(private / "numba"))
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


def test_writable_configured_cache_is_used_as_it_is(tmp_path):
    r = run_python(COMPILE_ONE, tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "cache")
    assert any(name.startswith("_fasta.count_gt") for name in cached_loops(tmp_path / "cache"))
    assert not (tmp_path / "tmp" / f"gpu-search-{os.getuid()}").exists()


def test_read_only_cache_is_copied_not_compiled_again(tmp_path, monkeypatch):
    """The loops compiled into a read-only image folder are copied to the private folder;
    files already there are kept."""
    shipped = tmp_path / "opt-numba-cache"
    (shipped / "gpu_search_1234").mkdir(parents=True)
    (shipped / "gpu_search_1234" / "_fasta.scan-22.py311.nbi").write_bytes(b"index")
    (shipped / "gpu_search_1234" / "_fasta.scan-22.py311.1.nbc").write_bytes(b"code")
    monkeypatch.setattr(_numba.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(_numba, "writable", lambda folder, real=_numba.writable: folder != str(shipped) and real(folder))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(shipped))
    monkeypatch.setattr(_numba.numba.core.config, "CACHE_DIR", _numba.numba.core.config.CACHE_DIR)
    private = tmp_path / "tmp" / f"gpu-search-{os.getuid()}" / "numba"
    (private / "gpu_search_1234").mkdir(parents=True)
    (private / "gpu_search_1234" / "_fasta.scan-22.py311.1.nbc").write_bytes(b"newer code")
    _numba.choose_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == str(private)
    assert (private / "gpu_search_1234" / "_fasta.scan-22.py311.nbi").read_bytes() == b"index"
    assert (private / "gpu_search_1234" / "_fasta.scan-22.py311.1.nbc").read_bytes() == b"newer code"
    assert sorted(p.name for p in private.rglob("*")) == ["_fasta.scan-22.py311.1.nbc",
                                                          "_fasta.scan-22.py311.nbi", "gpu_search_1234"]


@pytest.mark.parametrize("planted", ["world-writable", "symlink"])
def test_private_folder_another_user_could_plant_code_in_is_not_used(planted, tmp_path, monkeypatch):
    """A cache is code that is loaded and run: a gpu-search-<uid> folder that others can write
    to, or a link to elsewhere, is never used (a fresh folder of the process is, removed at exit)."""
    monkeypatch.setattr(_numba.tempfile, "tempdir", str(tmp_path))
    top = tmp_path / f"gpu-search-{os.getuid()}"
    if planted == "symlink":
        (tmp_path / "elsewhere").mkdir()
        top.symlink_to(tmp_path / "elsewhere")
    else:
        top.mkdir()
        top.chmod(0o777)
    folder = Path(_numba.private_cache_dir("numba"))
    assert folder.parent == tmp_path and folder.name.startswith("gpu-search-numba-")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not (top / "numba").exists()


def test_compiled_loops_copy_arrays_without_slice_assignment():
    """``a[i:j] = b`` in one of our compiled loops makes numba compile its shape check's error
    message (string formatting, about 6 s of a first compilation in every process that meets
    it): our loops copy with _numba.copy_into / copy_rows.  A scalar fill (``a[:] = 0``) is fine."""
    import ast

    from gpu_search import _fasta

    compiled_on_demand = {(Path(f.__code__.co_filename).resolve(), f.__name__) for f in _fasta.COMPILED_FUNCTIONS}
    found = []
    for path in sorted((ROOT / "gpu_search").rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef) or not (any("jit" in ast.unparse(d) for d in fn.decorator_list)
                                                           or (path.resolve(), fn.name) in compiled_on_demand):
                continue
            for node in ast.walk(fn):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, ast.AugAssign) else []
                for t in targets:
                    parts = t.slice.elts if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Tuple) else \
                        [t.slice] if isinstance(t, ast.Subscript) else []
                    if any(isinstance(p, ast.Slice) for p in parts) and not isinstance(node.value, ast.Constant):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found


# In a fresh interpreter with an empty cache: the traceback's worker processes started as a
# GPU run starts them, each given one task that loads the traceback's code as the workers'
# warm-up does; which processes compiled it is recorded through numba's compile events (a
# load from the cache raises none).
ONE_WORKER_COMPILES = """
import json, os, sys
import numba.core.event as ev
from gpu_search.blast import workers

class Record(ev.Listener):
    def on_start(self, event):
        pass
    def on_end(self, event):
        name = event.data["dispatcher"].py_func.__name__
        with open("compiles.txt", "a") as fh:
            fh.write(f"{os.getpid()} {name}\\n")

ev.register("numba:compile", Record())

def task(_):
    workers._pass_gate()
    workers._warm_up_traceback()
    return os.getpid()

procs = workers.start_workers(None, None, 4)
try:
    futures = [procs.submit(task, i) for i in range(4)]
    print(json.dumps(sorted({f.result() for f in futures})))
finally:
    workers.shut_down(procs)
"""


def test_one_worker_compiles_the_traceback_while_the_others_wait(tmp_path):
    """On a first run (numba's cache empty) one of the traceback's worker processes compiles
    its loops; the others wait, then load them from the cache, instead of all compiling the
    same loops at once on the cores the run needs."""
    import json

    r = run_python(ONE_WORKER_COMPILES, tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)) == 4                  # every worker ran a task
    compiled = [line.split() for line in (tmp_path / "compiles.txt").read_text().splitlines()]
    assert {pid for pid, name in compiled if name == "_traceback_subjects"} == \
        {pid for pid, name in compiled if name == "_traceback_kernel"}
    assert len({pid for pid, name in compiled if name == "_traceback_kernel"}) == 1, compiled
    assert sum(1 for _, name in compiled if name == "_traceback_kernel") == 1   # one signature


# After `gpu-search compile`: searches unlike its own small ones (other files, several queries,
# a FASTA database and a .gsdb, blastp's GPU pipeline with CPU stand-ins for its GPU parts),
# each in this interpreter, numba's compile events recorded (a load from the cache raises none)
SEARCHES_AFTER_COMPILE = """
import io, os, sys
import numpy as np
import numba.core.event as ev

class Record(ev.Listener):
    def on_start(self, event):
        pass
    def on_end(self, event):
        d = event.data["dispatcher"]
        with open("compiles.txt", "a") as fh:
            fh.write(f"{d.py_func.__module__}.{d.py_func.__qualname__} {event.data.get('args')}\\n")

ev.register("numba:compile", Record())
from gpu_search.cli import main

data = sys.argv[1]
for args in (["blastp", "-query", f"{data}/blastp-queries.faa", "-db", f"{data}/proteome.faa", "-out", "a.tsv"],
             ["blastp", "-query", f"{data}/blastp-queries.faa", "-db", f"{data}/proteome.faa", "-out", "b.tsv",
              "-comp_based_stats", "0", "-outfmt", "6 std qseq sseq"],
             ["hmmsearch", "--device", "cpu", "-o", "c.out", f"{data}/four-models.hmm", f"{data}/proteome.faa"]):
    try:
        main([*args, "--quiet"])
    except SystemExit as exc:
        assert not exc.code, (args, exc.code)

from gpu_search.blast import engine
from gpu_search.blast.options import BlastOptions
from gpu_search.blast.output import parse_outfmt
from gpu_search.seqdb import open_database
from gpu_search import warmup

db = open_database(f"{data}/proteome.faa", blast=True)
queries = open_database(f"{data}/blastp-queries.faa", blast=True)
fmt, columns = parse_outfmt("6")
for cbs in (0, 2):
    engine.run_blastp(queries, db, BlastOptions(num_threads=2, comp_based_stats=cbs), io.StringIO(), fmt=fmt,
                      columns=columns, db_name="proteome", quiet=True, device="gpu",
                      engine_types=warmup.gpu_stand_ins())
print("searched")
"""


def test_compile_leaves_nothing_for_a_search_to_compile(tmp_path):
    """`gpu-search compile` (run once after installing; an image's build runs it) makes every
    numba loop the searches use, blastp's GPU pipeline's included: searches on other inputs
    afterwards compile none."""
    from conftest import TEST_DATA

    env = dict(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    r = run_python("import sys; from gpu_search.cli import main; sys.argv[0] = 'gpu-search'; "
                   "main(['compile', '--arch', 'none', '--quiet'])", tmp_path, **env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert len(cached_loops(tmp_path / "cache")) > 50
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run([sys.executable, "-c", SEARCHES_AFTER_COMPILE, str(TEST_DATA)], capture_output=True,
                       text=True, cwd=work, env={**{k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")},
                                                 "PYTHONPATH": str(ROOT), **env})
    assert r.returncode == 0 and r.stdout.strip() == "searched", r.stderr
    compiled = (work / "compiles.txt").read_text() if (work / "compiles.txt").exists() else ""
    assert compiled == "", compiled


def test_a_first_run_is_told_from_numbas_cache(tmp_path):
    """not_compiled_here (blastp's note on a terminal that its first run compiles): true while the
    cache holds nothing of the function, false once it is compiled there."""
    code = ("from gpu_search import _fasta; from gpu_search._numba import not_compiled_here; import numpy; "
            "count_gt = _fasta.scanners()[0]; before = not_compiled_here(count_gt); "
            "count_gt(numpy.zeros(2, numpy.uint8)); print(before, not_compiled_here(count_gt))")
    r = run_python(code, tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    assert r.returncode == 0 and r.stdout.split() == ["True", "False"], r.stderr


def test_compile_names_the_runs_that_failed(tmp_path, monkeypatch):
    """A run of `gpu-search compile` that fails is named with its exit status and the last line
    it printed (the command turns that into one error line, exit 10)."""
    from gpu_search import warmup

    monkeypatch.setattr(warmup, "write_inputs", lambda work: None)     # no inputs: every search fails
    monkeypatch.setattr(warmup, "RUNS", [("a search of a missing file", ["blastp", "-query", "missing.faa",
                                                                         "-db", "missing.faa", "-out", "x.tsv"])])
    with pytest.raises(RuntimeError) as failed:
        warmup.compile_all(None, quiet=True)
    message = str(failed.value)
    assert "a search of a missing file (exit 3: gpu-search: error: " in message and "missing.faa" in message
    assert "blastp GPU pipeline (host loops), -comp_based_stats 0 (exit 1: " in message
