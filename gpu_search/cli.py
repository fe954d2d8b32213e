"""The ``gpu-search`` command line: it parses options and calls the library.

Subcommands: ``hmmsearch``, ``phmmer``, ``jackhmmer`` and ``hmmscan`` (HMMER's options and outputs),
``blastp`` (BLAST+'s options and tabular rows), ``makedb`` (a ``.gsdb`` database, optionally in shards), ``merge`` (the results of
database shards), ``galaxy-xml`` (the Galaxy tool's XML) and ``info`` (versions and GPUs).
Every user error ends as one line on stderr and a documented exit code;
outputs are written to temporary files and renamed only on success.
"""

from __future__ import annotations

import io
import math
import os
import shlex
import sys
import time

import click

_IMPORTED = time.time()          # (--timings: when the interpreter and click were ready)

from . import __version__, HMMER_DATE, HMMER_VERSION
from .errors import GpuSearchError, OptionError, OutputError, exit_code_help, printable
from .hmmer.options import SCORE_MATRICES

CONTEXT = dict(help_option_names=["-h", "--help"], max_content_width=100)


class FiniteFloat(click.ParamType):
    """A float option that must be a number: NaN and infinity are refused as option errors
    (exit 2) before they reach a threshold."""

    name = "float"

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


FINITE = FiniteFloat()
# BLAST+ keeps its integer options in 32-bit ints
INT32 = click.IntRange(-(1 << 31), (1 << 31) - 1)
# the largest -window_size taken: a two-hit window wider than any diagonal changes nothing,
# and each word finder's diagonal table holds query length + window entries
MAX_WINDOW = 1 << 20


def _fail(exc: GpuSearchError) -> None:
    # one line whatever the message quotes: a file name may hold a newline or control bytes
    click.echo(f"gpu-search: error: {printable(str(exc), 2000)}", err=True)
    sys.exit(exc.exit_code)


# `gpu-search --debug COMMAND ...`: an internal error shows Python's traceback (for a bug report)
_debug = False


def _internal_error(exc: BaseException) -> None:
    """A bug: still one line, unless asked for the traceback (``gpu-search --debug ...``)."""
    if _debug:
        raise exc
    msg = " ".join(str(exc).split())[:300]
    click.echo(f"gpu-search: internal error: {type(exc).__name__}: {msg} "
               f"(run `gpu-search --debug ...` for details)", err=True)
    sys.exit(1)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C is, so that every output's
    temporary file is removed on the way out (Slurm, Galaxy and Nextflow stop jobs with
    SIGTERM; a closed terminal or ssh session sends SIGHUP).  Exit 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame):
    raise Terminated(signum)


def _interrupt_in_chain(exc: BaseException):
    """The Ctrl-C or stop signal behind an exception, if one is: a signal that lands while
    compiled code (numba) hands back its result surfaces as a SystemError caused by it."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _stopped(exc: Terminated) -> None:
    import signal

    click.echo("gpu-search: terminated" if exc.signum == signal.SIGTERM else
               f"gpu-search: stopped by {signal.Signals(exc.signum).name}", err=True)
    sys.exit(128 + exc.signum)


def main(argv=None, *, blast_settings=None) -> None:
    """Entry point of the console script: runs the click group, maps errors to exit codes.

    ``blast_settings``: a ``BlastSettings`` for blastp (benchmarks; the options typed on the
    command line still win).  Called without ``argv`` it reads ``sys.argv`` and ends the
    process as the ``gpu-search`` program does (SIGTERM and SIGHUP then end it as Ctrl-C
    does, exit 143 and 129)."""
    global _debug
    _debug = False
    if argv is None:
        import signal

        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _on_signal)
    try:
        code = cli.main(args=argv, prog_name="gpu-search", standalone_mode=False,
                        obj={"blast_settings": blast_settings})
    except Terminated as exc:
        _stopped(exc)
    except GpuSearchError as exc:
        _fail(exc)
    except click.exceptions.Abort as exc:       # (click turns Ctrl-C, and so SIGTERM, into Abort)
        if isinstance(exc.__cause__, Terminated):
            _stopped(exc.__cause__)
        click.echo("gpu-search: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("gpu-search: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            _internal_error(exc)
        # a full disk or quota, or /dev/full: the outputs' temporary files are already gone
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(OutputError(f"{where}cannot write the output ({exc.strerror})"))
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        stop = _interrupt_in_chain(exc)
        if stop is not None:
            if isinstance(stop, Terminated):
                _stopped(stop)
            click.echo("gpu-search: interrupted", err=True)
            sys.exit(130)
        _internal_error(exc)
    if argv is None:
        # Done, the outputs written and renamed: the program ends here, without the
        # interpreter's teardown (CuPy's memory pool and CUDA context, numba's LLVM, every
        # module's objects), which took 0.5 s after a blastp run on an H100 and changes
        # nothing the user gets.  (Called with argv, from Python, it returns as usual.)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:
            os._exit(0)
        os._exit(code if isinstance(code, int) else 0)


@click.group(context_settings=CONTEXT, epilog=exit_code_help())
@click.version_option(__version__, prog_name="gpu-search")
@click.option("--debug", is_flag=True, help="On an internal error, show Python's traceback (for a bug report).")
def cli(debug):
    """GPU-accelerated protein homology search with HMMER's and BLAST's numbers."""
    global _debug
    _debug = debug


# --- hmmsearch -----------------------------------------------------------------------


def _device_option(f):
    f = click.option("--gpus", default=None, metavar="LIST",
                     help="GPU ids to use, e.g. 0,1 (default: all visible).")(f)
    f = click.option("--device", type=click.Choice(["auto", "cpu", "gpu", "reference"]), default="auto",
                     show_default=True,
                     help="Where the GPU stages run (the HMMER programs: MSV, bias and Viterbi filters; blastp: "
                          "word hits, two-hit filter, ungapped and preliminary gapped extension): auto (GPU if "
                          "usable, else CPU; the CPU too where the work is too small to repay the GPU's start, "
                          "said on stderr), cpu, "
                          "gpu (CUDA, error if none), reference (the HMMER programs: exact numpy "
                          "filters, slow, for testing; blastp: as cpu).  Results are the same on every device.")(f)
    f = click.option("--quiet", "-q", is_flag=True, help="No progress or notes on stderr.")(f)
    return f


def _options(*decorators):
    """One decorator applying click options in the order listed (the order --help shows)."""
    def apply(f):
        for decorator in reversed(decorators):
            f = decorator(f)
        return f
    return apply


# HMMER's options that hmmsearch, phmmer and hmmscan share (hmmsearch.c's, phmmer.c's and
# hmmscan.c's option tables), in three groups: phmmer puts its scoring options after the first,
# hmmsearch and hmmscan their --cut_* after the second.  hmmscan's have no -A, and their help
# says models where the targets are models.
_main_report_option = click.option("-o", "output", metavar="FILE", help="Direct the main report to FILE, not stdout.")
_alignment_option = click.option("-A", "alignment", metavar="FILE",
                                 help="Save a multiple alignment (Stockholm) of all included domains to FILE.")
_table_and_display_options = (
    click.option("--tblout", metavar="FILE", help="Save per-sequence hits in a table."),
    click.option("--domtblout", metavar="FILE", help="Save per-domain hits in a table."),
    click.option("--pfamtblout", metavar="FILE", help="Save hits in Pfam's table format."),
    click.option("--acc", is_flag=True, help="Prefer accessions over names in the main report."),
    click.option("--noali", is_flag=True, help="Leave alignments out of the main report."),
    click.option("--notextw", is_flag=True, help="Unlimited line width in the main report."),
    click.option("--textw", type=click.IntRange(min=120), default=120, show_default=True,
                 help="Line width of the main report."),
)
_hmmer_output_options = _options(_main_report_option, _alignment_option, *_table_and_display_options)
_hmmscan_output_options = _options(_main_report_option, *_table_and_display_options)


def _threshold_options(targets: str, inc_default: float = 0.01, included_in: str = ""):
    """The reporting and inclusion thresholds, ``targets`` (sequences, or hmmscan's models)
    named in their help; jackhmmer's inclusion defaults and what inclusion is for differ."""
    return _options(
        click.option("-E", "E", type=FINITE, default=10.0, show_default=True,
                     help=f"Report {targets} with E-value <= E."),
        click.option("-T", "T", type=FINITE, default=None, help=f"Report {targets} with score >= T (bits)."),
        click.option("--domE", "domE", type=FINITE, default=10.0, show_default=True,
                     help="Report domains with c-E-value <= this."),
        click.option("--domT", "domT", type=FINITE, default=None, help="Report domains with score >= this."),
        click.option("--incE", "incE", type=FINITE, default=inc_default, show_default=True,
                     help=f"Include {targets} with E-value <= this{included_in}."),
        click.option("--incT", "incT", type=FINITE, default=None,
                     help=f"Include {targets} with score >= this{included_in}."),
        click.option("--incdomE", "incdomE", type=FINITE, default=inc_default, show_default=True,
                     help=f"Include domains with c-E-value <= this{included_in}."),
        click.option("--incdomT", "incdomT", type=FINITE, default=None,
                     help=f"Include domains with score >= this{included_in}."),
    )


def _pipeline_options(Z_default: str):
    """The filter and search-space options; ``Z_default`` says what Z is when -Z is not given."""
    return _options(
        click.option("--max", "max_", is_flag=True, help="Turn all heuristic filters off (less speed, more power)."),
        click.option("--F1", "F1", type=FINITE, default=0.02, show_default=True, help="MSV filter P-value threshold."),
        click.option("--F2", "F2", type=FINITE, default=1e-3, show_default=True,
                     help="Viterbi filter P-value threshold."),
        click.option("--F3", "F3", type=FINITE, default=1e-5, show_default=True,
                     help="Forward filter P-value threshold."),
        click.option("--nobias", is_flag=True, help="Turn off the composition bias filter."),
        click.option("--nonull2", is_flag=True, help="Turn off biased composition score corrections (null2)."),
        click.option("-Z", "Z", type=FINITE, default=None,
                     help=f"Number of comparisons for E-values (default: {Z_default})."),
        click.option("--domZ", "domZ", type=FINITE, default=None,
                     help="Number of significant sequences for domain E-values."),
        click.option("--seed", type=click.IntRange(0, (1 << 31) - 1), default=42, show_default=True,
                     help="Random seed (0: a different one each run)."),
        click.option("--cpu", type=click.IntRange(min=1), default=None, help="CPU threads (default: all cores)."),
    )


_hmmer_threshold_options = _threshold_options("sequences")
_hmmer_pipeline_options = _pipeline_options(
    "sequences in the whole database; a .gsdb shard knows the whole database's count")
_cutoff_options = _options(
    click.option("--cut_ga", is_flag=True, help="Use the models' GA gathering cutoffs."),
    click.option("--cut_nc", is_flag=True, help="Use the models' NC noise cutoffs."),
    click.option("--cut_tc", is_flag=True, help="Use the models' TC trusted cutoffs."),
)
_hits_out_option = click.option(
    "--hits-out", metavar="FILE",
    help="Also save the complete hits (.gshits) for `gpu-search merge` of database shards.")
_skip_long_option = click.option(
    "--skip-long", is_flag=True,
    help="Leave out sequences over HMMER's 100,000-residue limit instead of stopping.")

# the shared options' parameters that are output files, not SearchOptions fields
_OUTPUT_PARAMS = ("output", "alignment", "tblout", "domtblout", "pfamtblout")

def _format_options(**files):
    """HMMER's --qformat / --tformat (``qformat="the query file (SEQFILE)"``...), echoed in the
    report's header as HMMER echoes them."""
    return _options(*(click.option(f"--{name}", name, metavar="FORMAT",
                                   help=f"Assert that {what} is in FORMAT, as HMMER's --{name}: one of "
                                        f"Easel's, read by Easel (fasta, embl, genbank, ddbj, uniprot, "
                                        f"stockholm, pfam, a2m, afa, clustal, clustallike, phylip, phylips, "
                                        f"psiblast, selex). Without it a plain file's format is recognised "
                                        f"as HMMER does, gzipped too (a pipe is read as FASTA); a .gsdb "
                                        f"or a BLAST database is known by its content.")
                      for name, what in files.items()))


def _stdin(path: str, other: str = "") -> str:
    """A HMMER program's input file: '-' is the standard input, as in HMMER, for one of
    its two inputs at most (``other``)."""
    if path != "-":
        return path
    if other == "-":
        raise OptionError("only one of the two inputs may be '-' (the standard input)")
    return "/dev/stdin"


def _seq_formats(shared: dict) -> dict:
    """--qformat and --tformat taken out of ``shared``, checked (:func:`.seqformats.check_format`):
    {"qformat": FORMAT or None, "tformat": ...}."""
    from .seqformats import check_format

    return {name: check_format(shared.pop(name, None), name) for name in ("qformat", "tformat")}


def _bit_cutoffs(cut_ga: bool, cut_nc: bool, cut_tc: bool) -> str | None:
    """--cut_ga, --cut_nc or --cut_tc as SearchOptions.bit_cutoffs (one at most)."""
    cutoffs = [name for flag, name in ((cut_ga, "gathering"), (cut_nc, "noise"), (cut_tc, "trusted")) if flag]
    if len(cutoffs) > 1:
        raise OptionError("use only one of --cut_ga, --cut_nc, --cut_tc")
    return cutoffs[0] if cutoffs else None


def _search_options(cls, shared: dict, **extra):
    """The SearchOptions (or PhmmerOptions) of the shared HMMER options' values, the options
    as typed recorded for the report's header."""
    fields = {k: v for k, v in shared.items() if k not in _OUTPUT_PARAMS + ("cpu", "max_", "qformat", "tformat")}
    options = cls(max=shared["max_"], **fields, **extra)
    options.given = _typed_options(click.get_current_context())
    return options


def _outputs(shared: dict) -> dict:
    return {k: shared.get(k) for k in _OUTPUT_PARAMS}


@cli.command(context_settings=CONTEXT, epilog=exit_code_help())
@click.argument("hmmfile", type=click.Path(dir_okay=True))
@click.argument("seqdb", type=click.Path(dir_okay=True))
@_hmmer_output_options
@_hmmer_threshold_options
@_cutoff_options
@_hmmer_pipeline_options
@_format_options(tformat="the target database (SEQDB)")
@_hits_out_option
@_skip_long_option
@_device_option
def hmmsearch(hmmfile, seqdb, cut_ga, cut_nc, cut_tc, hits_out, skip_long, device, gpus, quiet, **shared):
    """Search profile HMM(s) in HMMFILE against the protein sequences of SEQDB.

    HMMFILE holds one or more HMMER3 profiles (text or binary, may be gzipped);
    SEQDB is a protein FASTA file (may be gzipped) or another of HMMER's formats (--tformat:
    EMBL, UniProt, GenBank, Stockholm...), a .gsdb from `gpu-search makedb`, or a
    BLAST protein database made by makeblastdb (its name or folder).
    Scores, E-values, hits and domains are those of HMMER 3.4's hmmsearch.
    """
    from . import device as dev
    from .output import check_outputs

    outputs, cpu, Z = _outputs(shared), shared["cpu"], shared["Z"]
    check_outputs(*outputs.values(), hits_out)
    from .hmmer.models import open_hmms
    from .hmmer.options import SearchOptions
    from .seqformats import open_sequences

    formats = _seq_formats(shared)
    options = _search_options(SearchOptions, shared, bit_cutoffs=_bit_cutoffs(cut_ga, cut_nc, cut_tc))
    gpu_ids = _parse_gpus(gpus)
    dev.start_cuda(device, gpu_ids, forks=False)    # the GPUs' start overlaps reading the inputs
    # (a large model file streams into the search as it is parsed)
    hmms = open_hmms(_stdin(hmmfile, seqdb), threads=cpu)
    db = open_sequences(_stdin(seqdb, hmmfile), formats["tformat"], "tformat")
    db.check_for_hmmsearch(skip_long)       # report bad input before any note about the device
    _check_cutoffs(hmms, options)
    used = _hmmer_device(device, hmms, db, seqdb, cpu, Z, quiet)
    run_search(hmms, db, options, hmmfile=hmmfile, seqfile=seqdb, **outputs, device=used, cpus=cpu,
               skip_long=skip_long, gpus=gpu_ids, quiet=quiet, hits_out=hits_out)


# --- phmmer ----------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT, epilog=exit_code_help())
@click.argument("seqfile", type=click.Path(dir_okay=True))
@click.argument("seqdb", type=click.Path(dir_okay=True))
@_hmmer_output_options
@click.option("--popen", type=FINITE, default=0.02, show_default=True,
              help="Gap open probability, in [0, 0.5).")
@click.option("--pextend", type=FINITE, default=0.4, show_default=True,
              help="Gap extend probability, in [0, 1).")
@click.option("--mx", type=click.Choice(SCORE_MATRICES), default="BLOSUM62", show_default=True,
              help="Substitution score matrix (HMMER's built-in ones; --mxfile is not offered).")
@_hmmer_threshold_options
@_hmmer_pipeline_options
@_format_options(qformat="the query file (SEQFILE)", tformat="the target database (SEQDB)")
@_hits_out_option
@_skip_long_option
@_device_option
def phmmer(seqfile, seqdb, popen, pextend, mx, hits_out, skip_long, device, gpus, quiet, **shared):
    """Search each protein sequence of SEQFILE against the protein sequences of SEQDB, as
    HMMER's phmmer.

    SEQFILE is a protein FASTA file of one or more queries (may be gzipped) or another of
    HMMER's formats (--qformat); SEQDB as for hmmsearch: protein FASTA or another of HMMER's
    formats (--tformat), a .gsdb from `gpu-search makedb`, or a BLAST protein database.
    Each query becomes a profile HMM (phmmer's: --mx, --popen, --pextend), searched with
    hmmsearch's engine; scores, E-values, hits, domains and every output are those of
    HMMER 3.4's phmmer.  Not offered: --mxfile,
    the E-value calibration options (--EmL, --EmN, --EvL, --EvN, --EfL, --EfN, --Eft:
    HMMER's defaults are used).  A query without residues is refused (phmmer skips it
    silently).
    """
    from . import device as dev
    from .output import check_outputs

    outputs, cpu, Z = _outputs(shared), shared["cpu"], shared["Z"]
    check_outputs(*outputs.values(), hits_out)
    from .hmmer.options import PhmmerOptions
    from .hmmer.phmmer import build_models, read_queries
    from .hmmer.report import PHMMER
    from .seqformats import open_sequences

    formats = _seq_formats(shared)
    options = _search_options(PhmmerOptions, shared, popen=popen, pextend=pextend, mx=mx)
    gpu_ids = _parse_gpus(gpus)
    dev.start_cuda(device, gpu_ids, forks=False)    # the GPUs' start overlaps reading the inputs
    queries = read_queries(_stdin(seqfile, seqdb), formats["qformat"])
    db = open_sequences(_stdin(seqdb, seqfile), formats["tformat"], "tformat")
    db.check_for_hmmsearch(skip_long, "phmmer")       # report bad input before any note about the device
    hmms = build_models(queries, options, cpu)
    used = _hmmer_device(device, hmms, db, seqdb, cpu, Z, quiet)
    run_search(hmms, db, options, hmmfile=seqfile, seqfile=seqdb, **outputs, device=used, cpus=cpu,
               skip_long=skip_long, gpus=gpu_ids, quiet=quiet, hits_out=hits_out, program=PHMMER,
               queries=queries)


# --- jackhmmer -------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT, epilog=exit_code_help())
@click.argument("seqfile", type=click.Path(dir_okay=True))
@click.argument("seqdb", type=click.Path(dir_okay=True))
@click.option("-N", "N", type=click.IntRange(min=1), default=5, show_default=True,
              help="The most rounds of search (fewer where the search converges).")
@_main_report_option
@click.option("-A", "alignment", metavar="FILE",
              help="Save the alignment (Stockholm) of the query and the last round's included domains to FILE.")
@_options(*_table_and_display_options[:2])
@click.option("--chkhmm", metavar="PREFIX", help="Save each round's model to PREFIX-<round>.hmm.")
@click.option("--chkali", metavar="PREFIX", help="Save each round's alignment to PREFIX-<round>.sto.")
@_options(*_table_and_display_options[3:])
@click.option("--popen", type=FINITE, default=0.02, show_default=True,
              help="Gap open probability of the first round's model, in [0, 0.5).")
@click.option("--pextend", type=FINITE, default=0.4, show_default=True,
              help="Gap extend probability of the first round's model, in [0, 1).")
@click.option("--mx", type=click.Choice(SCORE_MATRICES), default="BLOSUM62", show_default=True,
              help="Substitution score matrix of the first round's model (HMMER's built-in ones).")
@_threshold_options("sequences", inc_default=0.001, included_in=" in the next round's model")
@_pipeline_options("sequences in the database")
@_format_options(qformat="the query file (SEQFILE)", tformat="the target database (SEQDB)")
@_skip_long_option
@_device_option
def jackhmmer(seqfile, seqdb, N, popen, pextend, mx, chkhmm, chkali, skip_long, device, gpus, quiet, **shared):
    """Search each protein sequence of SEQFILE against the protein sequences of SEQDB in
    rounds, as HMMER's jackhmmer.

    SEQFILE is a protein FASTA file of one or more queries (may be gzipped) or another of
    HMMER's formats (--qformat), searched one after the other; SEQDB as for hmmsearch:
    protein FASTA or another of HMMER's formats (--tformat), a .gsdb from `gpu-search makedb`
    (not a shard: each round's model comes from the whole database's hits), or a BLAST
    protein database.  Round 1 is phmmer's search (--mx, --popen, --pextend); each later
    round searches with a model built from the alignment of the query and the domains the
    round before included (--incE, --incdomE...), until -N rounds or convergence.  The
    report, -A, the tables and the checkpoint files are those of HMMER 3.4's jackhmmer.
    On the GPU each round runs hmmsearch's engine, the database kept on the GPU for every
    round of every query; on the CPU each query is searched on one thread, as jackhmmer's
    serial code does.  Not offered: the options of the later rounds' model
    construction (--fragthresh; --wpb, --wgsc, --wblosum, --wnone, --wid; --eent, --eentexp,
    --eclust, --enone, --eset, --ere, --esigma, --eid; --pnone, --plaplace: HMMER's defaults
    are used), --mxfile, the E-value calibration options (--EmL, --EmN, --EvL, --EvN,
    --EfL, --EfN, --Eft).  A query without
    residues is refused (jackhmmer skips it silently).
    """
    from . import device as dev
    from .output import check_outputs

    outputs, cpu = _outputs(shared), shared["cpu"]
    checkpoints = [f"{prefix}-1.{suffix}" for prefix, suffix in ((chkhmm, "hmm"), (chkali, "sto")) if prefix]
    check_outputs(*outputs.values(), *checkpoints)
    from .hmmer.jackhmmer import jackhmmer as run
    from .hmmer.jackhmmer import read_queries, round_work, write_outputs
    from .hmmer.options import JackhmmerOptions
    from .progress import Progress
    from .seqformats import open_sequences

    formats = _seq_formats(shared)
    options = _search_options(JackhmmerOptions, shared, N=N, popen=popen, pextend=pextend, mx=mx)
    gpu_ids = _parse_gpus(gpus)
    dev.start_cuda(device, gpu_ids, forks=False)    # the GPUs' start overlaps reading the inputs
    queries = read_queries(_stdin(seqfile, seqdb), formats["qformat"])
    db = open_sequences(_stdin(seqdb, seqfile), formats["tformat"], "tformat")
    if db.shard:
        raise OptionError(f"{printable(seqdb)} is shard {db.shard[0]} of {db.shard[1]}: jackhmmer needs the "
                          f"whole database (each round's model comes from all of the round before's hits)")
    db.check_for_hmmsearch(skip_long, "jackhmmer")      # bad input before any note about the device
    # (--device auto weighs a round's work: one model per query, of about the query's length,
    # on the CPU one query a thread)
    threads = min(cpu or os.cpu_count() or 1, queries.n_seqs)
    used = _hmmer_device(device, round_work(queries), db, seqdb, threads, None, quiet)
    progress = Progress("jackhmmer", queries.n_seqs, "queries", quiet)
    results = run(queries, db, options, device=used, cpus=cpu, skip_long=skip_long, gpus=gpu_ids,
                  callback=progress.update)
    write_outputs(results, options, seqfile=seqfile, seqdb=seqdb, output=outputs["output"],
                  alignment=outputs["alignment"], tblout=outputs["tblout"], domtblout=outputs["domtblout"],
                  chkhmm=chkhmm, chkali=chkali, progress=progress,
                  argv_line=" ".join(shlex.quote(a) for a in sys.argv[1:]) or "jackhmmer")


# --- hmmscan ---------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT, epilog=exit_code_help())
@click.argument("hmmdb", type=click.Path(dir_okay=True))
@click.argument("seqfile", type=click.Path(dir_okay=True))
@_hmmscan_output_options
@_threshold_options("models")
@_cutoff_options
@_pipeline_options("the number of models in HMMDB")
@_format_options(qformat="the query file (SEQFILE)")
@_skip_long_option
@_device_option
def hmmscan(hmmdb, seqfile, cut_ga, cut_nc, cut_tc, skip_long, device, gpus, quiet, **shared):
    """Search each protein sequence of SEQFILE against the profile HMMs of HMMDB, as HMMER's
    hmmscan.

    HMMDB is a database pressed by hmmpress (HMMDB.h3m, .h3i, .h3f, .h3p beside it: those
    are read, as hmmscan reads them), or an HMM file, text or binary, may be gzipped
    (hmmscan needs it pressed; here it need not be).  SEQFILE is a protein FASTA file of one
    or more queries (may be gzipped), or another of HMMER's formats (--qformat).  Results are grouped per query; scores, E-values, hits,
    domains and every output are those of HMMER 3.4's hmmscan (Z: the number of models).
    On the GPU the queries are held there and the models run through the MSV, bias and
    Viterbi filters in batches; HMMER's pipeline finishes what passes.  Not offered:
    hmmscan's search of
    the $PFAMDB folders for HMMDB.  A query without residues is refused (hmmscan reports it
    without hits); so is a model without the cutoff --cut_ga, --cut_nc or --cut_tc asks for
    (hmmscan skips such a model where it passes the MSV filter, without a word).
    """
    from . import device as dev
    from .output import check_outputs

    outputs, cpu = _outputs(shared), shared["cpu"]
    check_outputs(*outputs.values())
    from .hmmer.hmmscan import check_cutoffs, open_hmmdb, read_queries
    from .hmmer.hmmscan import hmmscan as run
    from .hmmer.options import SearchOptions
    from .hmmer.report import HMMSCAN
    from .hmmer.reportworkers import worker_count
    from .progress import Progress

    formats = _seq_formats(shared)
    options = _search_options(SearchOptions, shared, bit_cutoffs=_bit_cutoffs(cut_ga, cut_nc, cut_tc))
    gpu_ids = _parse_gpus(gpus)
    dev.start_cuda(device, gpu_ids, forks=False)    # the GPUs' start overlaps reading the inputs
    queries = read_queries(_stdin(seqfile), formats["qformat"])
    skip = queries.check_for_hmmsearch(skip_long, "hmmscan")
    db = open_hmmdb(hmmdb, threads=cpu)
    check_cutoffs(db, options)
    if skip is not None:
        import numpy as np

        queries = queries.subset(np.setdiff1d(np.arange(queries.n_seqs), skip))
    used = _hmmscan_device(device, db, queries, cpu, quiet)
    progress = Progress("hmmscan", queries.n_seqs, "queries", quiet)
    results = run(queries, db, options, device=used, cpus=cpu, gpus=gpu_ids,
                  callback=lambda done, total, note="": progress.update(done, note))
    # (hmmscan's report names the query sequence file first, then the HMM database)
    write_outputs(results, options, hmmfile=seqfile, seqfile=hmmdb, **outputs, progress=progress,
                  program=HMMSCAN, workers=worker_count(queries.n_seqs, cpu))


def _hmmscan_device(device, db, queries, cpus, quiet) -> str:
    """The device hmmscan runs on: --device resolved; auto with a usable GPU takes it where
    the work repays its start (else the CPU, said on stderr)."""
    from . import device as dev
    from .hmmer.crossover import choose_scan_device

    dev.wait_cuda()
    used = dev.resolve(device, quiet)
    if device == "auto" and used == "gpu":
        used, why = choose_scan_device(db.profiles, queries.n_seqs, queries.n_residues, cpus or os.cpu_count() or 1)
        if used == "cpu":
            dev.note(f"--device auto: searching on the CPU: {why}; --device gpu to use the GPU anyway")
    return used


def _hmmer_device(device, hmms, db, seqdb, cpus, Z, quiet) -> str:
    """The device hmmsearch's engine runs on (--device resolved, with auto's choice said on
    stderr), and the note that a shard's E-values are the whole database's."""
    from . import device as dev

    dev.wait_cuda()
    used = dev.resolve(device, quiet)
    if device == "auto" and used == "gpu":
        used = _auto_hmmsearch_device(hmms, db, cpus, quiet)
    if db.shard and Z is None and not quiet:
        dev.note(f"{seqdb} is shard {db.shard[0]} of {db.shard[1]}: E-values use the whole "
                 f"database's {db.total_seqs:,} sequences (-Z to change)")
    return used


def _auto_hmmsearch_device(hmms, db, cpus, quiet) -> str:
    """--device auto with a usable GPU: the GPU where the work repays its start, else the CPU
    (said on stderr)."""
    from . import device as dev
    from .hmmer.crossover import choose_device

    used, why = choose_device(hmms, db.n_seqs, db.n_residues, cpus or os.cpu_count() or 1)
    if used == "cpu":
        # (said even with --quiet: a GPU was asked for and is not used)
        dev.note(f"--device auto: searching on the CPU: {why}; --device gpu to use the GPU anyway")
    return used


def _given(ctx, name: str) -> bool:
    """Whether option ``name`` was given (on the command line or by a caller), not defaulted."""
    from click.core import ParameterSource

    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)


def _typed_options(ctx) -> dict[str, str | bool]:
    """The options given on the command line, as typed (HMMER echoes them so).

    Keys are SearchOptions field names (``E``, ``domE``, ``cut_ga``, ``cpu``...);
    values the text that followed the option, or True for a switch.
    """
    from click.core import ParameterSource

    field = {"max_": "max", "output": "o"}
    by_flag = {}
    for param in ctx.command.params:
        if isinstance(param, click.Option):
            for opt in param.opts:
                by_flag[opt] = param
    given = {}
    args = list(sys.argv[1:]) if ctx.parent is not None else []
    i = 0
    while i < len(args):
        token, value = args[i], None
        if "=" in token and token.startswith("--"):
            token, value = token.split("=", 1)
        param = by_flag.get(token)
        if param is not None and ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE:
            name = field.get(param.name, param.name)
            if param.is_flag:
                given[name] = True
            else:
                if value is None and i + 1 < len(args):
                    i += 1
                    value = args[i]
                given[name] = value
        i += 1
    return given


def _parse_gpus(gpus: str | None):
    if gpus is None:
        return None
    try:
        ids = [int(x) for x in gpus.split(",") if x.strip() != ""]
    except ValueError:
        raise OptionError(f"--gpus {gpus!r}: expected GPU ids like 0,1") from None
    if not ids or min(ids) < 0:
        raise OptionError(f"--gpus {gpus!r}: expected GPU ids like 0,1")
    return ids


def _check_cutoffs(hmms, options) -> None:
    """--cut_ga/nc/tc need every model to carry that cutoff (HMMER refuses otherwise); a
    stream of models checks each as it reads it."""
    from .hmmer.models import HMMStream, check_cutoff

    if not options.bit_cutoffs:
        return
    if isinstance(hmms, HMMStream):
        hmms.bit_cutoffs = options.bit_cutoffs
        return
    for hmm in hmms:
        check_cutoff(hmm, options.bit_cutoffs)


def run_search(hmms, db, options, *, hmmfile, seqfile, output, tblout, domtblout, pfamtblout,
               device, cpus, skip_long, gpus, quiet, hits_out=None, alignment=None, program=None,
               queries=None) -> None:
    """Run hmmsearch's engine and write every output atomically.

    phmmer: ``program`` PHMMER, ``queries`` the query sequences whose models ``hmms`` are
    (``hmmfile`` then names the query sequence file)."""
    from .hmmer.report import HMMSEARCH
    from .hmmer.reportworkers import worker_count
    from .hmmer.search import hmmsearch as run
    from .progress import Progress

    program = program or HMMSEARCH
    progress = Progress(program.name, len(hmms), "models" if queries is None else "queries", quiet)
    results = run(hmms, db, options, device=device, cpus=cpus, skip_long=skip_long, gpus=gpus,
                  callback=lambda h, n: progress.update(n))
    if queries is not None:
        from .hmmer.phmmer import with_queries

        results = with_queries(queries, results)
    if hits_out:
        from .hmmer.merge import save_results

        results = list(results)
        save_results(hits_out, results, hmmfile=hmmfile, seqfile=seqfile, options=options, database=db)
    write_outputs(results, options, hmmfile=hmmfile, seqfile=seqfile, output=output, tblout=tblout,
                  domtblout=domtblout, pfamtblout=pfamtblout, progress=progress, alignment=alignment,
                  program=program, workers=worker_count(len(hmms), cpus))


def write_outputs(results, options, *, hmmfile, seqfile, output, tblout, domtblout, pfamtblout,
                  progress=None, alignment=None, program=None, workers=0) -> None:
    """HMMER's main report and tables from per-query results; all files or none.
    ``program``: report.HMMSEARCH (the default), report.PHMMER or report.HMMSCAN (whose
    ``hmmfile`` is the query sequence file, ``seqfile`` the HMM database, as HMMER names
    them in the report's header and the tables' tails).  ``workers``: processes that format
    the queries' text beside the search (:mod:`.hmmer.reportworkers`; 0: this one)."""
    from .hmmer import report
    from .hmmer.reportworkers import query_texts
    from .output import OutputSet

    program = program or report.HMMSEARCH
    argv_line = " ".join(shlex.quote(a) for a in sys.argv[1:]) or program.name

    def with_query_accessions(results):
        for result in results:
            if getattr(result, "query", None) is not None and not program.scan:
                # phmmer.c gives the query sequence's accession in the tables; pyhmmer's
                # TopHits.write gives the hits' model's, which p7_SingleBuilder leaves unset
                result.hits.query.accession = result.query.accession or None
            yield result

    def timings(clock):
        """Each query's time since the one before (the first's since the search's start)."""
        while True:
            now = (time.monotonic(), os.times())
            yield report.Timing(user=now[1].user - clock[1].user, sys=now[1].system - clock[1].system,
                                elapsed=now[0] - clock[0])
            clock = now

    with OutputSet() as outs:
        main_fh = outs.open(output) if output else io.StringIO()
        tables = [(outs.open(path), fmt) for path, fmt in
                  ((tblout, "targets"), (domtblout, "domains"), (pfamtblout, "pfam")) if path]
        ali_fh = outs.open(alignment) if alignment else None
        report.write_header(main_fh, hmmfile, seqfile, options,
                            {"o": output, "A": alignment, "tblout": tblout, "domtblout": domtblout,
                             "pfamtblout": pfamtblout}, program=program)
        for result, text in query_texts(with_query_accessions(results), options, tuple(fmt for _, fmt in tables),
                                        program.scan, workers, timings((time.monotonic(), os.times()))):
            main_fh.write(text.main)
            if ali_fh is not None:
                report.write_alignment(ali_fh, main_fh, result, options, alignment, program=program)
            for (fh, _), rows in zip(tables, text.tables, strict=True):
                fh.write(rows)
        if progress:
            progress.close()
        report.write_footer(main_fh)
        for fh, fmt in tables:
            # (hmmscan.c ends its --pfamtblout in search mode, its other tables in scan mode)
            report.write_tabular_tail(fh, hmmfile, seqfile, argv_line, program=program,
                                      scan_mode=program.scan and fmt != "pfam")
        if not output:
            sys.stdout.write(main_fh.getvalue())
            sys.stdout.flush()
        outs.commit()


# --- merge ----------------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT, epilog=exit_code_help())
@click.argument("shards", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "output", metavar="FILE",
              help="Main report (hmmsearch, phmmer) or rows (blastp) to FILE, not stdout.")
@click.option("-A", "alignment", metavar="FILE",
              help="hmmsearch, phmmer: save a multiple alignment (Stockholm) of all included domains to FILE.")
@click.option("--tblout", metavar="FILE", help="hmmsearch, phmmer: save per-sequence hits in a table.")
@click.option("--domtblout", metavar="FILE", help="hmmsearch, phmmer: save per-domain hits in a table.")
@click.option("--pfamtblout", metavar="FILE", help="hmmsearch, phmmer: save hits in Pfam's table format.")
@click.option("-outfmt", "outfmt", default="6", show_default=True, help="blastp: tabular format (6, 7, 10) and columns.")
def merge(shards, output, alignment, tblout, domtblout, pfamtblout, outfmt):
    """Merge results of database shards: .gshits (hmmsearch, phmmer) or .gsblast (blastp) from
    --hits-out.

    Each shard must have been searched with the whole database's size (-Z for
    hmmsearch and phmmer, -dbsize for blastp; a .gsdb shard does this by itself). The
    merged output is that of one search of the whole database: hits re-sorted,
    thresholds (hmmsearch, phmmer: domZ too) and blastp's -max_target_seqs re-applied.
    Shards of different programs are refused (exit 2).
    """
    from .blast.merge import is_blast_hits
    from .hmmer.merge import read_shards
    from .output import check_outputs

    check_outputs(output, alignment, tblout, domtblout, pfamtblout)

    if is_blast_hits(shards[0]):
        from .blast.merge import merge_files
        from .blast.output import parse_outfmt
        from .output import OutputSet

        given = [flag for flag, path in (("-A", alignment), ("--tblout", tblout), ("--domtblout", domtblout),
                                         ("--pfamtblout", pfamtblout)) if path]
        if given:
            raise OptionError(f"{given[0]} is an output of hmmsearch and phmmer; blastp shards take -o and -outfmt")

        fmt, columns = parse_outfmt(outfmt)
        with OutputSet() as outs:
            fh = outs.open(output) if output else io.StringIO()
            merge_files(shards, fh, fmt=fmt, columns=columns)
            if not output:
                sys.stdout.write(fh.getvalue())
            outs.commit()
        return

    from .hmmer.report import HMMSEARCH, PHMMER

    results, meta = read_shards(shards)
    write_outputs(results, meta["options"], hmmfile=meta["hmmfile"], seqfile=meta["seqfile"],
                  output=output, tblout=tblout, domtblout=domtblout, pfamtblout=pfamtblout, alignment=alignment,
                  program=PHMMER if meta["program"] == "phmmer" else HMMSEARCH)


# --- blastp ---------------------------------------------------------------------------------


class BlastCommand(click.Command):
    """A command with BLAST+'s single-dash long options (-query, -evalue ...).

    click reads an unknown ``-task`` as the short option ``-t``; this names the
    whole option instead, and says why for the BLAST+ options left out.
    """

    NOT_HERE = {
        "-subject": "BLAST+'s two-sequences mode is not offered: give the subjects as a database, "
                    "-db FILE (rows as BLAST+ gives with a database made of them)",
        "-subject_loc": "BLAST+'s two-sequences mode is not offered",
        "-remote": "remote searches at NCBI are not offered",
        "-entrez_query": "remote searches at NCBI are not offered",
        "-html": "HTML output is not written (-outfmt 0, 5, 6, 7 or 10)",
        "-num_descriptions": "give -max_target_seqs: -outfmt 0 shows that many descriptions and "
                             "alignments (500 and 250 without it)",
        "-num_alignments": "give -max_target_seqs: -outfmt 0 shows that many descriptions and "
                           "alignments (500 and 250 without it)",
    }

    def parse_args(self, ctx, args):
        takes_value = {o: not p.is_flag for p in self.params if isinstance(p, click.Option)
                       for o in p.opts + p.secondary_opts}
        i = 0
        while i < len(args) and args[i] != "--":
            a = args[i]
            if a in takes_value:
                i += 2 if takes_value[a] else 1
                continue
            if a.startswith("-") and not a.startswith("--") and len(a) > 2:
                why = self.NOT_HERE.get(a, "not a BLAST+ blastp option that gpu-search knows (see --help)")
                raise click.UsageError(f"{a}: {why}", ctx)
            i += 1
        return super().parse_args(ctx, args)



# BLAST+ reads the option's first character: D is the default (2), F and T the old false and
# true; anything else turns the statistics off
_COMP_BASED_STATS = {"0": 0, "F": 0, "f": 0, "1": 1, "2": 2, "T": 2, "t": 2, "D": 2, "d": 2, "3": 3}

@cli.command(cls=BlastCommand, context_settings=CONTEXT, epilog=exit_code_help())
@click.option("-query", "query", required=True, metavar="FILE", help="Query protein FASTA (many queries, may be gzipped).")
@click.option("-db", "db", required=True, metavar="DB",
              help="Subject database: protein FASTA (may be gzipped), .gsdb, or a BLAST database made by "
                   "makeblastdb (its name, as BLAST+ takes it, or its folder).")
@click.option("-out", "out", metavar="FILE", help="Output file (default: stdout).")
@click.option("-task", "task", default="blastp", show_default=True,
              help="Only blastp (blastp-fast and blastp-short are not implemented).")
@click.option("-seg", "seg", default="no", show_default=True,
              help="SEG masking of the query: only no, BLAST+ blastp's default.")
@click.option("-outfmt", "outfmt", default="6", show_default=True,
              help='Output: "0" (BLAST\'s pairwise report, BLAST+\'s default), "5" (BLAST XML), or tabular: '
                   '"6" (tabs), "7" (tabs and comment lines) or "10" (commas), optionally followed by '
                   'columns, e.g. "6 std qlen slen".')
@click.option("-evalue", "evalue", type=FINITE, default=10.0, show_default=True, help="Expectation value threshold.")
@click.option("-max_target_seqs", "max_target_seqs", type=INT32, default=500, show_default=True,
              help="Maximum number of aligned sequences to keep per query.")
@click.option("-max_hsps", "max_hsps", type=INT32, default=None, help="Maximum number of HSPs per subject.")
@click.option("-dbsize", "dbsize", type=int, default=None,
              help="Effective database length in residues (the whole database's when searching a shard).")
@click.option("-matrix", "matrix", default="BLOSUM62", show_default=True, help="Scoring matrix.")
@click.option("-gapopen", "gapopen", type=INT32, default=None, help="Cost to open a gap (matrix default).")
@click.option("-gapextend", "gapextend", type=INT32, default=None, help="Cost to extend a gap (matrix default).")
@click.option("-word_size", "word_size", type=INT32, default=3, show_default=True, help="Word size for the initial hits.")
@click.option("-threshold", "threshold", type=FINITE, default=None, help="Minimum word score for the lookup table (11 for BLOSUM62).")
@click.option("-window_size", "window_size", type=click.IntRange(0, MAX_WINDOW), default=None,
              help=f"Two-hit window (matrix default: 40 for BLOSUM62); 0: one-hit word finder; at most "
                   f"{MAX_WINDOW:,} (the diagonal table is as long as query + window; BLAST+'s 32-bit "
                   f"arithmetic overflows near 2^31).")
@click.option("-comp_based_stats", "comp_based_stats", default="2", show_default=True,
              help="Composition-based statistics, as BLAST+: 0 or F (off), 1 (composition-based "
                   "statistics), 2, T or D (conditional compositional score-matrix adjustment, BLAST+'s "
                   "default), 3 (unconditional compositional score-matrix adjustment).")
@click.option("-num_threads", "num_threads", type=click.IntRange(min=1), default=None,
              help="CPU threads (default: all cores). With composition-based statistics the rows are "
                   "those of BLAST+ run with this -num_threads (BLAST+'s default 1, at most the cores): "
                   "BLAST+'s own rows depend on it.")
@click.option("--hits-out", "hits_out", metavar="FILE",
              help="Also save the rows at full precision (.gsblast) for `gpu-search merge` of database shards.")
@click.option("--gpu-extension", "gpu_extension", type=click.Choice(["auto", "window", "diagonal"]),
              default="auto", show_default=True,
              help="cuBLASTP's ungapped-extension variant on the GPU, same results: window (--gpu-window-lanes "
                   "threads per diagonal extend each hit together) or diagonal (a thread per diagonal extends "
                   "its hits in order); auto: window, or diagonal for low-complexity queries (measured "
                   "fastest).")
@click.option("--gpu-window-lanes", "gpu_window_lanes", type=click.Choice(["auto", "4", "8", "16", "32"]),
              default="auto", show_default=True,
              help="Threads per window of --gpu-extension window (cuBLASTP's window size); auto: 32 for "
                   "queries under 800 aa, 16 from 800 aa (measured).")
@click.option("--gpu-streams", "gpu_streams", type=click.IntRange(1, 16), default=3, show_default=True,
              help="Queries in flight on each GPU (one CUDA stream and host thread each), so that one "
                   "query's kernels overlap another's host work.")
@click.option("--gpu-gapped-cells", "gpu_gapped_cells", type=click.IntRange(1, 1 << 30), default=None,
              help="DP cells a GPU thread may compute for one subject's gapped extensions before leaving "
                   "the subject to a CPU thread (default: measured, see docs/benchmarks.md).  Same results.")
@click.option("--gpu-gapped/--cpu-gapped", "gpu_gapped", default=True, show_default=True,
              help="With a GPU: the preliminary (score-only) gapped extensions of subjects with few init HSPs "
                   "on the GPU too, or all of them on CPU threads.  Same results.")
@click.option("--timings", is_flag=True, hidden=True,
              help="Print where the run's time went on stderr (for the benchmarks).")
@click.option("--timeline", metavar="FILE", hidden=True,
              help="Write every timed interval of the run to FILE, JSON (bench/probes/timeline.py).")
@_device_option
def blastp(query, db, out, task, seg, outfmt, evalue, max_target_seqs, max_hsps, dbsize, matrix, gapopen, gapextend,
           word_size, threshold, window_size, comp_based_stats, num_threads, hits_out, gpu_extension,
           gpu_window_lanes, gpu_streams, gpu_gapped_cells, gpu_gapped, timings, timeline, device, gpus, quiet):
    """Protein BLAST: search protein queries against a protein database, as BLAST+ blastp.

    Rows are those of NCBI BLAST+ 2.12 blastp, in each -comp_based_stats mode.
    """
    from .blast.crossover import choose_device
    from .blast.engine import run_blastp
    from .output import check_outputs

    check_outputs(out, hits_out)
    from .blast.options import BlastOptions
    from .blast.output import parse_outfmt
    from .device import start_cuda
    from .output import OutputSet
    from .seqdb import open_database, read_fasta, residues_hint

    if task != "blastp":
        raise OptionError(f"-task {task}: only blastp is implemented")
    if seg != "no":
        raise OptionError(f"-seg {seg}: SEG masking is not implemented (BLAST+ blastp's default is -seg no)")
    cbs = _COMP_BASED_STATS.get(str(comp_based_stats)[:1])
    if cbs is None:
        # BLAST+ 2.12 runs without composition-based statistics then, and says nothing
        cbs = 0
        click.echo(f"gpu-search: warning: -comp_based_stats {comp_based_stats!r} is none of 0, 1, 2, 3, F, T, "
                   "D: composition-based statistics off, as BLAST+ takes it", err=True)
    options = BlastOptions(evalue=evalue, max_target_seqs=max_target_seqs, max_hsps=max_hsps, dbsize=dbsize,
                           matrix=matrix, gapopen=gapopen, gapextend=gapextend, word_size=word_size,
                           threshold=threshold, window_size=window_size, comp_based_stats=cbs,
                           num_threads=num_threads or os.cpu_count() or 1,
                           blast_threads=min(num_threads or 1, os.cpu_count() or 1))
    fmt, columns = parse_outfmt(outfmt)
    gpu_ids = _parse_gpus(gpus)
    settings = _blast_settings(click.get_current_context(), streams=gpu_streams, gapped=gpu_gapped,
                               gapped_cells=gpu_gapped_cells, extension=gpu_extension,
                               window_lanes=None if gpu_window_lanes == "auto" else int(gpu_window_lanes),
                               timings=timings, timeline=timeline)
    queries = read_fasta(query, blast="query")   # (small: read first, to know whether the GPU pays)
    hint = residues_hint(db) if device == "auto" else None
    if hint is None or choose_device(queries.n_seqs, queries.n_residues, hint, options.num_threads)[0] == "gpu":
        start_cuda(device, gpu_ids)    # the GPUs' start overlaps reading the database
    subjects = open_database(db, blast=True)     # (run_blastp decides --device auto from its exact size)
    stamps = [("cli", _IMPORTED), ("inputs", time.time())]
    with OutputSet() as outs:
        fh = outs.open(out) if out else io.StringIO()
        run_blastp(queries, subjects, options, fh, fmt=fmt, columns=columns,
                   db_name=os.path.basename(str(db)), quiet=quiet, hits_out=hits_out,
                   device=device, gpus=gpu_ids, settings=settings,
                   # -outfmt 0 without -max_target_seqs: BLAST+'s 500 descriptions, 250 alignments
                   num_alignments=None if _given(click.get_current_context(), "max_target_seqs") else 250)
        stamps.append(("searched", time.time()))
        if not out:
            sys.stdout.write(fh.getvalue())
            sys.stdout.flush()
        outs.commit()
    if settings.timings:                       # for bench/blastp_gpu_bench.py's start-up breakdown
        print("gpu-search blastp stamps (epoch s): " + "  ".join(f"{k}={t:.3f}" for k, t in stamps),
              file=sys.stderr)


_SETTINGS_OPTIONS = dict(streams="gpu_streams", gapped="gpu_gapped", gapped_cells="gpu_gapped_cells",
                         extension="gpu_extension", window_lanes="gpu_window_lanes", timings="timings",
                         timeline="timeline")


def _blast_settings(ctx, **given):
    """The run's BlastSettings: those a caller passed (``main(blast_settings=)``, a benchmark),
    with the options typed on the command line over them; else the options' values."""
    from click.core import ParameterSource

    from .blast.settings import BlastSettings

    base = (ctx.obj or {}).get("blast_settings")
    if base is None:
        return BlastSettings(**given)
    from dataclasses import replace

    typed = {k: v for k, v in given.items()
             if ctx.get_parameter_source(_SETTINGS_OPTIONS[k]) not in (ParameterSource.DEFAULT, None)}
    return replace(base, **typed)


# --- makedb -------------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT, epilog=exit_code_help())
@click.argument("fasta", type=click.Path(dir_okay=True))
@click.option("-o", "out", required=True, metavar="DB.gsdb", help="Output database file.")
@click.option("--shards", type=click.IntRange(min=1), default=1, show_default=True,
              help="Also cut the database into N shards of balanced residue counts "
                   "(written as DB.shardIofN.gsdb; each knows the whole database's size).")
@click.option("--quiet", "-q", is_flag=True, help="No progress, and nothing printed on success.")
def makedb(fasta, out, shards, quiet):
    """Pre-digitize a protein FASTA (may be gzipped), or a BLAST database made by makeblastdb,
    into a memory-mappable .gsdb."""
    from .output import check_outputs
    from .seqdb import makedb as build

    check_outputs(out)
    t0 = time.monotonic()
    paths = build(fasta, out, shards, quiet=quiet)
    if not quiet:
        from .seqdb import open_database

        for p in paths:
            d = open_database(p)
            part = f" (shard {d.shard[0]}/{d.shard[1]} of {d.total_seqs:,} sequences)" if d.shard else ""
            click.echo(f"{p}\t{d.n_seqs:,} sequences\t{d.n_residues:,} residues{part}", err=True)
        click.echo(f"gpu-search makedb: done in {time.monotonic() - t0:.1f} s", err=True)


# --- compile -------------------------------------------------------------------------------


@cli.command("compile", context_settings=CONTEXT)
@click.option("--arch", default="90", show_default=True, metavar="CC[,CC]",
              help="GPU architectures the kernels are built for, comma-separated (80: A100; 90: H100 and "
                   "H200); 'none': numba's loops only.  Without CuPy only numba's loops are made.")
@click.option("--quiet", "-q", is_flag=True, help="Nothing printed on success.")
def compile_ahead(arch, quiet):
    """Compile what searches need (numba's loops, the GPU kernels) once, ahead of time.

    Run it after installing (an image's build does): otherwise the first search on a host
    compiles them, about 20 s of a first blastp run."""
    from .warmup import compile_all

    try:
        compile_all(None if arch == "none" else arch, quiet=quiet)
    except RuntimeError as exc:
        raise OutputError(f"compile: failed: {exc}") from None


# --- galaxy-xml ----------------------------------------------------------------------------


@cli.command("galaxy-xml", context_settings=CONTEXT)
def galaxy_xml():
    """Print the Galaxy tool wrapper (tool.xml), generated from gpu_search/galaxy.py."""
    try:
        from .galaxy import tool_xml
    except ImportError:
        raise OptionError("galaxy-xml needs galaxyxml: pip install 'gpu-search[galaxy]'") from None
    click.echo(tool_xml(), nl=False)


# --- info -----------------------------------------------------------------------------------


@cli.command(context_settings=CONTEXT)
def info():
    """Versions, and whether a GPU and CuPy are usable here."""
    from importlib.metadata import PackageNotFoundError, version

    from .device import gpu_status

    def ver(pkg):
        try:
            return version(pkg)
        except PackageNotFoundError:
            return "not installed"

    cupy = "not installed"
    for name in ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy"):
        if ver(name) != "not installed":
            cupy = f"{ver(name)} ({name})"
            break
    ok, reason, names = gpu_status()
    lines = [
        f"gpu-search   {__version__}",
        f"HMMER        {HMMER_VERSION} ({HMMER_DATE}), through pyhmmer {ver('pyhmmer')}",
        f"python       {sys.version.split()[0]}",
        f"numpy        {ver('numpy')}",
        f"numba        {ver('numba')}",
        f"click        {ver('click')}",
        f"cupy         {cupy}",
        f"CPU cores    {os.cpu_count()}",
        f"GPU          {'yes: ' + ', '.join(names) if ok else 'no: ' + reason}",
        f"device auto  {'gpu' if ok else 'cpu (same results, slower)'}",
    ]
    click.echo("\n".join(lines))
