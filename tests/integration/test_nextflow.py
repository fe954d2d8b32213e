"""main.nf without Nextflow: its structure, and its processes' scripts run as tasks would run them.

Nextflow itself cannot be installed here (its launcher downloads a jar from a
host this machine cannot reach), so:

1. main.nf is parsed by the real Groovy compiler (Debian's groovy; Nextflow
   scripts are Groovy syntax) through tests/nextflow/nf_structure.groovy, and
   its processes are checked for the nf-core module conventions;
2. each process's ``script:`` block is rendered with test inputs (its ``def``
   lines and ``${...}`` substitutions evaluated by a small interpreter of the
   Groovy expressions it uses) and run with bash in a scratch folder where the
   inputs are staged as symbolic links, exactly as a Nextflow task runs;
3. the sharded workflow (makedb -> one search per shard -> merge) is replayed
   that way and its merged outputs compared with one unsharded search.

What is not verified here: Nextflow's own channel logic (workflow blocks),
the container directives and the profiles at run time (tests/main.nf.test,
for nf-test, covers those where Nextflow is installed).
"""

from __future__ import annotations

import fnmatch
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, TEST_DATA

MAIN_NF = ROOT / "main.nf"


def java_home() -> str | None:
    for cand in (os.environ.get("JAVA_HOME"), "/usr/lib/jvm/default-java", "/usr/lib/jvm/java-17-openjdk-amd64"):
        if cand and Path(cand, "bin", "java").exists():
            return cand
    java = shutil.which("java")
    return str(Path(java).resolve().parent.parent) if java else None


@pytest.fixture(scope="module")
def structure():
    groovy, jh = shutil.which("groovy"), java_home()
    if not groovy or not jh:
        pytest.skip("groovy or java not installed (apt-get install groovy): cannot parse main.nf")
    r = subprocess.run([groovy, str(ROOT / "tests" / "nextflow" / "nf_structure.groovy"), str(MAIN_NF)],
                       capture_output=True, text=True, env=dict(os.environ, JAVA_HOME=jh))
    assert r.returncode == 0, f"main.nf does not parse as Groovy:\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_processes_follow_nf_core_conventions(structure):
    procs = {p["name"]: p for p in structure["processes"]}
    assert {"GPU_HMMSEARCH", "GPU_BLASTP", "GPU_SEARCH_MAKEDB", "GPU_SEARCH_MERGE", "GPU_SEARCH_SPLIT", "GPU_HMMSCAN",
            "GPU_HMMSCAN_MERGE", "GPU_JACKHMMER"} <= set(procs)
    for name, p in procs.items():
        assert {"input", "output", "script", "stub"} <= set(p["sections"]), name
        assert "tag" in p["directives"] and "label" in p["directives"], name
        assert "container" in p["directives"], name
        assert "versions" in p["topics"], name
        # nf-core's switch: a task runs unless its ext.when is set false
        assert p["when"] == "((task.ext.when == null) || task.ext.when)", name
        assert p["params"] == [], f"{name} reads params: a module takes what it needs as inputs"
    for name in ("GPU_HMMSEARCH", "GPU_BLASTP", "GPU_JACKHMMER", "GPU_HMMSCAN"):
        assert procs[name]["directives"]["label"] == "(process_gpu)"
        # the GPU comes from the gpu profile (nextflow.config), so that without it the CPU is used
        assert "accelerator" not in procs[name]["directives"]
    assert procs["GPU_HMMSEARCH"]["emits"] == ["output", "target_summary", "domain_summary", "hits", "stderr"]
    assert procs["GPU_BLASTP"]["emits"] == ["tsv", "hits", "stderr"]
    assert procs["GPU_HMMSCAN"]["emits"] == ["output", "target_summary", "domain_summary", "stderr"]
    # jackhmmer: nf-core hmmsearch's emits (the alignment optional, as write_align asks) and the stderr
    assert procs["GPU_JACKHMMER"]["emits"] == ["output", "target_summary", "domain_summary", "alignments", "stderr"]
    assert procs["GPU_JACKHMMER"]["inputs"][2:] == ["this.val(rounds)", "this.val(write_align)"]
    assert "this.tuple([emit:alignments, optional:true], this.val(meta), this.path(*.sto.gz))" in \
        procs["GPU_JACKHMMER"]["outputs"]
    assert "this.val(outfmt)" in procs["GPU_BLASTP"]["inputs"] and "this.val(outfmt)" in procs["GPU_SEARCH_MERGE"]["inputs"]
    # the merged outputs are found by the glob whatever ext.prefix names them
    assert "this.tuple([emit:merged], this.val(meta), this.path(*.merged.*))" in procs["GPU_SEARCH_MERGE"]["outputs"]
    assert "container_for" in structure["functions"]
    names = {w["name"] for w in structure["workflows"]}
    assert "SHARDED_SEARCH" in names and "" in names        # a named sub-workflow and the entry workflow
    sharded = next(w for w in structure["workflows"] if w["name"] == "SHARDED_SEARCH")
    assert {"take", "main", "emit"} <= set(sharded["labels"])
    # reusable: everything it needs is taken, nothing read from params (as a test with no params.db)
    assert sharded["take"] == ["db", "n_shards", "search", "query", "outfmt", "write_align"]
    assert sharded["params"] == []
    entry = next(w for w in structure["workflows"] if w["name"] == "")
    assert "outfmt" in entry["params"]


def test_container_and_device_choices_in_text():
    text = MAIN_NF.read_text()
    fn = text[text.index("def container_for"):text.index("process GPU_SEARCH_MAKEDB")]
    assert "workflow.containerEngine in ['singularity', 'apptainer'] ? params.sif : params.container" in fn
    # images a user builds (containers/Dockerfile), named as the build names them; no registry
    # path that nothing was published to
    assert "params.container = 'gpu-search:0.1.0'" in text
    assert "docker build -f containers/Dockerfile -t gpu-search:0.1.0 ." in text
    for unpublished in ("quay.io", "ghcr.io", "oras://"):
        assert unpublished not in text and unpublished not in (ROOT / "nextflow.config").read_text()
    assert "def device = task.accelerator ? 'auto' : 'cpu'" in text
    assert text.count("task.ext.args ?: ''") >= 4
    config = (ROOT / "nextflow.config").read_text()
    for profile in ("docker", "singularity", "apptainer", "gpu", "slurm", "test"):
        assert re.search(rf"^\s*{profile}\s*{{", config, re.M), profile
    assert "--gpus all" in config and "--nv" in config


def _profile(config: str, name: str) -> str:
    """The text of one profile of nextflow.config (its braces balanced)."""
    start = re.search(rf"^\s*{name}\s*{{", config, re.M).end()
    depth, i = 1, start
    while depth:
        depth += {"{": 1, "}": -1}.get(config[i], 0)
        i += 1
    return config[start:i - 1]


def test_gpu_only_with_the_gpu_profile_and_each_task_its_own():
    config = (ROOT / "nextflow.config").read_text()
    gpu, slurm = _profile(config, "gpu"), _profile(config, "slurm")
    assert re.search(r"withLabel: 'process_gpu' \{\s*accelerator = 1", gpu)
    # the scheduler's choice of GPU reaches the container (Docker passes no host variable otherwise)
    for engine in ("docker", "singularity", "apptainer"):
        assert re.search(rf"{engine}\.envWhitelist\s*=\s*'CUDA_VISIBLE_DEVICES'", gpu), engine
    # Slurm is asked for a GPU only by tasks that have an accelerator (the gpu profile)
    assert "--gres=gpu:1" not in slurm
    assert re.search(r"task\.accelerator \? .*--gres=gpu:\$\{task\.accelerator\.request\}", slurm)
    assert "accelerator" not in _profile(config, "test")


# --- rendering script blocks ------------------------------------------------------------------


def _split_ternary(expr: str):
    """Top-level ``cond ? a : b`` of a Groovy expression (quotes respected), or None."""
    depth, quote, q_at = 0, None, None
    for i, ch in enumerate(expr):
        if quote:
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == "?" and expr[i + 1:i + 2] != ":" and expr[i - 1:i] != "?":
            q_at = i
        elif depth == 0 and ch == ":" and q_at is not None and expr[i - 1:i] != "?":
            return expr[:q_at], expr[q_at + 1:i], expr[i + 1:]
    return None


def groovy_eval(expr: str, ns: dict):
    """Evaluate the small subset of Groovy the script blocks use."""
    expr = expr.strip()
    tern = _split_ternary(expr)
    if tern:
        cond, a, b = tern
        return groovy_eval(a, ns) if groovy_eval(cond, ns) else groovy_eval(b, ns)
    if "?:" in expr:
        left, right = expr.split("?:", 1)
        return groovy_eval(left, ns) or groovy_eval(right, ns)
    if expr.startswith('"') and expr.endswith('"'):
        return render_gstring(expr[1:-1], ns)
    if expr.startswith("'") and expr.endswith("'"):
        return expr[1:-1]
    return eval(expr, {}, ns)   # attribute access, ==, literals


def render_gstring(text: str, ns: dict) -> str:
    return re.sub(r"\$\{([^}]*)\}", lambda m: str(groovy_eval(m.group(1), ns)), text)


def script_block(process: str, section: str = "script") -> tuple[list[str], str]:
    """The ``def`` lines and the triple-quoted command of a process's script (or stub) section."""
    text = MAIN_NF.read_text()
    body = text[text.index(f"process {process} {{"):]
    body = body[: body.index("\n}\n")]
    part = body[body.index(f"    {section}:"):]
    defs_text, rest = part.split('"""', 1)
    command = rest.split('"""', 1)[0]
    defs, current = [], ""
    for line in defs_text.splitlines()[1:]:
        if line.strip().startswith("//"):
            continue
        if line.strip().startswith("def "):
            if current:
                defs.append(current)
            current = line.strip()[4:]
        elif current and line.strip():
            current += " " + line.strip()
    if current:
        defs.append(current)
    return defs, command


def run_task(process: str, workdir: Path, inputs: dict, cpus=2, ext_args="", accelerator=None, section="script",
             env=None, prefix=None):
    """Render and run a process's script block in ``workdir`` as its task would; the task's stderr."""
    workdir.mkdir(parents=True, exist_ok=True)
    ns = {}
    for name, value in inputs.items():
        if isinstance(value, Path):
            link = workdir / value.name
            if not link.exists():
                link.symlink_to(value)
            ns[name] = value.name
        elif isinstance(value, list):
            for v in value:
                if not (workdir / v.name).exists():
                    (workdir / v.name).symlink_to(v)
            ns[name] = " ".join(v.name for v in value)
        else:
            ns[name] = value
    ns["task"] = SimpleNamespace(cpus=cpus, accelerator=accelerator, process=process,
                                 ext=SimpleNamespace(args=ext_args, prefix=prefix))
    defs, command = script_block(process, section)
    for d in defs:
        name, expr = d.split("=", 1)
        ns[name.strip()] = groovy_eval(expr, ns)
    script = render_gstring(command, ns).replace("\\\\", "\\").replace("\\$", "$")
    (workdir / ".command.sh").write_text(script)
    env = {**os.environ, "PATH": f"{ROOT / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT), **(env or {})}
    # Nextflow's default shell: bash -ue (no pipefail)
    r = subprocess.run(["bash", "-ue", ".command.sh"], cwd=workdir, capture_output=True, text=True, env=env)
    assert r.returncode == 0, f"{process} failed:\n{script}\n{r.stderr}"
    return script, r.stderr


def data_lines(path: Path) -> list[str]:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return [l for l in fh.read().splitlines() if l and not l.startswith("#")]


def merged_meta(meta):
    """The merge's meta as SHARDED_SEARCH makes it: the database's meta, with the search."""
    return SimpleNamespace(id=meta.id, search=meta.search)


def test_sharded_hmmsearch_tasks_equal_unsharded(tmp_path):
    db_meta = SimpleNamespace(id="proteome", search="hmmsearch")
    run_task("GPU_SEARCH_MAKEDB", tmp_path / "makedb", {"meta": db_meta, "fasta": TEST_DATA / "proteome.faa",
                                                        "n_shards": 3})
    shards = sorted((tmp_path / "makedb").glob("*.gsdb"))
    assert len(shards) == 3
    hits = []
    for shard in shards:
        wd = tmp_path / shard.stem
        script, _ = run_task("GPU_HMMSEARCH", wd, {"meta": SimpleNamespace(id=shard.stem, search="hmmsearch"),
                                                   "hmmfile": TEST_DATA / "four-models.hmm", "seqdb": shard},
                             ext_args="-E 100")
        assert "--device cpu" in script and "--cpu 2" in script
        hits.append(wd / f"{shard.stem}.gshits")
        assert (wd / f"{shard.stem}.tbl.gz").exists() and (wd / f"{shard.stem}.domtbl.gz").exists()
    random.Random(1).shuffle(hits)                       # the order merge gets them in does not matter
    # a prefix other than the meta's id: the output glob still finds the merged files
    run_task("GPU_SEARCH_MERGE", tmp_path / "merge", {"meta": merged_meta(db_meta), "hits": hits,
                                                      "outfmt": "6 std", "write_align": True}, prefix="whole-db")
    merged = sorted(p.name for p in (tmp_path / "merge").iterdir() if fnmatch.fnmatch(p.name, "*.merged.*"))
    assert merged == ["whole-db.merged.domtbl", "whole-db.merged.sto", "whole-db.merged.tbl", "whole-db.merged.txt"]
    # one unsharded search, same options
    whole = tmp_path / "whole"
    whole.mkdir()
    subprocess.run([sys.executable, "-m", "gpu_search", "hmmsearch", "--quiet", "--device", "cpu", "-E", "100",
                    "--tblout", str(whole / "t.tbl"), "--domtblout", str(whole / "t.domtbl"), "-o", os.devnull,
                    "-A", str(whole / "t.sto"),
                    str(TEST_DATA / "four-models.hmm"), str(TEST_DATA / "proteome.faa")],
                   check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert data_lines(tmp_path / "merge" / "whole-db.merged.tbl") == data_lines(whole / "t.tbl")
    assert data_lines(tmp_path / "merge" / "whole-db.merged.domtbl") == data_lines(whole / "t.domtbl")
    assert len(data_lines(whole / "t.tbl")) > 10
    # write_align: the merged alignment is the one search's
    assert (tmp_path / "merge" / "whole-db.merged.sto").read_text() == (whole / "t.sto").read_text()
    assert (whole / "t.sto").read_text().count("# STOCKHOLM 1.0") >= 2


def test_sharded_phmmer_tasks_equal_unsharded(tmp_path):
    """--search phmmer: GPU_HMMSEARCH runs phmmer with the query FASTA (meta.search), the merge
    writes phmmer's outputs; each equal to one unsharded phmmer run's, apart from the lines
    naming the database and files, the times and the command line."""
    db_meta = SimpleNamespace(id="proteome", search="phmmer")
    run_task("GPU_SEARCH_MAKEDB", tmp_path / "makedb", {"meta": db_meta, "fasta": TEST_DATA / "proteome.faa",
                                                        "n_shards": 3})
    hits = []
    for shard in sorted((tmp_path / "makedb").glob("*.gsdb")):
        wd = tmp_path / shard.stem
        script, _ = run_task("GPU_HMMSEARCH", wd, {"meta": SimpleNamespace(id=shard.stem, search="phmmer"),
                                                   "hmmfile": TEST_DATA / "blastp-queries.faa", "seqdb": shard},
                             ext_args="-E 20 --max")      # weak hits too, in every shard
        assert "gpu-search phmmer" in script and "--hits-out" in script
        hits.append(wd / f"{shard.stem}.gshits")
    run_task("GPU_SEARCH_MERGE", tmp_path / "merge", {"meta": merged_meta(db_meta), "hits": hits[::-1],
                                                      "outfmt": "6 std", "write_align": True})
    whole = tmp_path / "whole"
    whole.mkdir()
    subprocess.run([sys.executable, "-m", "gpu_search", "phmmer", "--quiet", "--device", "cpu", "-E", "20", "--max",
                    "--tblout", str(whole / "t.tbl"), "--domtblout", str(whole / "t.domtbl"),
                    "-o", str(whole / "t.txt"), "-A", str(whole / "t.sto"),
                    str(TEST_DATA / "blastp-queries.faa"), str(TEST_DATA / "proteome.faa")],
                   check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    merged = tmp_path / "merge"
    assert data_lines(merged / "proteome.merged.tbl") == data_lines(whole / "t.tbl")
    assert data_lines(merged / "proteome.merged.domtbl") == data_lines(whole / "t.domtbl")
    assert len(data_lines(whole / "t.tbl")) > 5
    assert "# Program:         phmmer" in (merged / "proteome.merged.tbl").read_text()
    assert (merged / "proteome.merged.sto").read_text() == (whole / "t.sto").read_text()
    differ = ("# query sequence file:", "# target sequence database:", "# output directed to file:",
              "# MSA of hits saved to file:",
              "# per-seq hits tabular output:", "# per-dom hits tabular output:", "# CPU time:", "# Mc/sec:",
              "# Alignment of ")

    def report(path):
        return [l for l in path.read_text().splitlines() if not l.startswith(differ)]
    assert report(merged / "proteome.merged.txt") == report(whole / "t.txt")
    assert report(whole / "t.txt")[0] == "# phmmer :: search a protein sequence against a protein database"
    assert (whole / "t.txt").read_text().count("\nQuery:       ") == 3
    # the entry workflow takes --queries for phmmer, and refuses a search it does not know
    entry = MAIN_NF.read_text()
    entry = entry[entry.index("\nworkflow {"):]
    assert "params.search in ['phmmer', 'blastp'] ? params.queries : params.hmm" in entry
    assert "params.search in ['hmmsearch', 'phmmer', 'blastp', 'hmmscan', 'jackhmmer']" in entry


def _hmmscan_parts(tmp_path: Path, queries: Path, n_parts: int, hmmdb: list[Path], name: str, ext_args=""):
    """SHARDED_HMMSCAN replayed: GPU_SEARCH_SPLIT cuts the queries, GPU_HMMSCAN searches each part
    against the database's files, GPU_HMMSCAN_MERGE puts the parts' outputs together in part order;
    the merge's folder and the parts."""
    meta = SimpleNamespace(id="queries")
    run_task("GPU_SEARCH_SPLIT", tmp_path / "split", {"meta": meta, "fasta": queries, "n_parts": n_parts})
    parts = sorted((tmp_path / "split").glob("queries.part*.faa"))
    outs = {"reports": [], "tbls": [], "domtbls": []}
    for part in parts:
        wd = tmp_path / part.stem
        script, _ = run_task("GPU_HMMSCAN", wd, {"meta": SimpleNamespace(id=part.stem), "seqfile": part,
                                                 "meta2": SimpleNamespace(id=name), "hmmdb": hmmdb},
                             ext_args=ext_args)
        assert "gpu-search hmmscan" in script and "--device cpu" in script
        for key, suffix in (("reports", "out"), ("tbls", "tbl"), ("domtbls", "domtbl")):
            outs[key].append(wd / f"{part.stem}.{suffix}")
    run_task("GPU_HMMSCAN_MERGE", tmp_path / "merge", {"meta": meta, **outs})
    return tmp_path / "merge", parts


@pytest.mark.parametrize("n_parts", [1, 3, 7, 12])
def test_hmmscan_parts_equal_one_run(tmp_path, n_parts):
    """--search hmmscan: the queries cut into parts (contiguous, in order, each line as it was),
    each part searched against the whole database, the parts' report and tables put together:
    each equal to one hmmscan run of all the queries, apart from the lines naming files, the
    command line, the date and the times.  The database pressed (its HMM file not there), with
    weak hits (-E 100 --max) so that every part has rows; 7 and 12 parts: parts of unequal sizes
    and the part numbers' zero padding (part01 ... part12)."""
    pressed = sorted((TEST_DATA / "hmmdb").glob("four-models.hmm.h3?"))
    assert len(pressed) == 4
    queries = tmp_path / "q.faa.gz"
    import gzip

    proteome = (TEST_DATA / "proteome.faa").read_bytes()
    starts = [i for i in range(len(proteome)) if proteome.startswith(b">", i) and (i == 0 or proteome[i - 1] == 10)]
    queries.write_bytes(gzip.compress(proteome[:starts[40]]))       # the first 40 proteins
    merged, parts = _hmmscan_parts(tmp_path, queries, n_parts, pressed, "four-models.hmm", ext_args="-E 100 --max")
    assert len(parts) == n_parts
    text = gzip.decompress(queries.read_bytes()).decode()
    assert "".join(p.read_text() for p in parts) == text
    whole = tmp_path / "whole"
    whole.mkdir()
    subprocess.run([sys.executable, "-m", "gpu_search", "hmmscan", "--quiet", "--device", "cpu", "-E", "100", "--max",
                    "--tblout", str(whole / "t.tbl"), "--domtblout", str(whole / "t.domtbl"), "-o", str(whole / "t.txt"),
                    str(TEST_DATA / "hmmdb" / "four-models.hmm"), str(queries)],
                   check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    differ = ("# query sequence file:", "# target HMM database:", "# output directed to file:",
              "# per-seq hits tabular output:", "# per-dom hits tabular output:", "# number of worker threads:",
              "# CPU time:", "# Mc/sec:", "# Query file:", "# Target file:", "# Option settings:", "# Current dir:",
              "# Date:")

    def lines(path):
        return [l for l in path.read_text().splitlines() if not l.startswith(differ)]
    for suffix in ("txt", "tbl", "domtbl"):
        assert lines(merged / f"queries.merged.{suffix}") == lines(whole / f"t.{suffix}"), suffix
    assert text.count(">") == 40 and (whole / "t.txt").read_text().count("\nQuery:       ") == text.count(">")
    assert len(data_lines(whole / "t.domtbl")) > 30


def test_hmmscan_split_of_a_file_without_sequences(tmp_path):
    """A query file without sequences is passed on as one part, for hmmscan to refuse with its own
    one-line message and exit code (4, empty input)."""
    empty = tmp_path / "empty.faa"
    empty.write_text("")
    run_task("GPU_SEARCH_SPLIT", tmp_path / "split", {"meta": SimpleNamespace(id="q"), "fasta": empty, "n_parts": 4})
    assert [p.name for p in (tmp_path / "split").glob("q.part*")] == ["q.part1.faa"]
    r = subprocess.run([sys.executable, "-m", "gpu_search", "hmmscan", "--quiet", str(TEST_DATA / "four-models.hmm"),
                        str(tmp_path / "split" / "q.part1.faa")], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1


def test_hmmscan_entry_workflow(structure):
    """The entry workflow runs SHARDED_HMMSCAN for --search hmmscan with --queries and --hmm (its
    HMM file and pressed files, those that exist), and needs no --db for it."""
    entry = MAIN_NF.read_text()
    entry = entry[entry.index("\nworkflow {"):]
    hmmscan, others = entry.split("} else {")
    hmmscan = hmmscan.split("} else if (params.search == 'jackhmmer') {")[0]
    assert "SHARDED_HMMSCAN(queries, [[id: file(params.hmm).name], hmm_files], params.shards)" in hmmscan
    assert "['', '.h3m', '.h3i', '.h3f', '.h3p'].collect { file(params.hmm + it) }.findAll { it.exists() }" in hmmscan
    assert "params.db" not in hmmscan and "params.db" in others
    sharded = next(w for w in structure["workflows"] if w["name"] == "SHARDED_HMMSCAN")
    assert sharded["take"] == ["queries", "hmmdb", "n_parts"] and sharded["params"] == []


# --- jackhmmer: one task over the whole database ------------------------------------------------

# the lines of jackhmmer's report and tables that name files, the command line, the folder and the
# date: they differ between the task and a run elsewhere with the same options
JACKHMMER_DIFFER = ("# query sequence file:", "# target sequence database:", "# output directed to file:",
                    "# MSA of hits saved to file:", "# per-seq hits tabular output:",
                    "# per-dom hits tabular output:", "# Alignment of ", "# CPU time:", "# Mc/sec:",
                    "# Query file:", "# Target file:", "# Option settings:", "# Current dir:", "# Date:")


def _gunzip_lines(path: Path) -> list[str]:
    import gzip

    with gzip.open(path, "rt") as fh:
        return fh.read().splitlines()


def _some_proteins(out: Path, picks=(0, 9, 75, 150, 225), gz=False) -> Path:
    """A few proteins of the test proteome, as they are there (plain or gzipped)."""
    import gzip

    proteome = (TEST_DATA / "proteome.faa").read_text()
    records = [">" + r for r in proteome[1:].split("\n>")]
    text = "".join(r if r.endswith("\n") else r + "\n" for r in (records[i] for i in picks))
    if gz:
        out.write_bytes(gzip.compress(text.encode()))
    else:
        out.write_text(text)
    return out


def makeblastdb_folder(fasta: Path, tmp_path: Path) -> Path:
    """A folder holding the BLAST database makeblastdb makes of ``fasta``, as nf-core's
    makeblastdb module gives it (skips the test where BLAST+ is not installed)."""
    if shutil.which("makeblastdb") is None:
        pytest.skip("makeblastdb (BLAST+) not installed")
    (tmp_path / "blastdb").mkdir()
    subprocess.run(["makeblastdb", "-in", str(fasta), "-dbtype", "prot", "-out", str(tmp_path / "blastdb" / "proteome")],
                   check=True, capture_output=True)
    return tmp_path / "blastdb"


@pytest.mark.parametrize("source, write_align, ext_args, accelerator", [
    ("fasta", True, "", None),
    ("gsdb", False, "--incE 0.01 --incdomE 0.01", None),
    ("makeblastdb folder", True, "-E 1", None),
    ("fasta.gz", True, "", 1),
])
def test_jackhmmer_task_equals_one_run(tmp_path, source, write_align, ext_args, accelerator):
    """--search jackhmmer: GPU_JACKHMMER runs gpu-search jackhmmer on the whole database (FASTA,
    gzipped FASTA, a .gsdb from makedb, a BLAST database's folder) with -N from params.rounds and -A
    where write_align asks; its gzipped report, tables and alignment equal one gpu-search jackhmmer
    run's with the same options, apart from the lines naming files, the command line, the folder
    and the date.  Five proteins of the test proteome against all of it, two rounds; a task given
    a GPU (accelerator) runs with --device auto, with the same results."""
    queries = _some_proteins(tmp_path / ("queries.faa.gz" if source == "fasta.gz" else "queries.faa"),
                             gz=source == "fasta.gz")
    db = TEST_DATA / "proteome.faa"
    if source == "gsdb":
        (tmp_path / "db").mkdir()
        subprocess.run([sys.executable, "-m", "gpu_search", "makedb", "-o", str(tmp_path / "db" / "proteome.gsdb"),
                        str(db)], check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        db = tmp_path / "db" / "proteome.gsdb"
    elif source == "makeblastdb folder":
        db = makeblastdb_folder(db, tmp_path)
    wd = tmp_path / "task"
    script, _ = run_task("GPU_JACKHMMER", wd, {"meta": SimpleNamespace(id="queries"), "seqfile": queries,
                                               "meta2": SimpleNamespace(id="proteome"), "seqdb": db,
                                               "rounds": 2, "write_align": write_align},
                         ext_args=ext_args, accelerator=accelerator)
    assert "gpu-search jackhmmer" in script and "-N 2" in script and "--cpu 2" in script
    assert f"--device {'auto' if accelerator else 'cpu'}" in script
    assert ("-A queries.sto" in script) == write_align
    made = sorted(p.name for p in wd.iterdir() if not p.name.startswith(".") and not p.is_symlink())
    assert made == sorted(["queries.txt.gz", "queries.tbl.gz", "queries.domtbl.gz", "queries.stderr.txt"]
                          + (["queries.sto.gz"] if write_align else []))
    # one gpu-search jackhmmer run, same options, outputs elsewhere
    whole = tmp_path / "whole"
    whole.mkdir()
    subprocess.run([sys.executable, "-m", "gpu_search", "jackhmmer", "-N", "2", "--quiet", "--device", "cpu",
                    *ext_args.split(), "-o", str(whole / "t.txt"), "--tblout", str(whole / "t.tbl"),
                    "--domtblout", str(whole / "t.domtbl"), "-A", str(whole / "t.sto"), str(queries), str(db)],
                   check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))

    def lines(text_lines):
        return [l for l in text_lines if not l.startswith(JACKHMMER_DIFFER)]
    for suffix in ("txt", "tbl", "domtbl"):
        assert lines(_gunzip_lines(wd / f"queries.{suffix}.gz")) == lines((whole / f"t.{suffix}").read_text().splitlines()), suffix
    if write_align:
        assert _gunzip_lines(wd / "queries.sto.gz") == (whole / "t.sto").read_text().splitlines()
    report = (whole / "t.txt").read_text()
    assert report.startswith("# jackhmmer :: iteratively search a protein sequence against a protein database")
    assert report.count("\nQuery:       ") == 5 and "@@ Round:                  2" in report
    assert "@@ Round:                  3" not in report
    assert len(data_lines(whole / "t.tbl")) > 10


def test_jackhmmer_task_gives_hmmers_rows(tmp_path):
    """GPU_JACKHMMER with the options of test-data/make.sh (three rounds of test-data's three
    queries against the test proteome, defaults otherwise): the rows of HMMER 3.4's jackhmmer
    (both tables) and its alignment; the report's rounds as many as HMMER's."""
    wd = tmp_path / "task"
    run_task("GPU_JACKHMMER", wd, {"meta": SimpleNamespace(id="blastp-queries"),
                                   "seqfile": TEST_DATA / "blastp-queries.faa",
                                   "meta2": SimpleNamespace(id="proteome"), "seqdb": TEST_DATA / "proteome.faa",
                                   "rounds": 3, "write_align": True})
    import gpu_search

    for suffix in ("tbl", "domtbl"):
        rows = [l for l in _gunzip_lines(wd / f"blastp-queries.{suffix}.gz") if not l.startswith("#")]
        assert rows and rows == data_lines(TEST_DATA / f"blastp-queries.jackhmmer.{suffix}out"), suffix
    ours = "\n".join(_gunzip_lines(wd / "blastp-queries.sto.gz")) + "\n"
    assert ours.replace(f"; computed by gpu-search {gpu_search.__version__})", ")") == \
        (TEST_DATA / "blastp-queries.jackhmmer.sto").read_text()
    rounds = "\n".join(_gunzip_lines(wd / "blastp-queries.txt.gz")).count("@@ Round:")
    assert rounds == (TEST_DATA / "blastp-queries.jackhmmer.out").read_text().count("@@ Round:") > 0


def test_jackhmmer_task_refuses_a_shard(tmp_path):
    """A shard as --db: gpu-search jackhmmer refuses it (exit 2), and the task fails with its
    message on the task's stderr (each round's model needs the whole database's hits)."""
    run_task("GPU_SEARCH_MAKEDB", tmp_path / "makedb", {"meta": SimpleNamespace(id="proteome"),
                                                        "fasta": TEST_DATA / "proteome.faa", "n_shards": 2})
    shard = sorted((tmp_path / "makedb").glob("*.gsdb"))[0]
    with pytest.raises(AssertionError, match="jackhmmer needs the whole database"):
        run_task("GPU_JACKHMMER", tmp_path / "task", {"meta": SimpleNamespace(id="q"),
                                                      "seqfile": TEST_DATA / "blastp-queries.faa",
                                                      "meta2": SimpleNamespace(id="proteome"), "seqdb": shard,
                                                      "rounds": 2, "write_align": False})


def test_jackhmmer_entry_workflow(structure):
    """The entry workflow runs GPU_JACKHMMER for --search jackhmmer, once, with --queries, the whole
    --db, params.rounds (jackhmmer's default, 5) and params.write_align; it warns where a task given
    a GPU could not use it, as SHARDED_SEARCH does; nothing is cut or merged."""
    text = MAIN_NF.read_text()
    assert re.search(r"^params\.rounds\s*=\s*5\s", text, re.M)
    entry = text[text.index("\nworkflow {"):]
    jack = entry[entry.index("} else if (params.search == 'jackhmmer') {"):]
    jack = jack[:jack.index("} else {")]
    assert ("GPU_JACKHMMER(queries, [[id: db_id(params.db)], file(params.db, checkIfExists: true)], params.rounds, "
            "params.write_align)") in jack
    assert "error \"--search jackhmmer: give --queries (protein FASTA) and --db" in jack
    assert "GPU_JACKHMMER.out.stderr" in jack and ".filter { meta, txt -> txt.text.contains('no usable GPU') }" in jack
    for other in ("MAKEDB", "MERGE", "SPLIT", "params.shards"):
        assert other not in jack
    assert {"rounds", "write_align", "queries", "db"} <= set(next(w for w in structure["workflows"] if w["name"] == "")["params"])


def _search_check(search: str) -> subprocess.CompletedProcess:
    """The entry workflow's first line, the check of --search, run by Groovy with params.search."""
    entry = MAIN_NF.read_text()
    entry = entry[entry.index("\nworkflow {"):]
    check = next(l for l in entry.splitlines() if "params.search in [" in l and "error" in l)
    script = ("def params = [search: " + json.dumps(search) + "]\n"
              "def error = { String msg -> System.err.println('ERROR ~ ' + msg); System.exit(1) }\n"
              + check.strip() + "\nprintln 'accepted'\n")
    return subprocess.run([shutil.which("groovy"), "-e", script], capture_output=True, text=True,
                          env=dict(os.environ, JAVA_HOME=java_home()))


def test_search_check_accepts_jackhmmer_and_names_it_when_refusing(structure):
    """--search jackhmmer passes the entry workflow's check; a search it does not know stops the run
    with the message that lists the five searches (as docs/workflows.md says them)."""
    for search in ("hmmsearch", "phmmer", "blastp", "hmmscan", "jackhmmer"):
        r = _search_check(search)
        assert r.returncode == 0 and r.stdout.strip() == "accepted", (search, r.stderr)
    for wrong in ("jackhmer", "psiblast", "JACKHMMER"):
        r = _search_check(wrong)
        assert r.returncode == 1
        assert r.stderr.strip() == f"ERROR ~ --search {wrong}: give hmmsearch, phmmer, blastp, hmmscan or jackhmmer"
    assert "`--search X: give hmmsearch, phmmer, blastp, hmmscan or jackhmmer`" in (ROOT / "docs" / "workflows.md").read_text()


def nf_test_text(path: Path, n_inputs: int, min_tests: int) -> str:
    """An nf-test file's text, checked to give its process or workflow every one of its n_inputs
    inputs in each of its (at least min_tests) tests."""
    text = path.read_text()
    tests = re.split(r"\n    test\(", text)[1:]
    assert len(tests) >= min_tests
    for test in tests:
        given = sorted(int(i) for i in re.findall(r"input\[(\d+)\] =", test))
        assert given == list(range(n_inputs)), test.splitlines()[0]
    return text


def test_nf_test_gives_gpu_jackhmmer_what_it_takes(structure):
    """tests/jackhmmer.nf.test (nf-test, where Nextflow is installed) gives GPU_JACKHMMER every input
    it takes, in every test; its real run compares the tables with HMMER's jackhmmer's
    (test-data/make.sh)."""
    proc = next(p for p in structure["processes"] if p["name"] == "GPU_JACKHMMER")
    text = nf_test_text(ROOT / "tests" / "jackhmmer.nf.test", len(proc["inputs"]), 2)
    assert 'process "GPU_JACKHMMER"' in text
    for name in ("blastp-queries.jackhmmer.tblout", "blastp-queries.jackhmmer.domtblout", "blastp-queries.faa",
                 "proteome.faa"):
        assert f"test-data/{name}" in text


@pytest.mark.parametrize("source", ["fasta", "makeblastdb folder"])
def test_sharded_blastp_tasks_equal_unsharded_in_params_outfmt(tmp_path, source):
    """params.outfmt (25 columns by default) reaches the shards' searches and the merge: the merged
    table equals one search of the whole database with those columns.  The database as FASTA, or
    as nf-core's makeblastdb module gives it: a folder holding a BLAST database."""
    outfmt = re.search(r"^params\.outfmt\s*=\s*'([^']*)'", MAIN_NF.read_text(), re.M).group(1)
    assert len(outfmt.split()) == 15          # 6, std (12 columns) and 13 more
    db = TEST_DATA / "proteome.faa"
    if source != "fasta":
        db = makeblastdb_folder(db, tmp_path)
    run_task("GPU_SEARCH_MAKEDB", tmp_path / "makedb",
             {"meta": SimpleNamespace(id="proteome"), "fasta": db, "n_shards": 3})
    hits = []
    for shard in sorted((tmp_path / "makedb").glob("*.gsdb")):
        wd = tmp_path / shard.stem
        run_task("GPU_BLASTP", wd, {"meta": SimpleNamespace(id=shard.stem), "fasta": TEST_DATA / "blastp-queries.faa",
                                    "meta2": SimpleNamespace(id="proteome"), "db": shard, "outfmt": outfmt},
                 ext_args="-max_target_seqs 10", accelerator=1)
        hits.append(wd / f"{shard.stem}.gsblast")
        assert all(len(row.split("\t")) == 25 for row in data_lines(wd / f"{shard.stem}.tsv"))
    run_task("GPU_SEARCH_MERGE", tmp_path / "merge", {"meta": SimpleNamespace(id="proteome", search="blastp"),
                                                     "hits": hits[::-1], "outfmt": outfmt,
                                                     "write_align": True})
    whole = subprocess.run([sys.executable, "-m", "gpu_search", "blastp", "-query",
                            str(TEST_DATA / "blastp-queries.faa"), "-db", str(TEST_DATA / "proteome.faa"),
                            "-outfmt", outfmt, "-max_target_seqs", "10"], check=True, capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout.splitlines()
    assert data_lines(tmp_path / "merge" / "proteome.merged.tsv") == whole
    assert len(whole) > 10 and all(len(row.split("\t")) == 25 for row in whole)


def test_search_task_keeps_the_no_gpu_line_visible(tmp_path):
    """A task given a GPU (accelerator) whose gpu-search finds none: the line gpu-search writes on
    stderr stays on the task's stderr and is kept in <prefix>.stderr.txt, which SHARDED_SEARCH reads
    to warn; a task's failure still fails it, with its stderr shown."""
    fake = tmp_path / "bin" / "gpu-search"
    fake.parent.mkdir()
    note = "gpu-search: no usable GPU (no CUDA GPU visible); searching on the CPU, same results"
    fake.write_text("#!/bin/sh\n"
                    f"echo '{note}' >&2\n"
                    'for a in "$@"; do case $a in *.gsblast|*.tsv) : > "$a";; esac; done\n'
                    'case " $* " in *" -out fail.tsv "*) echo "gpu-search: error: broken" >&2; exit 5;; esac\n')
    fake.chmod(0o755)
    env = {"PATH": f"{fake.parent}:{os.environ['PATH']}"}
    inputs = {"meta": SimpleNamespace(id="s1"), "fasta": TEST_DATA / "blastp-queries.faa",
              "meta2": SimpleNamespace(id="proteome"), "db": TEST_DATA / "proteome.faa", "outfmt": "6 std"}
    script, stderr = run_task("GPU_BLASTP", tmp_path / "t", inputs, accelerator=1, env=env)
    assert "--device auto" in script
    assert note in stderr.splitlines()
    assert (tmp_path / "t" / "s1.stderr.txt").read_text().splitlines() == [note]
    sharded = MAIN_NF.read_text()
    sharded = sharded[sharded.index("workflow SHARDED_SEARCH"):]
    assert ".filter { meta, txt -> txt.text.contains('no usable GPU') }" in sharded and "log.warn" in sharded
    with pytest.raises(AssertionError, match="gpu-search: error: broken"):
        run_task("GPU_BLASTP", tmp_path / "f", dict(inputs, meta=SimpleNamespace(id="fail")), accelerator=1, env=env)


@pytest.mark.parametrize("process", ["GPU_SEARCH_MAKEDB", "GPU_HMMSEARCH", "GPU_BLASTP", "GPU_SEARCH_MERGE",
                                     "GPU_SEARCH_SPLIT", "GPU_HMMSCAN", "GPU_HMMSCAN_MERGE", "GPU_JACKHMMER"])
@pytest.mark.parametrize("search", ["hmmsearch", "phmmer", "blastp"])
def test_stub_blocks_make_what_the_outputs_declare(process, search, tmp_path, structure):
    """Each stub makes a file for every output glob of its process (nf-test -stub), optional ones
    (jackhmmer's alignment without write_align) apart."""
    meta = SimpleNamespace(id="x", search=search)
    run_task(process, tmp_path, {"meta": meta, "write_align": False}, section="stub")
    proc = next(p for p in structure["processes"] if p["name"] == process)
    made = [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")]
    for out in proc["outputs"]:
        glob = re.search(r"this\.path\(([^)]*)\)", out)
        if glob and "optional:true" not in out:
            assert any(fnmatch.fnmatch(name, glob.group(1)) for name in made), (out, made)
    if process == "GPU_JACKHMMER":
        assert not any(name.endswith(".sto.gz") for name in made)
        run_task(process, tmp_path / "align", {"meta": meta, "write_align": True}, section="stub")
        assert (tmp_path / "align" / "x.sto.gz").exists()
    if process == "GPU_SEARCH_MERGE":
        assert sorted(made) == (["x.merged.tsv"] if search == "blastp" else
                                ["x.merged.domtbl", "x.merged.tbl", "x.merged.txt"])


def _declared(text: str) -> list[str]:
    """The names of an input or output declaration as the Groovy AST prints it: tuple(val(meta),
    path(x)) -> ['meta', 'x']; an output's path glob is its name."""
    return re.findall(r"this\.(?:val|path|env|eval)\(([^()]*(?:\([^()]*\))?[^()]*)\)", re.sub(r"\[[^]]*\], ", "", text))


@pytest.mark.parametrize("process", ["GPU_SEARCH_MAKEDB", "GPU_HMMSEARCH", "GPU_BLASTP", "GPU_SEARCH_MERGE",
                                     "GPU_SEARCH_SPLIT", "GPU_HMMSCAN", "GPU_HMMSCAN_MERGE", "GPU_JACKHMMER"])
def test_meta_yml_describes_the_process(process, structure):
    """meta/<process>/meta.yml (nf-core module metadata) names the process's inputs, in order, and
    each emitted output with its glob."""
    yaml = pytest.importorskip("yaml")
    meta = yaml.safe_load((ROOT / "meta" / process.lower() / "meta.yml").read_text())
    proc = next(p for p in structure["processes"] if p["name"] == process)
    assert meta["name"] == process.lower()
    documented = [[next(iter(e)) for e in (item if isinstance(item, list) else [item])] for item in meta["input"]]
    assert documented == [_declared(i) for i in proc["inputs"]]
    # an optional output prints as [emit:name, optional:true]
    emitted = {re.search(r"\[emit:(\w+)[,\]]", o).group(1): _declared(o) for o in proc["outputs"] if "[emit:" in o}
    assert {name: [next(iter(e)) for e in tup[0]] for name, tup in meta["output"].items()} == emitted
    assert "versions" in meta["topics"]


def test_nf_test_gives_sharded_search_what_it_takes(structure):
    """tests/main.nf.test (nf-test, where Nextflow is installed) calls SHARDED_SEARCH with every
    input it takes, in every test, one with params set."""
    sharded = next(w for w in structure["workflows"] if w["name"] == "SHARDED_SEARCH")
    text = nf_test_text(ROOT / "tests" / "main.nf.test", len(sharded["take"]), 4)
    assert re.search(r"params \{\s*outfmt = '6 std qlen slen'", text) and "input[4] = params.outfmt" in text


def test_nf_test_gives_sharded_hmmscan_what_it_takes(structure):
    """tests/hmmscan.nf.test calls SHARDED_HMMSCAN with every input it takes, in every test; its
    real run compares the merged tables with HMMER's hmmscan's (test-data/make.sh)."""
    sharded = next(w for w in structure["workflows"] if w["name"] == "SHARDED_HMMSCAN")
    text = nf_test_text(ROOT / "tests" / "hmmscan.nf.test", len(sharded["take"]), 2)
    assert 'workflow "SHARDED_HMMSCAN"' in text
    for name in ("proteome.hmmscan.tblout", "proteome.hmmscan.domtblout", "hmmdb/four-models.hmm.h3?"):
        assert f"test-data/{name}" in text
