#!/usr/bin/env bash
# Rebuild the expected outputs of test-data/ with HMMER 3.4 and BLAST+ 2.12 themselves (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
exe=$(python3 -c "import sys; sys.path.insert(0, 'tests/helpers'); from oracle.build import build; print(build('hmmsearch_oracle'))")
T=test-data

# hmmsearch with the options Galaxy's tool passes (tool.xml), --cpu 1 as in Galaxy's tests
"$exe" --cpu 1 -o $T/four-models.out -A $T/four-models.sto --tblout $T/four-models.tblout --domtblout $T/four-models.domtblout \
       --pfamtblout $T/four-models.pfamtblout -E 10.0 --domE 10.0 --incE 0.01 --incdomE 0.01 \
       --F1 0.02 --F2 0.001 --F3 1e-05 --seed 42 $T/four-models.hmm $T/proteome.faa
"$exe" --cpu 1 -o /dev/null --tblout $T/PF02826.cut_ga.tblout --cut_ga \
       --F1 0.02 --F2 0.001 --F3 1e-05 --seed 42 $T/PF02826.hmm $T/proteome.faa
# the test proteome as GenBank records (another of HMMER's formats: name, accession, description),
# searched as Galaxy's tool searches a genbank dataset (--tformat genbank)
python3 - $T/proteome.faa $T/proteome.gb <<'PY'
import sys
records, out = [], []
for line in open(sys.argv[1]):
    if line.startswith(">"):
        name, _, desc = line[1:].strip().partition(" ")
        records.append([name, desc.strip(), ""])
    else:
        records[-1][2] += line.strip()
for i, (name, desc, seq) in enumerate(records):
    out.append(f"LOCUS       {name} {len(seq)} aa linear BCT 01-JAN-2000")
    out.append(f"DEFINITION  {desc or '.'}")
    if i % 3:                                   # every third without an accession
        out += [f"ACCESSION   GS{i:05d}", f"VERSION     GS{i:05d}.1"]
    out.append("ORIGIN")
    out += [f"{k + 1:>9} " + " ".join(seq[j:j + 10].lower() for j in range(k, min(k + 60, len(seq)), 10))
            for k in range(0, len(seq), 60)]
    out.append("//")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
"$exe" --cpu 1 -o /dev/null --tblout $T/proteome.gb.tblout --tformat genbank -E 10.0 --domE 10.0 --incE 0.01 \
       --incdomE 0.01 --F1 0.02 --F2 0.001 --F3 1e-05 --seed 42 $T/four-models.hmm $T/proteome.gb

# blastp (BLAST+ 2.12, Debian's ncbi-blast+)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
makeblastdb -in $T/proteome.faa -dbtype prot -title proteome.faa -out "$tmp/proteome" > /dev/null
STD="qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore"
EXT="$STD sallseqid score nident positive gaps ppos qframe sframe qseq sseq qlen slen salltitles"
blastp -query $T/blastp-queries.faa -db "$tmp/proteome" -comp_based_stats 0 -evalue 10 \
       -outfmt "6 $STD" > $T/blastp-queries.std.tsv
blastp -query $T/blastp-queries.faa -db "$tmp/proteome" -comp_based_stats 0 -evalue 1e-5 -max_target_seqs 5 \
       -outfmt "6 $EXT" > $T/blastp-queries.ext.tsv 2>/dev/null
# BLAST+'s defaults (-comp_based_stats 2): what a run without options gives
blastp -query $T/blastp-queries.faa -db "$tmp/proteome" -evalue 10 \
       -outfmt "6 $STD" > $T/blastp-queries.cbs2.std.tsv
# the same as BLAST XML (Galaxy's blastxml); the database found through BLASTDB, so that the file
# names it "proteome", not by a temporary folder's path
BLASTDB="$tmp" blastp -query $T/blastp-queries.faa -db proteome -evalue 10 -outfmt 5 > $T/blastp-queries.xml
# the BLAST database of the Galaxy tool's test data table (test-data/blastdb_p.loc)
rm -f $T/blastdb/proteome.*
makeblastdb -in $T/proteome.faa -dbtype prot -title proteome.faa -out $T/blastdb/proteome > /dev/null
# and as the pairwise report, with -max_target_seqs given as Galaxy's tool gives it
BLASTDB="$tmp" blastp -query $T/blastp-queries.faa -db proteome -evalue 10 -max_target_seqs 500 -outfmt 0 \
       > $T/blastp-queries.pairwise.txt

# phmmer with the options Galaxy's tool passes (tool.xml), --cpu 1 as in Galaxy's tests
pexe=$(python3 -c "import sys; sys.path.insert(0, 'tests/helpers'); from oracle.build import build; print(build('phmmer_oracle'))")
"$pexe" --cpu 1 -o /dev/null --tblout $T/blastp-queries.phmmer.tblout --domtblout $T/blastp-queries.phmmer.domtblout \
        -E 10.0 --domE 10.0 --incE 0.01 --incdomE 0.01 --F1 0.02 --F2 0.001 --F3 1e-05 --seed 42 \
        --popen 0.02 --pextend 0.4 --mx BLOSUM62 $T/blastp-queries.faa $T/proteome.faa

# jackhmmer with the options Galaxy's tool passes (tool.xml), --cpu 1 as in Galaxy's tests
jexe=$(python3 -c "import sys; sys.path.insert(0, 'tests/helpers'); from oracle.build import build; print(build('jackhmmer_oracle'))")
"$jexe" --cpu 1 -N 3 -o $T/blastp-queries.jackhmmer.out -A $T/blastp-queries.jackhmmer.sto \
        --tblout $T/blastp-queries.jackhmmer.tblout --domtblout $T/blastp-queries.jackhmmer.domtblout \
        -E 10.0 --domE 10.0 --incE 0.001 --incdomE 0.001 --F1 0.02 --F2 0.001 --F3 1e-05 --seed 42 \
        --popen 0.02 --pextend 0.4 --mx BLOSUM62 $T/blastp-queries.faa $T/proteome.faa

# hmmscan: the four models pressed by hmmpress for the test data table (test-data/hmm_database.loc;
# pressed in their folder, so the index names no other path; the HMM file itself is not kept:
# hmmscan reads only the pressed files), and HMMER's hmmscan of the test proteome against them with
# the options Galaxy's tool passes (tool.xml), --cpu 1 as in Galaxy's tests
sexe=$(python3 -c "import sys; sys.path.insert(0, 'tests/helpers'); from oracle.build import build; print(build('hmmscan_oracle'))")
mkdir -p $T/hmmdb
rm -f $T/hmmdb/four-models.hmm*
cp $T/four-models.hmm $T/hmmdb/four-models.hmm
(cd $T/hmmdb && "$sexe" --press four-models.hmm)
rm $T/hmmdb/four-models.hmm
"$sexe" --cpu 1 -o /dev/null --tblout $T/proteome.hmmscan.tblout --domtblout $T/proteome.hmmscan.domtblout \
        --pfamtblout $T/proteome.hmmscan.pfamtblout -E 10.0 --domE 10.0 --incE 0.01 --incdomE 0.01 \
        --F1 0.02 --F2 0.001 --F3 1e-05 --seed 42 $T/hmmdb/four-models.hmm $T/proteome.faa
