"""BLASTP in the cuBLASTP style, reproducing NCBI BLAST+ 2.12 blastp row for row.

Stages, one module each, in cuBLASTP's order and vocabulary; each stage's
output is a plain numpy array, and the GPU kernels (:mod:`.gpu`) replace the
ungapped stage and part of the preliminary gapped stage with the same arrays:

    alphabet.py   NCBIstdaa encoding of sequences (BLAST's 28-letter alphabet)
    matrix.py     substitution matrices as BLAST+ builds them (BLOSUM62 ...)
    stats.py      Karlin-Altschul parameters, length adjustment, Spouge E-values,
                  bit scores, X-drop and cutoff scores, BLAST's text formats
    lookup.py     query lookup table of neighborhood words (W=3, T=11), query PSSM
    wordhits.py   hit detection: hits packed in 64-bit keys, binned by diagonal
    ungapped.py   two-hit filtering (window A=40) and ungapped X-drop extension
    gapped.py     preliminary gapped extension (score only, X-drop, restricted variant)
    traceback.py  gapped extension with traceback (ALIGN_EX) and HSP bookkeeping
    hitlist.py    E-values, BLAST's order of subjects, the preliminary hit list, -max_target_seqs
    pipeline.py   the stages of one query in order (the CPU path)
    scheduler.py  the stages on GPUs, CPU threads and worker processes, overlapped
    workers.py    the traceback's worker processes
    engine.py     one run: options to rows (``run_blastp``)
    settings.py   how a run uses the machine (``BlastSettings``)
    options.py    BLAST+'s search options
    output.py     -outfmt 6 / 7 with BLAST+'s columns and number formats
    merge.py      the rows of database shards merged as one search's

The BLAST+ facts these reproduce are in docs/gpu-design.md.
"""
