"""BLASTP in the cuBLASTP style, reproducing NCBI BLAST+ 2.12 blastp hit for hit.

Stages, one module each, in cuBLASTP's order and vocabulary (seed 004); each
stage's output is a plain numpy array so the GPU kernels of part 2 can
replace them one by one:

    alphabet.py   NCBIstdaa encoding of sequences (BLAST's 28-letter alphabet)
    matrix.py     substitution matrices as BLAST+ builds them (BLOSUM62 ...)
    stats.py      Karlin-Altschul parameters, length adjustment, Spouge E-values,
                  bit scores, X-drop and cutoff scores, BLAST's text formats
    lookup.py     query lookup table of neighborhood words (W=3, T=11), query PSSM
    wordhits.py   hit detection: hits packed in 64-bit keys, binned by diagonal
    ungapped.py   two-hit filtering (window A=40) and ungapped X-drop extension
    gapped.py     preliminary gapped extension (score only, X-drop, restricted variant)
    traceback.py  gapped extension with traceback (ALIGN_EX) and HSP bookkeeping
    engine.py     per query: stages in order, E-values, purging, culling, ordering,
                  max_target_seqs / max_hsps (the CPU path of `gpu-search blastp`)
    output.py     -outfmt 6 / 7 with BLAST+'s columns and number formats

Facts to reproduce: ../shared/notes/blastp.md.
"""
