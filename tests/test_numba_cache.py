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

# compile one small loop of ours (FASTA scanning's whitespace test) and say where numba put it
COMPILE_ONE = ("from gpu_search import _fasta; assert _fasta._is_space(32); "
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
    assert any(name.startswith("_fasta._is_space") for name in cached_loops(private / "numba"))
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


def test_writable_configured_cache_is_used_as_it_is(tmp_path):
    r = run_python(COMPILE_ONE, tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "cache")
    assert any(name.startswith("_fasta._is_space") for name in cached_loops(tmp_path / "cache"))
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
