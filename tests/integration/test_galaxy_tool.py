"""The Galaxy wrapper: generated from gpu_search/galaxy.py, safe command line, real tests.

The live-Galaxy run of the tool's own tests is .ci/galaxy-test.sh.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

galaxyxml = pytest.importorskip("galaxyxml", reason="galaxyxml not installed (pip install 'gpu-search[galaxy]')")
Cheetah = pytest.importorskip("Cheetah.Template", reason="Cheetah (comes with galaxyxml) not installed")

import gpu_search  # noqa: E402
from gpu_search.galaxy import BLAST_EXT, BLAST_STD, COMMAND, tool_xml  # noqa: E402


def test_committed_tool_xml_is_generated():
    """tool.xml must be exactly what `gpu-search galaxy-xml` writes: run it after changing the CLI."""
    committed = (ROOT / "tool.xml").read_text()
    assert committed == tool_xml(), "tool.xml is stale: run `gpu-search galaxy-xml > tool.xml`"


def test_tool_xml_structure():
    from lxml import etree

    root = etree.fromstring(tool_xml().encode())
    assert root.get("id") == "gpu_search"
    assert root.find("command").get("detect_errors") == "aggressive"
    assert root.find("requirements/resource[@type='cuda_device_count_min']").text == "1"
    assert root.find("requirements/container").text
    assert root.find("version_command").text.strip() == "gpu-search --version"
    whens = {w.get("value") for w in root.findall("inputs/conditional/when")}
    assert whens >= {"hmmsearch", "phmmer", "jackhmmer", "hmmscan", "blastp"}
    searches = {w.get("value") for w in root.findall("inputs/conditional/when")
                if w.getparent().get("name") == "search"}
    assert searches == {"hmmsearch", "phmmer", "jackhmmer", "hmmscan", "blastp"}
    assert len(root.findall("tests/test")) >= 4
    assert len(root.findall("citations/citation")) >= 7
    for test in root.findall("tests/test"):       # expected files are there
        for out in test.findall("output"):
            assert (ROOT / "test-data" / out.get("file")).is_file(), out.get("file")
    cols = root.findall("outputs/data[@name='blast_out']/actions/conditional/when/action")
    assert {c.get("default") for c in cols} == {",".join(BLAST_STD.split()), ",".join(BLAST_EXT.split())}


HOSTILE = ['my data $(touch PWNED).faa', 'a"b`touch PWNED`;c.hmm', 'x; touch PWNED #.faa', "sp ace\t.faa"]


class _Params(dict):
    """What Galaxy's Cheetah namespace gives the template: nested parameters by attribute."""

    def __getattr__(self, name):
        return self[name]

    def __str__(self):
        return self.get("__str__", "")


class _Dataset(str):
    """A history dataset as the template sees it: its path, and its datatype's extension."""

    def __new__(cls, path: str, ext: str = "fasta"):
        dataset = super().__new__(cls, path)
        dataset.ext = ext
        return dataset


def render(search: dict, outputs: dict, env: dict) -> str:
    from Cheetah.Template import Template

    # (the input datasets: FASTA where a test does not say)
    search = {k: _Dataset(v) if k in ("query", "seqdb", "hmmfile") and not isinstance(v, _Dataset) else v
              for k, v in search.items()}
    ns = {"search": _Params(search), **outputs}
    text = str(Template(COMMAND, searchList=[ns]))
    # Galaxy runs the rendered command as one line (tools/evaluation.py)
    return text.replace("\n", " ").replace("\r", " ").strip()


GPU_ENVS = {  # the job's environment -> the device the command must ask for
    "no GPU granted": ({}, "cpu"),
    "Galaxy GPU destination": ({"GALAXY_GPU_ENABLED": "true"}, "auto"),
    "Slurm --gres=gpu:1": ({"CUDA_VISIBLE_DEVICES": "0"}, "auto"),
    "CUDA_VISIBLE_DEVICES empty": ({"CUDA_VISIBLE_DEVICES": ""}, "cpu"),
    "CUDA_VISIBLE_DEVICES=-1": ({"CUDA_VISIBLE_DEVICES": "-1"}, "cpu"),
}


def run_rendered(command: str, tmp_path: Path, job_env: dict, stderr_line: str = "", result: dict | None = None) -> list[str]:
    """Run the rendered command with a fake gpu-search that records its arguments (and writes
    ``stderr_line`` on its stderr); the job's stdout and stderr go into ``result``."""
    fake = tmp_path / "bin" / "gpu-search"
    fake.parent.mkdir()
    fake.write_text('#!/usr/bin/env python3\nimport sys, json\n'
                    f'print({stderr_line!r}, file=sys.stderr) if {stderr_line!r} else None\n'
                    'open(sys.argv[0] + ".argv", "w").write(json.dumps(sys.argv[1:]))\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {k: v for k, v in os.environ.items() if k not in ("GALAXY_GPU_ENABLED", "CUDA_VISIBLE_DEVICES")}
    env.update(PATH=f"{fake.parent}:{os.environ['PATH']}", GALAXY_SLOTS="3", **job_env)
    r = subprocess.run(["bash", "-e", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    if result is not None:
        result.update(stdout=r.stdout, stderr=r.stderr)
    import json

    return json.loads((fake.parent / "gpu-search.argv").read_text())


@pytest.mark.parametrize("job", GPU_ENVS)
def test_hmmsearch_command_quotes_everything(job, tmp_path):
    job_env, device = GPU_ENVS[job]
    adv = _Params(cutoffs="none", E="10.0", domE="10.0", incE="0.01", incdomE="0.01", F1="0.02", F2="0.001",
                  F3="1e-05", max="", nobias="--nobias", nonull2="--nonull2", Z="", domZ="", seed="42")
    search = dict(type="hmmsearch", hmmfile=HOSTILE[1], seqdb=HOSTILE[0],
                  outputs=_Params(__str__="tblout,domtblout,alignment"), adv=adv)
    outs = dict(output=HOSTILE[2], tblout=HOSTILE[3], domtblout="dom out.tsv", pfamtblout="unused",
                alignment="ali $(touch PWNED).sto")
    argv = run_rendered(render(search, outs, {}), tmp_path, job_env)
    assert not (tmp_path / "PWNED").exists()
    assert argv[0] == "hmmsearch"
    assert argv[argv.index("--device") + 1] == device
    assert argv[argv.index("--cpu") + 1] == "3"
    assert argv[argv.index("-o") + 1] == HOSTILE[2]
    assert argv[argv.index("--tblout") + 1] == HOSTILE[3]
    assert argv[argv.index("--domtblout") + 1] == "dom out.tsv"
    assert argv[argv.index("-A") + 1] == "ali $(touch PWNED).sto"
    assert "--pfamtblout" not in argv
    assert "--nobias" in argv and "--nonull2" in argv and "--max" not in argv
    assert argv[-2:] == [HOSTILE[1], HOSTILE[0]]


@pytest.mark.parametrize("type", ["hmmsearch", "phmmer", "jackhmmer", "hmmscan"])
def test_sequence_formats_named_by_datatype(type, tmp_path):
    """A query or database dataset of another of HMMER's formats is named to gpu-search by its
    datatype (Easel's name); a FASTA one is not."""
    adv = _Params(cutoffs="none", E="10.0", domE="10.0", incE="0.01", incdomE="0.01", F1="0.02", F2="0.001",
                  F3="1e-05", max="", nobias="", nonull2="", Z="", domZ="", seed="42", popen="0.02",
                  pextend="0.4", mx="BLOSUM62")
    for query_ext, db_ext in (("stockholm", "genbank"), ("fasta", "embl"), ("fasta.gz", "fasta")):
        search = dict(type=type, hmmfile="m.hmm", query=_Dataset("q.dat", query_ext), N="2",
                      seqdb=_Dataset("d.dat", db_ext), outputs=_Params(__str__="tblout"), adv=adv,
                      hmmdb_opts=_Params(hmmdb_opts_selector="file", hmmfile="m.hmm"))
        folder = tmp_path / f"{query_ext}-{db_ext}"
        folder.mkdir()
        argv = run_rendered(render(search, dict(output="o.txt", tblout="t.txt"), {}), folder, {})
        qformat = [argv[i + 1] for i, a in enumerate(argv) if a == "--qformat"]
        tformat = [argv[i + 1] for i, a in enumerate(argv) if a == "--tformat"]
        assert qformat == ([query_ext] if type != "hmmsearch" and query_ext == "stockholm" else []), argv
        assert tformat == ([db_ext] if type != "hmmscan" and db_ext in ("genbank", "embl") else []), argv


def test_phmmer_command_quotes_everything(tmp_path):
    """phmmer: the queries and database quoted, its scoring options passed, no --cut_* (phmmer
    has none), and the reporting thresholds always given."""
    adv = _Params(E="1e-3", domE="10.0", incE="0.01", incdomE="0.01", popen="0.1", pextend="0.5", mx="PAM70",
                  F1="0.02", F2="0.001", F3="1e-05", max="--max", nobias="", nonull2="", Z="5000", domZ="",
                  seed="7")
    search = dict(type="phmmer", query=HOSTILE[0], seqdb=HOSTILE[1], outputs=_Params(__str__="pfamtblout"),
                  adv=adv)
    outs = dict(output=HOSTILE[2], tblout="unused", domtblout="unused", pfamtblout=HOSTILE[3], alignment="unused")
    argv = run_rendered(render(search, outs, {}), tmp_path, {"GALAXY_GPU_ENABLED": "true"})
    assert not (tmp_path / "PWNED").exists()
    assert argv[0] == "phmmer" and argv[argv.index("--device") + 1] == "auto"
    assert argv[argv.index("-o") + 1] == HOSTILE[2]
    assert argv[argv.index("--pfamtblout") + 1] == HOSTILE[3]
    assert "--tblout" not in argv and "-A" not in argv and not any(a.startswith("--cut") for a in argv)
    assert [argv[argv.index(o) + 1] for o in ("-E", "--popen", "--pextend", "--mx", "-Z", "--seed")] == \
           ["1e-3", "0.1", "0.5", "PAM70", "5000", "7"]
    assert "--max" in argv and "--domZ" not in argv
    assert argv[-2:] == [HOSTILE[0], HOSTILE[1]]


def test_jackhmmer_command_quotes_everything(tmp_path):
    """jackhmmer: the queries and database quoted, -N and the first round's scoring options
    passed, no --cut_* and no --pfamtblout (jackhmmer has neither), the thresholds always given."""
    adv = _Params(E="1e-3", domE="10.0", incE="0.001", incdomE="1e-4", popen="0.1", pextend="0.5", mx="PAM70",
                  F1="0.02", F2="0.001", F3="1e-05", max="", nobias="--nobias", nonull2="", Z="", domZ="", seed="7")
    search = dict(type="jackhmmer", query=HOSTILE[0], seqdb=HOSTILE[1], N="4",
                  outputs=_Params(__str__="tblout,alignment"), adv=adv)
    outs = dict(output=HOSTILE[2], tblout=HOSTILE[3], domtblout="unused", pfamtblout="unused",
                alignment="ali $(touch PWNED).sto")
    argv = run_rendered(render(search, outs, {}), tmp_path, {"CUDA_VISIBLE_DEVICES": "0"})
    assert not (tmp_path / "PWNED").exists()
    assert argv[0] == "jackhmmer" and argv[argv.index("--device") + 1] == "auto"
    assert argv[argv.index("-o") + 1] == HOSTILE[2] and argv[argv.index("--tblout") + 1] == HOSTILE[3]
    assert argv[argv.index("-A") + 1] == "ali $(touch PWNED).sto"
    assert "--domtblout" not in argv and "--pfamtblout" not in argv and not any(a.startswith("--cut") for a in argv)
    assert [argv[argv.index(o) + 1] for o in ("-N", "-E", "--incE", "--incdomE", "--popen", "--pextend", "--mx",
                                               "--seed")] == ["4", "1e-3", "0.001", "1e-4", "0.1", "0.5", "PAM70", "7"]
    assert "--nobias" in argv and "-Z" not in argv
    assert argv[-2:] == [HOSTILE[0], HOSTILE[1]]


def test_jackhmmer_command_runs(tmp_path):
    """The rendered jackhmmer command (the tool's defaults, 3 rounds, as the tool's test runs
    it), run with the real gpu-search on the test data named as Galaxy names datasets, gives
    the rows and alignment of HMMER's jackhmmer in test-data (test-data/make.sh)."""
    import shutil
    import sys

    exe = tmp_path / "bin" / "gpu-search"      # this checkout's gpu-search, first on the job's PATH
    exe.parent.mkdir()
    exe.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m gpu_search "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    adv = _Params(E="10.0", domE="10.0", incE="0.001", incdomE="0.001", popen="0.02", pextend="0.4",
                  mx="BLOSUM62", F1="0.02", F2="0.001", F3="1e-05", max="", nobias="", nonull2="", Z="", domZ="",
                  seed="42")
    data = ROOT / "test-data"
    for k, name in enumerate(("blastp-queries.faa", "proteome.faa"), start=1):
        shutil.copyfile(data / name, tmp_path / f"dataset_{k}.dat")
    search = dict(type="jackhmmer", query=str(tmp_path / "dataset_1.dat"), seqdb=str(tmp_path / "dataset_2.dat"),
                  N="3", outputs=_Params(__str__="tblout,domtblout,alignment"), adv=adv)
    outs = {n: str(tmp_path / f"out.{n}") for n in ("output", "tblout", "domtblout", "pfamtblout", "alignment")}
    r = subprocess.run(["bash", "-e", "-c", render(search, outs, {})], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "GALAXY_SLOTS": "1", "PATH": f"{exe.parent}:{os.environ['PATH']}"})
    assert r.returncode == 0, r.stderr
    for n, suffix in (("tblout", "tblout"), ("domtblout", "domtblout")):
        rows = [line for line in Path(outs[n]).read_text().splitlines() if not line.startswith("#")]
        want = [line for line in (data / f"blastp-queries.jackhmmer.{suffix}").read_text().splitlines()
                if not line.startswith("#")]
        assert rows and rows == want, n
    ours = Path(outs["alignment"]).read_text().replace(f"; computed by gpu-search {gpu_search.__version__})", ")")
    assert ours == (data / "blastp-queries.jackhmmer.sto").read_text()
    report = Path(outs["output"]).read_text()
    assert report.count("@@ Round:") == (data / "blastp-queries.jackhmmer.out").read_text().count("@@ Round:") > 0


@pytest.mark.parametrize("source", ["history HMM file", "data table"])
def test_hmmscan_command_quotes_everything(source, tmp_path):
    """hmmscan: the HMM file of the history or the data table's pressed database first, then the
    queries, each quoted; the model cutoffs passed instead of the E-value thresholds; no -A."""
    adv = _Params(cutoffs="cut_tc", E="10.0", domE="10.0", incE="0.01", incdomE="0.01", F1="0.02",
                  F2="0.001", F3="1e-05", max="", nobias="--nobias", nonull2="", Z="", domZ="20", seed="42")
    if source == "history HMM file":
        hmmdb_opts = _Params(hmmdb_opts_selector="file", hmmfile=HOSTILE[1])
    else:           # an hmm_database row: the name given to hmmpress in its db_path column
        hmmdb_opts = _Params(hmmdb_opts_selector="db", database=_Params(fields=_Params(db_path=HOSTILE[1])))
    search = dict(type="hmmscan", query=HOSTILE[0], hmmdb_opts=hmmdb_opts,
                  outputs=_Params(__str__="tblout,domtblout,pfamtblout"), adv=adv)
    outs = dict(output=HOSTILE[2], tblout=HOSTILE[3], domtblout="dom out.tsv", pfamtblout="pfam $(touch PWNED)",
                alignment="unused")
    argv = run_rendered(render(search, outs, {}), tmp_path, {})
    assert not (tmp_path / "PWNED").exists()
    assert argv[0] == "hmmscan" and argv[argv.index("--device") + 1] == "cpu"
    assert argv[argv.index("--cpu") + 1] == "3"
    assert argv[argv.index("-o") + 1] == HOSTILE[2]
    assert argv[argv.index("--tblout") + 1] == HOSTILE[3]
    assert argv[argv.index("--domtblout") + 1] == "dom out.tsv"
    assert argv[argv.index("--pfamtblout") + 1] == "pfam $(touch PWNED)"
    assert "--cut_tc" in argv and "-E" not in argv and "--incE" not in argv and "-A" not in argv
    assert "--nobias" in argv and "-Z" not in argv and argv[argv.index("--domZ") + 1] == "20"
    assert argv[-2:] == [HOSTILE[1], HOSTILE[0]]


def test_hmmscan_command_runs(tmp_path):
    """The rendered hmmscan command, run with the real gpu-search on the test data (a history HMM
    file named as Galaxy names datasets, and the test table's pressed database), gives the rows of
    HMMER's hmmscan in test-data (test-data/make.sh)."""
    import shutil
    import sys

    exe = tmp_path / "bin" / "gpu-search"      # this checkout's gpu-search, first on the job's PATH
    exe.parent.mkdir()
    exe.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m gpu_search "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    adv = _Params(cutoffs="none", E="10.0", domE="10.0", incE="0.01", incdomE="0.01", F1="0.02", F2="0.001",
                  F3="1e-05", max="", nobias="", nonull2="", Z="", domZ="", seed="42")
    data = ROOT / "test-data"
    shutil.copyfile(data / "four-models.hmm", tmp_path / "dataset_1.dat")
    pressed = next(line.split("\t")[2] for line in (data / "hmm_database.loc").read_text().splitlines()
                   if line and not line.startswith("#")).replace("${__HERE__}", str(data))
    for i, hmmdb_opts in enumerate([_Params(hmmdb_opts_selector="file", hmmfile=str(tmp_path / "dataset_1.dat")),
                                    _Params(hmmdb_opts_selector="db", database=_Params(fields=_Params(
                                        db_path=pressed)))]):
        search = dict(type="hmmscan", query=str(data / "proteome.faa"), hmmdb_opts=hmmdb_opts,
                      outputs=_Params(__str__="tblout,domtblout,pfamtblout"), adv=adv)
        outs = {n: str(tmp_path / f"{i}.{n}") for n in ("output", "tblout", "domtblout", "pfamtblout")}
        r = subprocess.run(["bash", "-e", "-c", render(search, outs, {})], cwd=tmp_path, capture_output=True,
                           text=True, env={**os.environ, "GALAXY_SLOTS": "2",
                                                              "PATH": f"{exe.parent}:{os.environ['PATH']}"})
        assert r.returncode == 0, r.stderr
        for n in ("tblout", "domtblout", "pfamtblout"):
            rows = [line for line in Path(outs[n]).read_text().splitlines() if not line.startswith("#")]
            want = [line for line in (data / f"proteome.hmmscan.{n}").read_text().splitlines()
                    if not line.startswith("#")]
            assert rows == want, (i, n)


@pytest.mark.parametrize("source", ["history FASTA", "data table"])
def test_blastp_command_quotes_everything(source, tmp_path):
    adv = _Params(evalue="0.001", max_target_seqs="500", max_hsps="", dbsize="273033200", matrix="BLOSUM62",
                  comp_based_stats="2", word_size="3", threshold="", window_size="")
    if source == "history FASTA":
        db_opts = _Params(db_opts_selector="file", subject=HOSTILE[1])
    else:           # a blastdb_p row: the database's prefix in its path column
        db_opts = _Params(db_opts_selector="db", database=_Params(fields=_Params(path=HOSTILE[1])))
    search = dict(type="blastp", query=HOSTILE[0], db_opts=db_opts, outfmt=f"6 {BLAST_EXT}", adv=adv)
    argv = run_rendered(render(search, dict(blast_out=HOSTILE[2]), {}), tmp_path, {})
    assert not (tmp_path / "PWNED").exists()
    assert argv[0] == "blastp"
    assert argv[argv.index("-query") + 1] == HOSTILE[0]
    assert argv[argv.index("-db") + 1] == HOSTILE[1]
    assert argv[argv.index("-out") + 1] == HOSTILE[2]
    assert argv[argv.index("-outfmt") + 1] == f"6 {BLAST_EXT}"
    assert argv[argv.index("-dbsize") + 1] == "273033200"
    assert "-max_hsps" not in argv and "-threshold" not in argv and "-window_size" not in argv
    assert shlex.join(argv)   # a plain argument vector, nothing interpreted


def test_data_tables_name_the_table_the_tool_reads():
    """The sample and test data tables define the blastdb_p the tool's database select reads (the
    IUC BLAST+ columns); the test table's one database opens, the test proteome as makeblastdb
    made it."""
    from lxml import etree

    from gpu_search import blastdb, seqdb

    root = etree.fromstring(tool_xml().encode())
    assert [o.get("from_data_table") for o in root.iter("options")] == ["hmm_database", "blastdb_p"]
    for conf in ("tool_data_table_conf.xml.sample", "tool_data_table_conf.xml.test"):
        tables = {t.get("name"): t.find("columns").text for t in etree.parse(str(ROOT / conf)).findall("table")}
        assert tables == {"blastdb_p": "value, name, path", "hmm_database": "value, name, db_path"}
    rows = [line.split("\t") for line in (ROOT / "test-data" / "blastdb_p.loc").read_text().splitlines()
            if line and not line.startswith("#")]
    assert [r[0] for r in rows] == ["proteome"]
    path = rows[0][2].replace("${__HERE__}", str(ROOT / "test-data"))
    db = blastdb.read_blast_database(path)
    fasta = seqdb.read_fasta(ROOT / "test-data" / "proteome.faa")
    assert db.n_seqs == fasta.n_seqs == 300
    assert (db.residues == fasta.residues).all()


def test_hmm_database_table_is_the_pressed_test_models():
    """The test hmm_database table's one database is the four test models as hmmpress pressed them:
    its pressed files there (not the HMM file itself), read as hmmscan reads them, the models of
    test-data/four-models.hmm in its order."""
    from gpu_search.hmmer.hmmscan import PRESSED_SUFFIXES, open_hmmdb, pressed_base

    rows = [line.split("\t") for line in (ROOT / "test-data" / "hmm_database.loc").read_text().splitlines()
            if line and not line.startswith("#")]
    assert [r[0] for r in rows] == ["four_models"]
    path = rows[0][2].replace("${__HERE__}", str(ROOT / "test-data"))
    assert all(Path(path + s).is_file() for s in PRESSED_SUFFIXES) and not Path(path).exists()
    assert pressed_base(path) == path
    db = open_hmmdb(path)
    assert db.pressed
    names = [line.split()[1] for line in (ROOT / "test-data" / "four-models.hmm").read_text().splitlines()
             if line.startswith("NAME ")]
    assert [p.name for p in db.profiles] == names


def test_container_is_the_image_users_build():
    """The container is named as containers/Dockerfile's documented build names it; no registry
    path that nothing was published to; the help says how to build it."""
    from lxml import etree

    root = etree.fromstring(tool_xml().encode())
    name = root.find("requirements/container").text
    assert name == f"gpu-search:{gpu_search.__version__}"
    build = f"docker build -f containers/Dockerfile -t {name} ."
    assert build in (ROOT / "containers" / "Dockerfile").read_text()
    assert build in root.find("help").text
    for unpublished in ("quay.io", "ghcr.io", "oras://"):
        assert unpublished not in tool_xml()


def _galaxy_says(stdout: str, stderr: str, exit_code: int = 0) -> str:
    """What Galaxy decides of a job of this tool (detect_errors="aggressive") from its output."""
    from galaxy.tool_util.output_checker import check_output
    from galaxy.tool_util.parser.stdio import aggressive_error_checks

    exit_codes, regexes = aggressive_error_checks()
    return str(check_output(regexes, exit_codes, stdout, stderr, exit_code)[0].value)


# gpu-search's line when a job given a GPU cannot use it, with the reasons gpu_search/device.py gives
NO_USABLE_GPU = [
    "gpu-search: no usable GPU (CuPy is not installed (ModuleNotFoundError)); searching on the CPU, same results",
    "gpu-search: no usable GPU (no CUDA driver or GPU (cudaErrorNoDevice: no CUDA-capable device is detected)); "
    "searching on the CPU, same results",
    "gpu-search: no usable GPU (no CUDA driver or GPU (cudaErrorInsufficientDriver: CUDA driver version is "
    "insufficient for CUDA runtime version)); searching on the CPU, same results",
    "gpu-search: no usable GPU (no CUDA GPU visible); searching on the CPU, same results",
]


@pytest.mark.parametrize("job", ["no GPU granted", "Slurm --gres=gpu:1"])
@pytest.mark.parametrize("line", NO_USABLE_GPU)
def test_job_stderr_says_which_device_searched(job, line, tmp_path):
    """A job given no GPU says so on its stderr; a job given one that gpu-search cannot use shows
    gpu-search's own line there (the command discards nothing).  Galaxy keeps that stderr with the
    job's information, and its aggressive error patterns do not fail the job for these lines."""
    pytest.importorskip("galaxy.tool_util.output_checker", reason="galaxy-tool-util (comes with galaxyxml)")
    job_env, device = GPU_ENVS[job]
    adv = _Params(evalue="0.001", max_target_seqs="500", max_hsps="", dbsize="", matrix="BLOSUM62",
                  comp_based_stats="2", word_size="3", threshold="", window_size="")
    search = dict(type="blastp", query="q.faa", db_opts=_Params(db_opts_selector="file", subject="db.faa"),
                  outfmt=f"6 {BLAST_STD}", adv=adv)
    said = {}
    argv = run_rendered(render(search, dict(blast_out="out.tsv"), {}), tmp_path, job_env,
                        stderr_line=line if device == "auto" else "", result=said)
    assert argv[argv.index("--device") + 1] == device
    given_none = ("gpu-search: this job was given no GPU (neither GALAXY_GPU_ENABLED=true nor "
                  "CUDA_VISIBLE_DEVICES); searching on the CPU, same results")
    assert said["stderr"].splitlines() == ([given_none] if device == "cpu" else [line])
    assert _galaxy_says(said["stdout"], said["stderr"]) == "ok"
    # (the same patterns do fail a job on gpu-search's error lines)
    assert _galaxy_says("", "gpu-search: error: cannot read q.faa") != "ok"
