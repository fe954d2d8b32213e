# Sourced by the blastp probes on the GPU host (blastp_where.sh, blastp_two_gpus.sh), with n, db and
# hom set: the host's packages put on the paths (bench/device_run.sh), the cell of
# bench/blastp_matrix.py built in $W, and its files: Q (queries), G (our .gsdb), B (BLAST+'s database).
bash bench/device_run.sh none > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:/tmp/deb/usr/bin:$PATH
export LD_LIBRARY_PATH=/tmp/deb/usr/lib/x86_64-linux-gnu:/tmp/deb/lib/x86_64-linux-gnu:/tmp/deb/usr/lib/ncbi-blast+
OUT=${OUT:-/tmp/out}; W=/tmp/gsmatrix; mkdir -p "$OUT" $W
t=$(date +%s.%N)
python3 bench/blastp_matrix.py --build-only --cells "$n:$db:$hom" --work $W 2>&1 | tail -3
echo "built in $(python3 -c "import time; print(round(time.time() - $t, 1))") s"
if [ "$n" = all ]; then          # the whole proteome: its file is named by its count, the largest set
    Q=$(ls -S $W/blastp_queries_n*_*.faa | head -1)
else
    Q=$(ls $W/blastp_queries_n${n}_*.faa | head -1)
fi
copies=$(python3 -c "print({'proteome': 9, '68m': 99, '273m': 399}['$db'])")   # the database's copies
G=$(ls $W/db_${hom}_c${copies}_*.gsdb | head -1)
B=${G%.gsdb}.blastdb/$(basename ${G%.gsdb})
echo "queries $Q; database $G"
