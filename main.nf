#!/usr/bin/env nextflow
/*
 * gpu-search: protein homology search over many GPU jobs, with E-values of the whole database.
 *
 *   nextflow run main.nf -profile gpu,docker --search hmmsearch --hmm models.hmm --db proteins.faa.gz --shards 8
 *   nextflow run main.nf -profile gpu,singularity --search blastp --queries q.faa --db proteins.faa.gz --shards 8
 *   nextflow run main.nf -profile gpu,docker --search phmmer --queries q.faa --db proteins.faa.gz --shards 8
 *   nextflow run main.nf -profile docker --search hmmscan --queries q.faa --hmm Pfam-A.hmm --shards 8
 *   nextflow run main.nf -profile gpu,docker --search jackhmmer --queries q.faa --db proteins.faa.gz --rounds 3
 *   nextflow run main.nf -profile test,docker
 *
 * The database is cut once (gpu-search makedb --shards N) into shards of balanced
 * residue counts that record the whole database's size; each shard is searched in
 * its own task (one GPU each) with E-values of the whole database (-Z / -dbsize come
 * from the shard itself); the shards' complete results are merged into exactly the
 * output one search of the whole database gives (gpu-search merge).
 *
 * hmmscan searches each query against every model, and each query's results depend only on
 * the models (Z is the number of models): the query FASTA is cut into parts instead, each part
 * searched against the whole HMM database in its own task, and the parts' outputs put back
 * together in query order, as one hmmscan run writes them.
 *
 * jackhmmer is not cut at all: each round's model is built from the whole database's hits of the
 * round before, so the queries are searched against the whole database in one task (GPU_JACKHMMER).
 */
nextflow.enable.dsl = 2

params.search    = 'hmmsearch'      // hmmsearch | phmmer | blastp | hmmscan | jackhmmer
params.hmm       = null             // hmmsearch: HMM file; hmmscan: the HMM database (an HMM file, or the name given to hmmpress)
params.queries   = null             // phmmer, blastp, hmmscan, jackhmmer: query FASTA
params.db        = null             // protein FASTA (may be gzipped); not for hmmscan; jackhmmer: also a .gsdb from gpu-search makedb (not a shard)
params.shards    = 4                // hmmscan: the parts the query FASTA is cut into; not for jackhmmer
params.rounds    = 5                // jackhmmer: the most rounds of search (-N; fewer where a query converges)
params.outdir    = 'results'
params.outfmt    = '6 std sallseqid score nident positive gaps ppos qframe sframe qseq sseq qlen slen salltitles'   // blastp: the shards' and the merged table's columns
params.write_align = false          // hmmsearch, phmmer: also the merged alignment of the included domains (-A, Stockholm), as nf-core's write_align; jackhmmer: the query and the last round's included domains
// The image is not published in any registry: build it once, on each machine that runs tasks
// (or push it to a registry of yours and give its name), from the repository's root:
//   docker build -f containers/Dockerfile -t gpu-search:0.1.0 .         (podman build: the same)
// and for Singularity/Apptainer, a SIF made from it:
//   apptainer build gpu-search-0.1.0.sif docker-daemon://gpu-search:0.1.0
params.container = 'gpu-search:0.1.0'   // Docker/Podman: the image's name
params.sif       = null                 // Singularity/Apptainer: the SIF's path

def container_for(task) {
    // the same image for both engines: its SIF for Singularity/Apptainer, else the image itself
    return workflow.containerEngine in ['singularity', 'apptainer'] ? params.sif : params.container
}

process GPU_SEARCH_MAKEDB {
    tag "$meta.id"
    label 'process_medium'
    container { container_for(task) }

    input:
    tuple val(meta), path(fasta)
    val n_shards

    output:
    tuple val(meta), path("*.gsdb"), emit: shards
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    gpu-search makedb ${args} --shards ${n_shards} -o ${prefix}.gsdb ${fasta}
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.shard1of1.gsdb
    """
}

// hmmsearch, or phmmer where meta.search is 'phmmer' (hmmfile then the query FASTA): phmmer
// is hmmsearch's search of the models it builds from the queries, with the same outputs
process GPU_HMMSEARCH {
    tag "$meta.id"
    label 'process_gpu'
    container { container_for(task) }

    input:
    tuple val(meta), path(hmmfile), path(seqdb)

    output:
    tuple val(meta), path("*.txt.gz")   , emit: output
    tuple val(meta), path("*.tbl.gz")   , emit: target_summary
    tuple val(meta), path("*.domtbl.gz"), emit: domain_summary
    tuple val(meta), path("*.gshits")   , emit: hits
    tuple val(meta), path("*.stderr.txt"), emit: stderr
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    // a GPU where the task was given one (the gpu profile's accelerator), else the CPU
    def device = task.accelerator ? 'auto' : 'cpu'
    def program = meta.search == 'phmmer' ? 'phmmer' : 'hmmsearch'
    // --quiet still says on stderr when no GPU was usable ("gpu-search: no usable GPU (...)");
    // stderr is kept in the task's log and in *.stderr.txt, which the workflow reads
    """
    gpu-search ${program} \\
        --cpu ${task.cpus} \\
        --device ${device} \\
        --quiet \\
        -o ${prefix}.txt \\
        --tblout ${prefix}.tbl \\
        --domtblout ${prefix}.domtbl \\
        --hits-out ${prefix}.gshits \\
        ${args} \\
        ${hmmfile} \\
        ${seqdb} \\
        2> ${prefix}.stderr.txt || { status=\$?; cat ${prefix}.stderr.txt >&2; exit \$status; }
    cat ${prefix}.stderr.txt >&2
    gzip --no-name ${prefix}.txt ${prefix}.tbl ${prefix}.domtbl
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    echo "" | gzip > ${prefix}.txt.gz
    echo "" | gzip > ${prefix}.tbl.gz
    echo "" | gzip > ${prefix}.domtbl.gz
    touch ${prefix}.gshits ${prefix}.stderr.txt
    """
}

process GPU_BLASTP {
    tag "$meta.id"
    label 'process_gpu'
    container { container_for(task) }

    input:
    tuple val(meta), path(fasta)
    tuple val(meta2), path(db)
    val outfmt      // BLAST+'s tabular -outfmt, e.g. '6 std'

    output:
    tuple val(meta), path("*.tsv")       , emit: tsv
    tuple val(meta), path("*.gsblast")   , emit: hits
    tuple val(meta), path("*.stderr.txt"), emit: stderr
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? 'auto' : 'cpu'
    """
    gpu-search blastp \\
        -query ${fasta} \\
        -db ${db} \\
        -outfmt '${outfmt}' \\
        -num_threads ${task.cpus} \\
        --device ${device} \\
        --quiet \\
        -out ${prefix}.tsv \\
        --hits-out ${prefix}.gsblast \\
        ${args} \\
        2> ${prefix}.stderr.txt || { status=\$?; cat ${prefix}.stderr.txt >&2; exit \$status; }
    cat ${prefix}.stderr.txt >&2
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.tsv ${prefix}.gsblast ${prefix}.stderr.txt
    """
}

process GPU_SEARCH_MERGE {
    tag "$meta.id"
    label 'process_single'
    container { container_for(task) }

    input:
    tuple val(meta), path(hits)     // meta.search: 'hmmsearch' | 'phmmer' | 'blastp'
    val outfmt                      // blastp: the merged table's -outfmt
    val write_align                 // hmmsearch, phmmer: also the included domains' alignment (-A)

    output:
    tuple val(meta), path("*.merged.*"), emit: merged
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def align  = write_align ? " -A ${prefix}.merged.sto" : ""
    def outputs = meta.search == 'blastp' ?
        "-outfmt '${outfmt}' -o ${prefix}.merged.tsv" :
        "-o ${prefix}.merged.txt --tblout ${prefix}.merged.tbl --domtblout ${prefix}.merged.domtbl${align}"
    """
    gpu-search merge ${args} ${outputs} ${hits}
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    def align  = write_align ? " ${prefix}.merged.sto" : ""
    def outputs = meta.search == 'blastp' ? "${prefix}.merged.tsv" :
        "${prefix}.merged.txt ${prefix}.merged.tbl ${prefix}.merged.domtbl${align}"
    """
    touch ${outputs}
    """
}

// the query FASTA cut into n_parts contiguous parts (as many as it has sequences, where fewer)
// whose numbers of sequences differ by at most one, in the file's order, each line as it is (a
// gzipped file decompressed): <prefix>.partK.faa, K zero-padded to the width of n_parts; a file
// without sequences is passed on as it is, as one part, for the search to refuse with its own
// message
process GPU_SEARCH_SPLIT {
    tag "$meta.id"
    label 'process_single'
    container { container_for(task) }

    input:
    tuple val(meta), path(fasta)
    val n_parts

    output:
    tuple val(meta), path("*.part*.faa"), emit: parts
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    n=\$(gzip -cdf ${fasta} | grep -c '^>' || true)
    gzip -cdf ${fasta} | awk -v n=\$n -v parts=${n_parts} -v prefix=${prefix} '
        function name(k) { return sprintf("%s.part%0" w "d.faa", prefix, k) }
        BEGIN { p = (parts < n ? parts : n); w = length(parts "") }
        /^>/ { i++ }
        { f = name(i > 0 ? int((i - 1) * p / n) + 1 : 1)
          if (f != prev) { if (prev != "") close(prev); prev = f }
          print > f }
        END { if (prev == "") printf "" > name(1) }'
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.part1.faa
    """
}

// hmmscan of one part of the queries against the whole HMM database (the part's queries held on
// the GPU, the models streamed through the filters)
process GPU_HMMSCAN {
    tag "$meta.id"
    label 'process_gpu'
    container { container_for(task) }

    input:
    tuple val(meta), path(seqfile)
    tuple val(meta2), path(hmmdb)   // the database's files: its HMM file, hmmpress's .h3m .h3i .h3f .h3p, or both; meta2.id: the HMM file's name (the name given to hmmpress)

    output:
    tuple val(meta), path("*.out")       , emit: output
    tuple val(meta), path("*.tbl")       , emit: target_summary
    tuple val(meta), path("*.domtbl")    , emit: domain_summary
    tuple val(meta), path("*.stderr.txt"), emit: stderr
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? 'auto' : 'cpu'
    """
    gpu-search hmmscan \\
        --cpu ${task.cpus} \\
        --device ${device} \\
        --quiet \\
        -o ${prefix}.out \\
        --tblout ${prefix}.tbl \\
        --domtblout ${prefix}.domtbl \\
        ${args} \\
        ${meta2.id} \\
        ${seqfile} \\
        2> ${prefix}.stderr.txt || { status=\$?; cat ${prefix}.stderr.txt >&2; exit \$status; }
    cat ${prefix}.stderr.txt >&2
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.out ${prefix}.tbl ${prefix}.domtbl ${prefix}.stderr.txt
    """
}

// the parts' hmmscan outputs (each list in query order) put together as one hmmscan run of all
// the queries writes them: the report's header (up to its first query) and each table's three
// column-header lines from the first part (hmmscan writes them with its first query), every
// part's queries and rows, and the last part's closing [ok] and table tails (program, files,
// options, date)
process GPU_HMMSCAN_MERGE {
    tag "$meta.id"
    label 'process_single'
    container { container_for(task) }

    input:
    tuple val(meta), path(reports), path(tbls), path(domtbls)

    output:
    tuple val(meta), path("*.merged.*"), emit: merged
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    first=1
    for f in ${reports}; do
        awk -v first=\$first '/^Query: / { q = 1 } (q || first) && \$0 != "[ok]"' "\$f"
        first=0
    done > ${prefix}.merged.txt
    echo '[ok]' >> ${prefix}.merged.txt
    table() {
        out=\$1; shift
        n=\$#; i=0
        for f in "\$@"; do
            i=\$((i + 1))
            from=4; [ \$i -gt 1 ] || from=1
            to=0; [ \$i -eq \$n ] || to=\$(grep -n '^# Program:' "\$f" | tail -n 1 | cut -d: -f1)
            awk -v from=\$from -v to=\$to 'NR >= from && (to == 0 || NR < to - 1)' "\$f"
        done > "\$out"
    }
    table ${prefix}.merged.tbl ${tbls}
    table ${prefix}.merged.domtbl ${domtbls}
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.merged.txt ${prefix}.merged.tbl ${prefix}.merged.domtbl
    """
}

// jackhmmer of the query FASTA against the whole database, in one task: each round's model is
// built from the whole database's hits of the round before, so the database is not cut into
// shards (gpu-search jackhmmer refuses a shard, exit 2) and nothing is merged
process GPU_JACKHMMER {
    tag "$meta.id"
    label 'process_gpu'
    container { container_for(task) }

    input:
    tuple val(meta), path(seqfile)
    tuple val(meta2), path(seqdb)   // the whole database: protein FASTA (may be gzipped), a .gsdb from gpu-search makedb (not a shard), or a BLAST database's folder
    val rounds                      // the most rounds (-N)
    val write_align                 // also the alignment of the query and the last round's included domains (-A)

    output:
    tuple val(meta), path("*.txt.gz")    , emit: output
    tuple val(meta), path("*.tbl.gz")    , emit: target_summary
    tuple val(meta), path("*.domtbl.gz") , emit: domain_summary
    tuple val(meta), path("*.sto.gz")    , emit: alignments, optional: true
    tuple val(meta), path("*.stderr.txt"), emit: stderr
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? 'auto' : 'cpu'
    def align  = write_align ? "-A ${prefix}.sto" : ""
    def align_gz = write_align ? " ${prefix}.sto" : ""
    """
    gpu-search jackhmmer \\
        -N ${rounds} \\
        --cpu ${task.cpus} \\
        --device ${device} \\
        --quiet \\
        -o ${prefix}.txt \\
        --tblout ${prefix}.tbl \\
        --domtblout ${prefix}.domtbl \\
        ${align} \\
        ${args} \\
        ${seqfile} \\
        ${seqdb} \\
        2> ${prefix}.stderr.txt || { status=\$?; cat ${prefix}.stderr.txt >&2; exit \$status; }
    cat ${prefix}.stderr.txt >&2
    gzip --no-name ${prefix}.txt ${prefix}.tbl ${prefix}.domtbl${align_gz}
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    def align_gz = write_align ? " ${prefix}.sto.gz" : ""
    """
    for f in ${prefix}.txt.gz ${prefix}.tbl.gz ${prefix}.domtbl.gz${align_gz}; do echo "" | gzip > \$f; done
    touch ${prefix}.stderr.txt
    """
}

workflow SHARDED_SEARCH {
    take:
    db        // channel: [meta, fasta], meta.id names the merged outputs (one merge per database)
    n_shards  // val: shards a database
    search    // val: 'hmmsearch' | 'phmmer' | 'blastp'
    query     // val: path of the HMM file (hmmsearch) or query FASTA (phmmer, blastp)
    outfmt    // val: blastp's tabular -outfmt (not used by hmmsearch, phmmer)
    write_align  // val: hmmsearch, phmmer: also the merged alignment of the included domains (not used by blastp)

    main:
    GPU_SEARCH_MAKEDB(db, n_shards)
    // one task per shard; the database's meta goes along for the merge
    shards = GPU_SEARCH_MAKEDB.out.shards
        .flatMap { meta, files -> (files instanceof List ? files : [files]).collect { shard ->
            [meta + [id: shard.baseName, search: search, database: meta], shard] } }
    if (search == 'blastp') {
        GPU_BLASTP(
            shards.map { meta, shard -> [meta, file(query)] },
            shards,
            outfmt
        )
        hits = GPU_BLASTP.out.hits
        task_stderr = GPU_BLASTP.out.stderr
    } else {
        // hmmsearch or phmmer (meta.search says which)
        GPU_HMMSEARCH(shards.map { meta, shard -> [meta, file(query), shard] })
        hits = GPU_HMMSEARCH.out.hits
        task_stderr = GPU_HMMSEARCH.out.stderr
    }
    // a task given a GPU that could not use it searched on the CPU (same results, much slower):
    // gpu-search says so on its stderr, which Nextflow shows for failed tasks only, so it is said here
    task_stderr
        .filter { meta, txt -> txt.text.contains('no usable GPU') }
        .subscribe { meta, txt -> log.warn "${meta.id}: ${txt.text.readLines().find { it.contains('no usable GPU') }}" }
    // gpu-search merge puts the shards back in database order itself
    merged_in = hits
        .map { meta, h -> [meta.database + [search: search], h] }
        .groupTuple(sort: true)
    GPU_SEARCH_MERGE(merged_in, outfmt, write_align)

    emit:
    merged = GPU_SEARCH_MERGE.out.merged
}

workflow SHARDED_HMMSCAN {
    take:
    queries   // channel: [meta, fasta], meta.id names the merged outputs (one merge per query file)
    hmmdb     // val: [meta2, files]: the HMM database's files (its HMM file, hmmpress's .h3m .h3i .h3f .h3p, or both), meta2.id its HMM file's name
    n_parts   // val: parts each query file is cut into

    main:
    GPU_SEARCH_SPLIT(queries, n_parts)
    // one task per part, numbered in query order; the query file's meta goes along for the merge
    parts = GPU_SEARCH_SPLIT.out.parts
        .flatMap { meta, files -> (files instanceof List ? files : [files]).sort { it.name }.withIndex()
            .collect { part, i -> [meta + [id: part.baseName, part: i, queries: meta], part] } }
    GPU_HMMSCAN(parts, hmmdb)
    merged_in = GPU_HMMSCAN.out.output
        .join(GPU_HMMSCAN.out.target_summary)
        .join(GPU_HMMSCAN.out.domain_summary)
        .map { meta, out, tbl, domtbl -> [meta.queries, [meta.part, out, tbl, domtbl]] }
        .groupTuple()
        .map { meta, rows ->
            def byPart = rows.sort { it[0] }
            [meta, byPart.collect { it[1] }, byPart.collect { it[2] }, byPart.collect { it[3] }] }
    GPU_HMMSCAN_MERGE(merged_in)

    emit:
    merged = GPU_HMMSCAN_MERGE.out.merged
}

def db_id(path) {
    return file(path).name.replaceAll(/\.(gz|faa|fasta|fa)$/, '').replaceAll(/\.(faa|fasta|fa)$/, '')
}

workflow {
    if (!(params.search in ['hmmsearch', 'phmmer', 'blastp', 'hmmscan', 'jackhmmer'])) { error "--search ${params.search}: give hmmsearch, phmmer, blastp, hmmscan or jackhmmer" }
    if (workflow.containerEngine in ['singularity', 'apptainer'] && !params.sif) {
        error "give --sif: the SIF made from the gpu-search image (apptainer build gpu-search-0.1.0.sif docker-daemon://gpu-search:0.1.0)"
    }
    if (params.search == 'hmmscan') {
        // the queries cut into parts, each searched against the whole HMM database
        if (!params.queries || !params.hmm) { error "--search hmmscan: give --queries (protein FASTA) and --hmm (the HMM database)" }
        def hmm_files = ['', '.h3m', '.h3i', '.h3f', '.h3p'].collect { file(params.hmm + it) }.findAll { it.exists() }
        if (!hmm_files) { error "--hmm ${params.hmm}: no such HMM file, and no .h3m, .h3i, .h3f, .h3p beside it" }
        queries = Channel.of([[id: db_id(params.queries)], file(params.queries, checkIfExists: true)])
        SHARDED_HMMSCAN(queries, [[id: file(params.hmm).name], hmm_files], params.shards)
        SHARDED_HMMSCAN.out.merged.subscribe { meta, files -> log.info "merged: ${files}" }
    } else if (params.search == 'jackhmmer') {
        // one task: the queries against the whole database (not sharded, nothing to merge)
        if (!params.queries || !params.db) {
            error "--search jackhmmer: give --queries (protein FASTA) and --db (the whole protein database: FASTA, may be gzipped, a .gsdb from gpu-search makedb, not a shard, or a BLAST database's folder)"
        }
        queries = Channel.of([[id: db_id(params.queries)], file(params.queries, checkIfExists: true)])
        GPU_JACKHMMER(queries, [[id: db_id(params.db)], file(params.db, checkIfExists: true)], params.rounds, params.write_align)
        // as SHARDED_SEARCH: a task given a GPU that could not use it says so on its stderr
        GPU_JACKHMMER.out.stderr
            .filter { meta, txt -> txt.text.contains('no usable GPU') }
            .subscribe { meta, txt -> log.warn "${meta.id}: ${txt.text.readLines().find { it.contains('no usable GPU') }}" }
        GPU_JACKHMMER.out.output.subscribe { meta, report -> log.info "jackhmmer: ${report}" }
    } else {
        if (!params.db) { error "give --db: the protein database (FASTA, may be gzipped)" }
        def query = params.search in ['phmmer', 'blastp'] ? params.queries : params.hmm
        if (!query) { error "give --hmm (hmmsearch) or --queries (phmmer, blastp)" }
        db = Channel.of([[id: db_id(params.db)], file(params.db, checkIfExists: true)])
        SHARDED_SEARCH(db, params.shards, params.search, query, params.outfmt, params.write_align)
        SHARDED_SEARCH.out.merged.subscribe { meta, files -> log.info "merged: ${files}" }
    }
}
