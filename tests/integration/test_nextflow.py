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
    assert {"GPU_HMMSEARCH", "GPU_BLASTP", "GPU_SEARCH_MAKEDB", "GPU_SEARCH_MERGE"} <= set(procs)
    for name, p in procs.items():
        assert {"input", "output", "script", "stub"} <= set(p["sections"]), name
        assert "tag" in p["directives"] and "label" in p["directives"], name
        assert "container" in p["directives"], name
        assert "versions" in p["topics"], name
    for name in ("GPU_HMMSEARCH", "GPU_BLASTP"):
        assert procs[name]["directives"]["label"] == "(process_gpu)"
        assert "accelerator" in procs[name]["directives"]
    assert procs["GPU_HMMSEARCH"]["emits"] == ["output", "target_summary", "domain_summary", "hits"]
    assert procs["GPU_BLASTP"]["emits"] == ["tsv", "hits"]
    assert "container_for" in structure["functions"]
    names = {w["name"] for w in structure["workflows"]}
    assert "SHARDED_SEARCH" in names and "" in names        # a named sub-workflow and the entry workflow
    sharded = next(w for w in structure["workflows"] if w["name"] == "SHARDED_SEARCH")
    assert {"take", "main", "emit"} <= set(sharded["labels"])


def test_container_and_device_choices_in_text():
    text = MAIN_NF.read_text()
    fn = text[text.index("def container_for"):text.index("process GPU_SEARCH_MAKEDB")]
    assert "workflow.containerEngine in ['singularity', 'apptainer']" in fn and "oras://" in fn
    assert "def device = task.accelerator ? 'auto' : 'cpu'" in text
    assert text.count("task.ext.args ?: ''") >= 4
    config = (ROOT / "nextflow.config").read_text()
    for profile in ("docker", "singularity", "apptainer", "gpu", "slurm", "test"):
        assert re.search(rf"^\s*{profile}\s*{{", config, re.M), profile
    assert "--gpus all" in config and "--nv" in config


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
        if line.strip().startswith("def "):
            if current:
                defs.append(current)
            current = line.strip()[4:]
        elif current and line.strip():
            current += " " + line.strip()
    if current:
        defs.append(current)
    return defs, command


def run_task(process: str, workdir: Path, inputs: dict, cpus=2, ext_args="", accelerator=None, section="script"):
    """Render and run a process's script block in ``workdir`` as its task would."""
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
                                 ext=SimpleNamespace(args=ext_args, prefix=None))
    defs, command = script_block(process, section)
    for d in defs:
        name, expr = d.split("=", 1)
        ns[name.strip()] = groovy_eval(expr, ns)
    script = render_gstring(command, ns).replace("\\\\", "\\")
    (workdir / ".command.sh").write_text(script)
    env = dict(os.environ, PATH=f"{ROOT / 'bin'}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    r = subprocess.run(["bash", "-euo", "pipefail", ".command.sh"], cwd=workdir, capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, f"{process} failed:\n{script}\n{r.stderr}"
    return script


def data_lines(path: Path) -> list[str]:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return [l for l in fh.read().splitlines() if l and not l.startswith("#")]


def test_sharded_hmmsearch_tasks_equal_unsharded(tmp_path):
    meta = SimpleNamespace(id="proteome", search="hmmsearch")
    run_task("GPU_SEARCH_MAKEDB", tmp_path / "makedb", {"meta": meta, "fasta": TEST_DATA / "proteome.faa",
                                                        "n_shards": 3})
    shards = sorted((tmp_path / "makedb").glob("*.gsdb"))
    assert len(shards) == 3
    hits = []
    for shard in shards:
        wd = tmp_path / shard.stem
        script = run_task("GPU_HMMSEARCH", wd, {"meta": SimpleNamespace(id=shard.stem, search="hmmsearch"),
                                                "hmmfile": TEST_DATA / "four-models.hmm", "seqdb": shard},
                          ext_args="-E 100")
        assert "--device cpu" in script and "--cpu 2" in script
        hits.append(wd / f"{shard.stem}.gshits")
        assert (wd / f"{shard.stem}.tbl.gz").exists() and (wd / f"{shard.stem}.domtbl.gz").exists()
    random.Random(1).shuffle(hits)                       # the order merge gets them in does not matter
    run_task("GPU_SEARCH_MERGE", tmp_path / "merge", {"meta": meta, "hits": hits})
    # one unsharded search, same options
    whole = tmp_path / "whole"
    whole.mkdir()
    subprocess.run([sys.executable, "-m", "gpu_search", "hmmsearch", "--quiet", "--device", "cpu", "-E", "100",
                    "--tblout", str(whole / "t.tbl"), "--domtblout", str(whole / "t.domtbl"), "-o", os.devnull,
                    str(TEST_DATA / "four-models.hmm"), str(TEST_DATA / "proteome.faa")],
                   check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert data_lines(tmp_path / "merge" / "proteome.merged.tbl") == data_lines(whole / "t.tbl")
    assert data_lines(tmp_path / "merge" / "proteome.merged.domtbl") == data_lines(whole / "t.domtbl")
    assert len(data_lines(whole / "t.tbl")) > 10


def test_sharded_blastp_tasks_equal_unsharded(tmp_path):
    run_task("GPU_SEARCH_MAKEDB", tmp_path / "makedb",
             {"meta": SimpleNamespace(id="proteome"), "fasta": TEST_DATA / "proteome.faa", "n_shards": 3})
    hits = []
    for shard in sorted((tmp_path / "makedb").glob("*.gsdb")):
        wd = tmp_path / shard.stem
        run_task("GPU_BLASTP", wd, {"meta": SimpleNamespace(id=shard.stem), "fasta": TEST_DATA / "blastp-queries.faa",
                                    "meta2": SimpleNamespace(id="proteome"), "db": shard},
                 ext_args="-outfmt 6 -max_target_seqs 10", accelerator=1)
        hits.append(wd / f"{shard.stem}.gsblast")
    run_task("GPU_SEARCH_MERGE", tmp_path / "merge", {"meta": SimpleNamespace(id="proteome", search="blastp"),
                                                     "hits": hits[::-1]})
    whole = subprocess.run([sys.executable, "-m", "gpu_search", "blastp", "-query",
                            str(TEST_DATA / "blastp-queries.faa"), "-db", str(TEST_DATA / "proteome.faa"),
                            "-outfmt", "6", "-max_target_seqs", "10"], check=True, capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout.splitlines()
    assert data_lines(tmp_path / "merge" / "proteome.merged.tsv") == whole
    assert len(whole) > 10


@pytest.mark.parametrize("process", ["GPU_SEARCH_MAKEDB", "GPU_HMMSEARCH", "GPU_BLASTP", "GPU_SEARCH_MERGE"])
def test_stub_blocks_run(process, tmp_path):
    meta = SimpleNamespace(id="x", search="hmmsearch")
    run_task(process, tmp_path, {"meta": meta}, section="stub")
    assert any(tmp_path.iterdir())
