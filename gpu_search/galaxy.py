"""The Galaxy tool wrapper (top-level ``tool.xml``), generated with galaxyxml.

One description, here, next to the command line it wraps, so the wrapper
cannot drift from the CLI: ``gpu-search galaxy-xml > tool.xml`` writes it, and
a test fails when the committed tool.xml differs from what this produces.

The tool follows the IUC HMMER and BLAST+ wrappers (tools-iuc hmmer3,
peterjc/galaxy_blast): a conditional on the search type; HMMER's outputs
chosen by checkboxes, each a dataset with a filter; BLAST's 12 or 25 columns
as ``tabular`` with column names; thresholds in an "Advanced" section;
threads from ``${GALAXY_SLOTS:-1}``; ``detect_errors="aggressive"``.  It asks
for a GPU (``<resource type="cuda_device_count_min">1</resource>``, the form
Galaxy's schema takes since the older ``<requirement type="compute">`` was
dropped) and uses one only where the job was granted it: the admin's GPU
destination sets ``GALAXY_GPU_ENABLED=true``, or the scheduler sets
``CUDA_VISIBLE_DEVICES`` (Slurm's ``--gres=gpu``).  Elsewhere it runs on the CPU
with the same results, so that it never takes a GPU that belongs to another job.  Every value from the user reaches the command
line quoted; only numbers, fixed choices and Galaxy's own file paths do.

Which device searched is said on the job's stderr, which Galaxy keeps and shows
with the job's information ("Tool Standard Error"): a job given no GPU says so
before the search, and gpu-search itself says when a job given one could not use
it (``gpu-search: no usable GPU (...)``, printed even with ``--quiet``).  The
command leaves stderr alone for that; none of these lines matches the error
patterns of ``detect_errors="aggressive"``.

The container is named as ``containers/Dockerfile`` builds it (``gpu-search:<version>``):
it is in no public registry, so a Galaxy server builds it once (the tool's help says how).
"""

from __future__ import annotations

from . import __version__
from .hmmer.options import SCORE_MATRICES

TOOL_ID = "gpu_search"
TOOL_VERSION = f"{__version__}+galaxy0"
# the image containers/Dockerfile builds: docker build -f containers/Dockerfile -t gpu-search:<version> .
CONTAINER = f"gpu-search:{__version__}"

# the HMMER programs' sequence files: FASTA, and the Galaxy datatypes of HMMER's other formats
# that Easel reads (the command names them by their Galaxy extension, which is Easel's name)
HMMER_SEQUENCES = "fasta,fasta.gz,embl,genbank,stockholm,clustal,a2m"
SEQUENCES_HELP = ("Protein FASTA (may be gzipped), EMBL, GenBank, or an alignment (Stockholm, Clustal, A2M: "
                  "its sequences without gaps).")

BLAST_STD = "qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore"
BLAST_EXT = (BLAST_STD + " sallseqid score nident positive gaps ppos qframe sframe qseq sseq qlen slen "
             "salltitles")

COMMAND = r"""
## a GPU only where the job was granted one (Galaxy's GALAXY_GPU_ENABLED, or the
## scheduler's CUDA_VISIBLE_DEVICES), else the CPU: the same results either way
device=cpu;
if [ "\${GALAXY_GPU_ENABLED:-false}" = "true" ]; then device=auto; fi;
case "\${CUDA_VISIBLE_DEVICES:-}" in ''|-1|NoDevFiles) ;; *) device=auto ;; esac;
if [ "\$device" = cpu ]; then echo "gpu-search: this job was given no GPU (neither GALAXY_GPU_ENABLED=true nor CUDA_VISIBLE_DEVICES); searching on the CPU, same results" >&2; fi;
#if $search.type in ('hmmsearch', 'phmmer', 'jackhmmer', 'hmmscan'):
gpu-search '$search.type'
    --cpu "\${GALAXY_SLOTS:-1}"
    --device "\$device"
    --quiet
    -o '$output'
    #set $outs = str($search.outputs).split(',')
    #if 'tblout' in $outs:
    --tblout '$tblout'
    #end if
    #if 'domtblout' in $outs:
    --domtblout '$domtblout'
    #end if
    #if 'pfamtblout' in $outs:
    --pfamtblout '$pfamtblout'
    #end if
    #if 'alignment' in $outs:
    -A '$alignment'
    #end if
    #if $search.type in ('hmmsearch', 'hmmscan') and $search.adv.cutoffs != 'none':
    '--$search.adv.cutoffs'
    #else:
    -E '$search.adv.E'
    --domE '$search.adv.domE'
    --incE '$search.adv.incE'
    --incdomE '$search.adv.incdomE'
    #end if
    --F1 '$search.adv.F1'
    --F2 '$search.adv.F2'
    --F3 '$search.adv.F3'
    $search.adv.max
    $search.adv.nobias
    $search.adv.nonull2
    #if str($search.adv.Z):
    -Z '$search.adv.Z'
    #end if
    #if str($search.adv.domZ):
    --domZ '$search.adv.domZ'
    #end if
    --seed '$search.adv.seed'
    ## a sequence file in another of HMMER's formats: named by its Galaxy datatype (Easel's names)
    #set $easel_formats = EASEL_FORMATS
    #if $search.type in ('phmmer', 'jackhmmer', 'hmmscan') and $search.query.ext in $easel_formats:
    --qformat '$search.query.ext'
    #end if
    #if $search.type in ('hmmsearch', 'phmmer', 'jackhmmer') and $search.seqdb.ext in $easel_formats:
    --tformat '$search.seqdb.ext'
    #end if
    #if $search.type in ('phmmer', 'jackhmmer'):
    #if $search.type == 'jackhmmer':
    -N '$search.N'
    #end if
    --popen '$search.adv.popen'
    --pextend '$search.adv.pextend'
    --mx '$search.adv.mx'
    '$search.query'
    '$search.seqdb'
    #elif $search.type == 'hmmscan':
    #if $search.hmmdb_opts.hmmdb_opts_selector == 'db':
    '${search.hmmdb_opts.database.fields.db_path}'
    #else:
    '$search.hmmdb_opts.hmmfile'
    #end if
    '$search.query'
    #else:
    '$search.hmmfile'
    '$search.seqdb'
    #end if
#else:
gpu-search blastp
    -query '$search.query'
    #if $search.db_opts.db_opts_selector == 'db':
    -db '${search.db_opts.database.fields.path}'
    #else:
    -db '$search.db_opts.subject'
    #end if
    -out '$blast_out'
    -outfmt '$search.outfmt'
    -num_threads "\${GALAXY_SLOTS:-1}"
    --device "\$device"
    --quiet
    -evalue '$search.adv.evalue'
    -max_target_seqs '$search.adv.max_target_seqs'
    #if str($search.adv.max_hsps):
    -max_hsps '$search.adv.max_hsps'
    #end if
    #if str($search.adv.dbsize):
    -dbsize '$search.adv.dbsize'
    #end if
    -matrix '$search.adv.matrix'
    -comp_based_stats '$search.adv.comp_based_stats'
    -word_size '$search.adv.word_size'
    #if str($search.adv.threshold):
    -threshold '$search.adv.threshold'
    #end if
    #if str($search.adv.window_size):
    -window_size '$search.adv.window_size'
    #end if
#end if
""".replace("EASEL_FORMATS", repr(tuple(f for f in HMMER_SEQUENCES.split(",") if not f.startswith("fasta"))))

HELP = """
**What it does**

Finds proteins related to your query in a protein database, with the numbers
of the standard tools, only faster on a GPU:

* **HMM search** searches profile HMMs (for example Pfam families) against
  protein sequences, exactly as HMMER 3.4's ``hmmsearch`` does: same hits,
  scores, E-values, domains and alignments.
* **Protein HMMER search** searches protein queries against protein sequences,
  exactly as HMMER 3.4's ``phmmer`` does (each query becomes a profile HMM).
* **Iterative protein HMMER search** searches protein queries against protein
  sequences in rounds, exactly as HMMER 3.4's ``jackhmmer`` does: each round
  builds a profile HMM from the query and what the round before found, until
  the number of rounds asked for or until nothing new is found.
* **HMM scan** searches each protein query against a database of profile HMMs
  (for example Pfam), exactly as HMMER 3.4's ``hmmscan`` does: for each query,
  the models it matches, with their scores, E-values and domains.
* **Protein BLAST** searches protein queries against protein sequences,
  exactly as NCBI BLAST+ 2.12 ``blastp`` does (same rows), with its
  composition-based statistics (``-comp_based_stats`` 2 by default; 0, 1 and 3
  in the advanced options).

Where Galaxy gives the job a GPU, the slow filtering stages run on it; where
it does not, the search runs on the CPU with the same results, only slower.
The job's standard error (the dataset's job information, "Tool Standard
Error") says when the search ran on the CPU, and why: the job was given no
GPU, or the GPU it was given could not be used (``gpu-search: no usable GPU
(...)``); when it says neither, the GPU searched.

-----

**Inputs**

* HMM search: a file of one or more HMMER3 profiles, and protein sequences in
  FASTA (may be gzipped), EMBL, GenBank, or an alignment (Stockholm, Clustal,
  A2M: its sequences without gaps), read as HMMER reads them.
* Protein HMMER search and iterative protein HMMER search: query protein
  sequences, and protein sequences to search (the whole database: each round
  of the iterative search builds on all of the round before's hits), in any
  of those formats.
* HMM scan: query protein sequences in any of those formats, and the profile
  HMMs to search: an HMMER3 profile file from your history (it need not be
  pressed), or an HMM database the server holds (its ``hmm_database`` data
  table, as for the IUC HMMER tools: a database pressed by ``hmmpress``).
* Protein BLAST: query protein sequences in FASTA, and the protein sequences to
  search: FASTA (may be gzipped) from your history, or a BLAST database the
  server holds (its ``blastdb_p`` data table, as for the BLAST+ tools).

**Outputs**

* HMM search, protein HMMER search, iterative protein HMMER search and HMM
  scan: HMMER's main report, and on request the per-sequence table
  (``--tblout``), the per-domain table (``--domtblout``) and the Pfam-style table
  (``--pfamtblout``; not for the iterative search), exactly in HMMER's formats;
  all but HMM scan also the alignment of the significant hits (``-A``,
  Stockholm).  The iterative search's report shows every round, its tables and
  alignment the last round's.  HMM scan's tables list, for each query, the
  models it matches.
* Protein BLAST: a tabular file, either the 12 standard columns
  (qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue
  bitscore) or 25 extended columns (those plus sallseqid score nident positive
  gaps ppos qframe sframe qseq sseq qlen slen salltitles), as BLAST+ writes them.

**Searching a database in parts**

E-values depend on the size of the whole database.  If you split a database
and search the parts separately, set the **database size** (HMMER searches: *Z*,
the number of sequences; HMM scan: *Z*, the number of models; BLAST: *dbsize*,
the number of residues) of the whole database in the advanced options of every
part.  HMM scan's queries may be split freely: each query's results depend only
on the models.

-----

**Example**

HMM search of the Pfam family 2-Hacid_dh_C (PF02826) against 300 proteins,
with the gathering cutoff: the per-sequence table lists the proteins with a
D-isomer specific 2-hydroxyacid dehydrogenase domain, with their scores and
E-values.

**For Galaxy administrators**

The tool's container, ``gpu-search:%s``, is not in any public registry: build
it once from the gpu-search sources with
``docker build -f containers/Dockerfile -t gpu-search:%s .``
(for Singularity/Apptainer, then
``apptainer build gpu-search-%s.sif docker-daemon://gpu-search:%s``).
GPU jobs need a destination that gives the container the GPU (``--gpus`` /
``--nv``) and sets ``GALAXY_GPU_ENABLED=true`` or ``CUDA_VISIBLE_DEVICES``.
HMM scan's server databases are the rows of the ``hmm_database`` data table
(``tool_data_table_conf.xml.sample``, ``tool-data/hmm_database.loc.sample``;
the IUC HMMER tools' table, columns value, name, db_path): db_path is the name
given to ``hmmpress``, with its ``.h3m``, ``.h3i``, ``.h3f`` and ``.h3p`` beside it.

**More**

gpu-search: https://github.com/gpu-search/gpu-search
""" % ((__version__,) * 4)

CITATIONS = [
    ("doi", "10.1371/journal.pcbi.1002195"),      # HMMER 3: Eddy 2011
    ("doi", "10.1186/1471-2105-10-421"),          # BLAST+: Camacho et al. 2009
    ("doi", "10.1186/s12859-016-0946-4"),          # CUDAMPF, BMC Bioinformatics 2016
    ("bibtex", """@inproceedings{hmmer_gpu_hicomb2015,
  title = {Fine-grained acceleration of {HMMER3} {MSV} and {P7Viterbi} on {GPUs}},
  booktitle = {IEEE International Workshop on High Performance Computational Biology (HiCOMB)},
  year = {2015}
}"""),
    ("bibtex", """@inproceedings{ferraz_moreano_hmmer_gpu,
  title = {Evaluating optimization strategies for {HMMer} acceleration on {GPU}},
  author = {Ferraz, Samuel and Moreano, Nahri},
  booktitle = {International Conference on Parallel and Distributed Systems (ICPADS)},
  year = {2013}
}"""),
    ("bibtex", """@inproceedings{walters_gpu_ipdps2009,
  title = {Evaluating the use of {GPUs} in liver image segmentation and {HMMER} database searches},
  booktitle = {IEEE International Symposium on Parallel and Distributed Processing (IPDPS)},
  year = {2009}
}"""),
    ("bibtex", """@article{cublastp,
  title = {{cuBLASTP}: Fine-grained parallelization of protein sequence search on {CPU+GPU}},
  journal = {IEEE/ACM Transactions on Computational Biology and Bioinformatics},
  year = {2017}
}"""),
]


def build_tool():
    """The galaxyxml Tool object."""
    import galaxyxml.tool as gxt
    import galaxyxml.tool.parameters as gxtp

    class _Resource(gxtp.Requirement):
        """<resource type="...">value</resource> (galaxyxml has no class for it)."""
        node_name = "resource"

    tool = gxt.Tool("GPU protein search", TOOL_ID, TOOL_VERSION,
                    "HMMER hmmsearch, phmmer, jackhmmer and hmmscan, BLAST+ blastp, accelerated on GPUs", "gpu-search",
                    version_command="gpu-search --version", command_override=[COMMAND.strip()],
                    profile="22.05")
    tool.command = gxtp.Command(detect_errors="aggressive")

    reqs = gxtp.Requirements()
    reqs.append(gxtp.Requirement("package", "gpu-search", version=__version__))
    reqs.append(_Resource("cuda_device_count_min", 1))
    reqs.append(gxtp.Container("docker", CONTAINER))
    tool.requirements = reqs

    inputs = gxtp.Inputs()
    search = gxtp.Conditional("search")
    search.append(gxtp.SelectParam("type", label="Search type", options={
        "hmmsearch": "HMM search: profile HMMs against protein sequences (hmmsearch)",
        "phmmer": "Protein HMMER search: protein queries against protein sequences (phmmer)",
        "jackhmmer": "Iterative protein HMMER search: protein queries against protein sequences in rounds "
                     "(jackhmmer)",
        "hmmscan": "HMM scan: protein queries against a database of profile HMMs (hmmscan)",
        "blastp": "Protein BLAST: protein queries against protein sequences (blastp)",
    }, default="hmmsearch"))

    def hmmer_outputs(program: str):
        """The outputs' checkboxes (hmmscan has no -A, jackhmmer no --pfamtblout; jackhmmer's
        are its last round's)."""
        last = " of the last round" if program == "jackhmmer" else ""
        options = {
            "tblout": f"Per-sequence hits{last} (--tblout)" if program != "hmmscan" else
                      "Per-model hits of each query (--tblout)",
            "domtblout": f"Per-domain hits{last} (--domtblout)",
        }
        if program != "jackhmmer":
            options["pfamtblout"] = "Pfam-style hits (--pfamtblout)"
        if program != "hmmscan":
            options["alignment"] = f"Multiple alignment of the significant hits{last} (-A, Stockholm)"
        return gxtp.SelectParam("outputs", label="Tables to produce", multiple=True, display="checkboxes",
                                optional=True, options=options, default="tblout")

    def hmmer_advanced(program: str):
        """hmmsearch's, phmmer's, jackhmmer's and hmmscan's advanced options: hmmsearch's and
        hmmscan's model cutoffs, phmmer's and jackhmmer's scoring system (phmmer.c's defaults
        and ranges; jackhmmer's of its first round's model), jackhmmer's inclusion defaults
        (0.001: what is included builds the next round's model); hmmscan's targets are
        models."""
        targets = "models" if program == "hmmscan" else "sequences"
        inc = 0.001 if program == "jackhmmer" else 0.01
        adv = gxtp.Section("adv", title="Advanced options", expanded=False)
        if program in ("hmmsearch", "hmmscan"):
            adv.append(gxtp.SelectParam("cutoffs", label="Reporting thresholds", options={
                "none": "E-values below",
                "cut_ga": "The models' gathering cutoffs (--cut_ga)",
                "cut_nc": "The models' noise cutoffs (--cut_nc)",
                "cut_tc": "The models' trusted cutoffs (--cut_tc)",
            }, default="none"))
        adv.append(gxtp.FloatParam("E", value=10.0, min=0, label=f"Report {targets} with E-value at most (-E)"))
        adv.append(gxtp.FloatParam("domE", value=10.0, min=0,
                                   label="Report domains with conditional E-value at most (--domE)"))
        adv.append(gxtp.FloatParam("incE", value=inc, min=0, label=f"Include {targets} with E-value at most (--incE)"))
        adv.append(gxtp.FloatParam("incdomE", value=inc, min=0,
                                   label="Include domains with conditional E-value at most (--incdomE)"))
        if program in ("phmmer", "jackhmmer"):
            first = " of the first round's model" if program == "jackhmmer" else ""
            adv.append(gxtp.FloatParam("popen", value=0.02, min=0, max=0.49999,
                                       label=f"Gap open probability{first} (--popen)"))
            adv.append(gxtp.FloatParam("pextend", value=0.4, min=0, max=0.99999,
                                       label=f"Gap extend probability{first} (--pextend)"))
            adv.append(gxtp.SelectParam("mx", label=f"Substitution score matrix{first} (--mx)",
                                        options={m: m for m in SCORE_MATRICES}, default="BLOSUM62"))
        adv.append(gxtp.FloatParam("F1", value=0.02, min=0, max=1, label="MSV filter P-value threshold (--F1)"))
        adv.append(gxtp.FloatParam("F2", value=0.001, min=0, max=1, label="Viterbi filter P-value threshold (--F2)"))
        adv.append(gxtp.FloatParam("F3", value=0.00001, min=0, max=1, label="Forward filter P-value threshold (--F3)"))
        adv.append(gxtp.BooleanParam("max", truevalue="--max", falsevalue="", checked=False,
                                     label="Turn all filters off, for the most sensitivity (--max)"))
        adv.append(gxtp.BooleanParam("nobias", truevalue="--nobias", falsevalue="", checked=False,
                                     label="Turn the composition bias filter off (--nobias)"))
        adv.append(gxtp.BooleanParam("nonull2", truevalue="--nonull2", falsevalue="", checked=False,
                                     label="Turn the biased composition score corrections off (--nonull2)"))
        adv.append(gxtp.IntegerParam("Z", value="", optional=True, min=1,
                                     label=f"Database size in {targets} for E-values (-Z)",
                                     help="Set it to the whole database's when searching one part of it."))
        adv.append(gxtp.IntegerParam("domZ", value="", optional=True, min=1,
                                     label=f"Number of significant {targets} for domain E-values (--domZ)"))
        adv.append(gxtp.IntegerParam("seed", value=42, min=0, label="Random seed (--seed)"))
        return adv

    hmm = gxtp.When("hmmsearch")
    hmm.append(gxtp.DataParam("hmmfile", argument=None, format="hmm3,txt", label="Profile HMM file",
                              help="One or more HMMER3 profiles (e.g. Pfam families)."))
    hmm.append(gxtp.DataParam("seqdb", format=HMMER_SEQUENCES, label="Protein sequences to search",
                              help=SEQUENCES_HELP))
    hmm.append(hmmer_outputs("hmmsearch"))
    hmm.append(hmmer_advanced("hmmsearch"))
    search.append(hmm)

    seq = gxtp.When("phmmer")
    seq.append(gxtp.DataParam("query", format=HMMER_SEQUENCES, label="Query protein sequences",
                              help="Each sequence is searched on its own. " + SEQUENCES_HELP))
    seq.append(gxtp.DataParam("seqdb", format=HMMER_SEQUENCES, label="Protein sequences to search",
                              help=SEQUENCES_HELP))
    seq.append(hmmer_outputs("phmmer"))
    seq.append(hmmer_advanced("phmmer"))
    search.append(seq)

    jack = gxtp.When("jackhmmer")
    jack.append(gxtp.DataParam("query", format=HMMER_SEQUENCES, label="Query protein sequences",
                               help="Each sequence is searched on its own, in rounds. " + SEQUENCES_HELP))
    jack.append(gxtp.DataParam("seqdb", format=HMMER_SEQUENCES, label="Protein sequences to search",
                               help="The whole database (each round builds on all of the round before's "
                                    "hits). " + SEQUENCES_HELP))
    jack.append(gxtp.IntegerParam("N", value=5, min=1, label="Rounds of search at most (-N)",
                                  help="Fewer where the search converges: a round that includes nothing new."))
    jack.append(hmmer_outputs("jackhmmer"))
    jack.append(hmmer_advanced("jackhmmer"))
    search.append(jack)

    scan = gxtp.When("hmmscan")
    scan.append(gxtp.DataParam("query", format=HMMER_SEQUENCES, label="Query protein sequences",
                               help="Each sequence is searched against every model. " + SEQUENCES_HELP))
    # the models: an HMM file from the history (need not be pressed), or a database pressed by
    # hmmpress of the server's hmm_database data table (the IUC hmmer3 tools' table: value, name,
    # db_path, the name given to hmmpress)
    hmmdb_opts = gxtp.Conditional("hmmdb_opts")
    hmmdb_opts.append(gxtp.SelectParam("hmmdb_opts_selector", label="Profile HMM database", options={
        "file": "HMM file from your history",
        "db": "Locally installed HMM database",
    }, default="file"))
    hmm_from_file = gxtp.When("file")
    hmm_from_file.append(gxtp.DataParam("hmmfile", format="hmm3", label="Profile HMM file",
                                        help="One or more HMMER3 profiles (e.g. Pfam-A.hmm); it need not be "
                                             "pressed."))
    hmmdb_opts.append(hmm_from_file)
    hmm_from_table = gxtp.When("db")
    hmm_database = gxtp.SelectParam("database", label="HMM database",
                                    help="The HMM databases (pressed by hmmpress) this Galaxy server holds: "
                                         "its hmm_database data table")
    hmm_options = gxtp.Options(from_data_table="hmm_database")
    hmm_options.append(gxtp.Filter(type="sort_by", column="2"))
    hmm_database.append(hmm_options)
    hmm_from_table.append(hmm_database)
    hmmdb_opts.append(hmm_from_table)
    scan.append(hmmdb_opts)
    scan.append(hmmer_outputs("hmmscan"))
    scan.append(hmmer_advanced("hmmscan"))
    search.append(scan)

    blast = gxtp.When("blastp")
    blast.append(gxtp.DataParam("query", format="fasta,fasta.gz", label="Query protein sequences"))
    # the subjects: a FASTA dataset, or a BLAST database of the server's blastdb_p data table
    # (the IUC BLAST+ wrapper's table: value, name, path of the database's prefix)
    db_opts = gxtp.Conditional("db_opts")
    db_opts.append(gxtp.SelectParam("db_opts_selector", label="Subject database/sequences", options={
        "file": "FASTA file from your history",
        "db": "Locally installed BLAST database",
    }, default="file"))
    from_file = gxtp.When("file")
    from_file.append(gxtp.DataParam("subject", format="fasta,fasta.gz", label="Protein sequences to search"))
    db_opts.append(from_file)
    from_table = gxtp.When("db")
    database = gxtp.SelectParam("database", label="Protein BLAST database",
                                help="The BLAST protein databases (makeblastdb) this Galaxy server holds: "
                                     "its blastdb_p data table")
    options = gxtp.Options(from_data_table="blastdb_p")
    options.append(gxtp.Filter(type="sort_by", column="2"))
    database.append(options)
    from_table.append(database)
    db_opts.append(from_table)
    blast.append(db_opts)
    blast.append(gxtp.SelectParam("outfmt", label="Output format", options={
        f"6 {BLAST_STD}": "Tabular, 12 standard columns",
        f"6 {BLAST_EXT}": "Tabular, 25 extended columns",
        "5": "BLAST XML",
        "0": "Pairwise report (BLAST+'s default text)",
    }, default=f"6 {BLAST_EXT}"))
    badv = gxtp.Section("adv", title="Advanced options", expanded=False)
    badv.append(gxtp.FloatParam("evalue", value=0.001, min=0, label="Expectation value threshold (-evalue)"))
    badv.append(gxtp.IntegerParam("max_target_seqs", value=500, min=1,
                                  label="Maximum number of aligned sequences to keep (-max_target_seqs)"))
    badv.append(gxtp.IntegerParam("max_hsps", value="", optional=True, min=1,
                                  label="Maximum number of alignments per subject (-max_hsps)"))
    badv.append(gxtp.IntegerParam("dbsize", value="", optional=True, min=1,
                                  label="Database size in residues for E-values (-dbsize)",
                                  help="Set it to the whole database's when searching one part of it."))
    badv.append(gxtp.SelectParam("matrix", label="Scoring matrix (-matrix)", options={
        m: m for m in ("BLOSUM62", "BLOSUM45", "BLOSUM50", "BLOSUM80", "BLOSUM90", "PAM30", "PAM70", "PAM250")
    }, default="BLOSUM62"))
    # the IUC BLAST+ wrapper's choices and wording, BLAST+'s default
    badv.append(gxtp.SelectParam("comp_based_stats", label="Composition-based statistics (-comp_based_stats)",
                                 options={
        "0": "0 - No composition-based statistics",
        "1": "1 - Composition-based statistics as in NAR 29:2994-3005, 2001",
        "2": "2 - Composition-based score adjustment as in Bioinformatics 21:902-911, 2005, conditioned on "
             "sequence properties",
        "3": "3 - Composition-based score adjustment as in Bioinformatics 21:902-911, 2005, unconditionally",
    }, default="2"))
    badv.append(gxtp.IntegerParam("word_size", value=3, min=2, max=4, label="Word size (-word_size)"))
    badv.append(gxtp.IntegerParam("threshold", value="", optional=True, min=1,
                                  label="Minimum word score (-threshold; default: the matrix's)"))
    badv.append(gxtp.IntegerParam("window_size", value="", optional=True, min=0,
                                  label="Two-hit window (-window_size; default: the matrix's; 0: one-hit)"))
    blast.append(badv)
    search.append(blast)
    inputs.append(search)
    tool.inputs = inputs

    outputs = gxtp.Outputs()
    main = gxtp.OutputData("output", format="txt", label="${tool.name} on ${on_string}: ${search.type} report")
    main.append(gxtp.OutputFilter("search['type'] in ('hmmsearch', 'phmmer', 'jackhmmer', 'hmmscan')"))
    outputs.append(main)
    for name, what in (("tblout", "per-sequence hits"), ("domtblout", "per-domain hits"),
                       ("pfamtblout", "Pfam-style hits")):
        out = gxtp.OutputData(name, format="tabular", label=f"${{tool.name}} on ${{on_string}}: {what}")
        out.append(gxtp.OutputFilter(f"search['type'] in ('hmmsearch', 'phmmer', 'jackhmmer', 'hmmscan') and "
                                     f"search['outputs'] and '{name}' in search['outputs']"))
        outputs.append(out)
    ali = gxtp.OutputData("alignment", format="stockholm",
                          label="${tool.name} on ${on_string}: alignment of significant hits")
    ali.append(gxtp.OutputFilter("search['type'] in ('hmmsearch', 'phmmer', 'jackhmmer') and search['outputs'] "
                                 "and 'alignment' in search['outputs']"))
    outputs.append(ali)
    bout = gxtp.OutputData("blast_out", format="tabular", label="${tool.name} on ${on_string}: blastp")
    bout.append(gxtp.OutputFilter("search['type'] == 'blastp'"))
    xml = gxtp.ChangeFormat()          # Galaxy's blastxml datatype, as the IUC BLAST+ wrapper's
    xml.append(gxtp.ChangeFormatWhen(input="search.outfmt", value="5", format="blastxml"))
    xml.append(gxtp.ChangeFormatWhen(input="search.outfmt", value="0", format="txt"))
    bout.append(xml)
    outputs.append(bout)
    tool.outputs = outputs

    tests = gxtp.Tests()
    TABLE_TAIL = 11     # a table's tail: 5 lines (files, options, folder, date) * 2 + the line saying
    #                     gpu-search computed the file (lines_diff counts a changed line twice, - and +,
    #                     and an added line once)

    def hmmer_test(params: dict, outputs: dict, ftypes: dict | None = None) -> gxtp.Test:
        """A test of a HMMER search: its parameters under search| (an input's datatype in
        ``ftypes``), each output's expected file and lines_diff."""
        t = gxtp.Test(expect_num_outputs=len(outputs) + ("output" not in outputs))
        for name, value in params.items():
            t.append(gxtp.TestParam(f"search|{name}", value=value, ftype=(ftypes or {}).get(name)))
        for name, (file, lines_diff) in outputs.items():
            t.append(gxtp.TestOutput(name, file=file, lines_diff=lines_diff))
        return t

    def tables(prefix: str, *names: str) -> dict:
        return {name: (f"{prefix}.{name}", TABLE_TAIL) for name in names}

    # 1. hmmsearch, three tables and the alignment; expected files made by HMMER 3.4
    # (test-data/make.sh).  The report: 7 header lines naming Galaxy's file paths, the 3 lines
    # naming the alignment's file, and each model's "CPU time" and "Mc/sec" lines: (7 + 3 + 2 *
    # 4) * 2, plus the line saying gpu-search computed the file; the alignment: the author line
    # of each of its 3 models * 2
    tests.append(hmmer_test(
        {"type": "hmmsearch", "hmmfile": "four-models.hmm", "seqdb": "proteome.faa",
         "outputs": "tblout,domtblout,pfamtblout,alignment"},
        {"output": ("four-models.out", 37), **tables("four-models", "tblout", "domtblout", "pfamtblout"),
         "alignment": ("four-models.sto", 6)}))
    # 2. hmmsearch with the gathering cutoff, per-sequence table only
    tests.append(hmmer_test(
        {"type": "hmmsearch", "hmmfile": "PF02826.hmm", "seqdb": "proteome.faa", "outputs": "tblout",
         "adv|cutoffs": "cut_ga"},
        {"tblout": ("PF02826.cut_ga.tblout", TABLE_TAIL)}))
    # 3. phmmer, the three test queries against the test proteome, two tables; expected files
    # made by HMMER 3.4's phmmer (test-data/make.sh)
    tests.append(hmmer_test(
        {"type": "phmmer", "query": "blastp-queries.faa", "seqdb": "proteome.faa", "outputs": "tblout,domtblout"},
        tables("blastp-queries.phmmer", "tblout", "domtblout")))
    # 4. jackhmmer, the three test queries against the test proteome in at most three rounds, the
    # report, two tables and the alignment; expected files made by HMMER 3.4's jackhmmer (the
    # oracle, test-data/make.sh).  The report counted as test 1's: 6 header lines naming files,
    # the 3 lines naming the alignment's file, each round's "CPU time" and "Mc/sec" (6 rounds
    # in all): (6 + 3 + 2 * 6) * 2, plus the line saying gpu-search computed it; the
    # alignment: each query's author line * 2
    tests.append(hmmer_test(
        {"type": "jackhmmer", "query": "blastp-queries.faa", "seqdb": "proteome.faa", "N": "3",
         "outputs": "tblout,domtblout,alignment"},
        {"output": ("blastp-queries.jackhmmer.out", 43), **tables("blastp-queries.jackhmmer", "tblout", "domtblout"),
         "alignment": ("blastp-queries.jackhmmer.sto", 6)}))
    # 5. hmmscan, the test proteome against the four models of a history HMM file (not pressed),
    # two tables; expected files made by HMMER 3.4's hmmscan on the models pressed by hmmpress
    # (test-data/make.sh)
    tests.append(hmmer_test(
        {"type": "hmmscan", "query": "proteome.faa", "hmmdb_opts|hmmdb_opts_selector": "file",
         "hmmdb_opts|hmmfile": "four-models.hmm", "outputs": "tblout,domtblout"},
        tables("proteome.hmmscan", "tblout", "domtblout")))
    # 6. hmmscan against the pressed database of the test data table (test-data/hmm_database.loc:
    # the four models as hmmpress pressed them, test-data/make.sh), the Pfam-style table too
    tests.append(hmmer_test(
        {"type": "hmmscan", "query": "proteome.faa", "hmmdb_opts|hmmdb_opts_selector": "db",
         "hmmdb_opts|database": "four_models", "outputs": "tblout,domtblout,pfamtblout"},
        tables("proteome.hmmscan", "tblout", "domtblout", "pfamtblout")))
    # 7. hmmsearch of the test proteome as GenBank records (test-data/make.sh): the command names
    # the datatype (--tformat genbank); the expected table made by HMMER 3.4 reading that file
    tests.append(hmmer_test(
        {"type": "hmmsearch", "hmmfile": "four-models.hmm", "seqdb": "proteome.gb", "outputs": "tblout"},
        {"tblout": ("proteome.gb.tblout", TABLE_TAIL)}, ftypes={"seqdb": "genbank"}))

    def blastp_test(params: dict, output: gxtp.TestOutput) -> gxtp.Test:
        """A blastp test of the three test queries against the test proteome."""
        t = gxtp.Test(expect_num_outputs=1)
        subject = {} if "db_opts|database" in params else {"db_opts|subject": "proteome.faa"}
        for name, value in {"type": "blastp", "query": "blastp-queries.faa", **subject, **params}.items():
            t.append(gxtp.TestParam(f"search|{name}", value=value))
        t.append(output)
        return t

    # 7. blastp, 12 columns, BLAST+'s default statistics; expected file made by BLAST+ 2.12
    # (test-data/make.sh)
    tests.append(blastp_test({"outfmt": f"6 {BLAST_STD}", "adv|evalue": "10"},
                             gxtp.TestOutput("blast_out", file="blastp-queries.cbs2.std.tsv")))
    # 8. blastp, 25 columns, -evalue 1e-5 -max_target_seqs 5 -comp_based_stats 0
    tests.append(blastp_test({"adv|evalue": "1e-5", "adv|max_target_seqs": "5", "adv|comp_based_stats": "0"},
                             gxtp.TestOutput("blast_out", file="blastp-queries.ext.tsv")))
    # 9. blastp, BLAST XML; BLAST+'s file differs in two lines, each counted twice: its version
    # and its database's path (the tool writes the dataset's name)
    tests.append(blastp_test({"outfmt": "5", "adv|evalue": "10"},
                             gxtp.TestOutput("blast_out", file="blastp-queries.xml", ftype="blastxml", lines_diff=4)))
    # 10. blastp, the pairwise report; BLAST+'s differs in its first line (the version) and its
    # two Database: lines (the dataset's name), each counted twice, and its Posted date line
    tests.append(blastp_test({"outfmt": "0", "adv|evalue": "10"},
                             gxtp.TestOutput("blast_out", file="blastp-queries.pairwise.txt", ftype="txt",
                                             lines_diff=7)))
    # 11. blastp against the BLAST database of the test data table (test-data/blastdb_p.loc: the
    # proteome as makeblastdb made it, test-data/make.sh): the rows of test 7
    tests.append(blastp_test({"db_opts|db_opts_selector": "db", "db_opts|database": "proteome",
                              "outfmt": f"6 {BLAST_STD}", "adv|evalue": "10"},
                             gxtp.TestOutput("blast_out", file="blastp-queries.cbs2.std.tsv")))
    tool.tests = tests

    tool.help = HELP
    citations = gxtp.Citations()
    for kind, value in CITATIONS:
        citations.append(gxtp.Citation(kind, value))
    tool.citations = citations
    return tool


def _add_column_names(xml: str) -> str:
    """BLAST's tabular output carries its column names (Galaxy metadata)."""
    std = ",".join(BLAST_STD.split())
    ext = ",".join(BLAST_EXT.split())
    actions = f"""
      <actions>
        <conditional name="search.outfmt">
          <when value="6 {BLAST_STD}">
            <action name="column_names" type="metadata" default="{std}"/>
          </when>
          <when value="6 {BLAST_EXT}">
            <action name="column_names" type="metadata" default="{ext}"/>
          </when>
        </conditional>
      </actions>"""
    marker = "<filter>search['type'] == 'blastp'</filter>"
    return xml.replace(marker, marker + actions, 1)


def tool_xml() -> str:
    """The text of tool.xml."""
    return _add_column_names(build_tool().export())
