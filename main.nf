#!/usr/bin/env nextflow
/*
 * gpu-search: protein homology search over many GPU jobs, with E-values of the whole database.
 *
 *   nextflow run main.nf -profile gpu,docker --search hmmsearch --hmm models.hmm --db proteins.faa.gz --shards 8
 *   nextflow run main.nf -profile gpu,singularity --search blastp --queries q.faa --db proteins.faa.gz --shards 8
 *   nextflow run main.nf -profile test,docker
 *
 * The database is cut once (gpu-search makedb --shards N) into shards of balanced
 * residue counts that record the whole database's size; each shard is searched in
 * its own task (one GPU each) with E-values of the whole database (-Z / -dbsize come
 * from the shard itself); the shards' complete results are merged into exactly the
 * output one search of the whole database gives (gpu-search merge).
 */
nextflow.enable.dsl = 2

params.search   = 'hmmsearch'      // hmmsearch | blastp
params.hmm      = null             // hmmsearch: HMM file
params.queries  = null             // blastp: query FASTA
params.db       = null             // protein FASTA (may be gzipped)
params.shards   = 4
params.outdir   = 'results'
params.outfmt   = '6 std sallseqid score nident positive gaps ppos qframe sframe qseq sseq qlen slen salltitles'

def container_for(task) {
    // the same image for both engines: a SIF for Singularity/Apptainer, else Docker's
    def sif    = 'oras://ghcr.io/gpu-search/gpu-search:0.1.0-sif'
    def docker = 'quay.io/gpu-search/gpu-search:0.1.0'
    return (workflow.containerEngine in ['singularity', 'apptainer'] && !task.ext.singularity_pull_docker_container) ? sif : docker
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

process GPU_HMMSEARCH {
    tag "$meta.id"
    label 'process_gpu'
    accelerator 1
    container { container_for(task) }

    input:
    tuple val(meta), path(hmmfile), path(seqdb)

    output:
    tuple val(meta), path("*.txt.gz")   , emit: output
    tuple val(meta), path("*.tbl.gz")   , emit: target_summary
    tuple val(meta), path("*.domtbl.gz"), emit: domain_summary
    tuple val(meta), path("*.gshits")   , emit: hits
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? 'auto' : 'cpu'
    """
    gpu-search hmmsearch \\
        --cpu ${task.cpus} \\
        --device ${device} \\
        --quiet \\
        -o ${prefix}.txt \\
        --tblout ${prefix}.tbl \\
        --domtblout ${prefix}.domtbl \\
        --hits-out ${prefix}.gshits \\
        ${args} \\
        ${hmmfile} \\
        ${seqdb}
    gzip --no-name ${prefix}.txt ${prefix}.tbl ${prefix}.domtbl
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    echo "" | gzip > ${prefix}.txt.gz
    echo "" | gzip > ${prefix}.tbl.gz
    echo "" | gzip > ${prefix}.domtbl.gz
    touch ${prefix}.gshits
    """
}

process GPU_BLASTP {
    tag "$meta.id"
    label 'process_gpu'
    accelerator 1
    container { container_for(task) }

    input:
    tuple val(meta), path(fasta)
    tuple val(meta2), path(db)

    output:
    tuple val(meta), path("*.tsv")    , emit: tsv
    tuple val(meta), path("*.gsblast"), emit: hits
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? 'auto' : 'cpu'
    """
    gpu-search blastp \\
        -query ${fasta} \\
        -db ${db} \\
        -num_threads ${task.cpus} \\
        --device ${device} \\
        --quiet \\
        -out ${prefix}.tsv \\
        --hits-out ${prefix}.gsblast \\
        ${args}
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.tsv ${prefix}.gsblast
    """
}

process GPU_SEARCH_MERGE {
    tag "$meta.id"
    label 'process_single'
    container { container_for(task) }

    input:
    tuple val(meta), path(hits)

    output:
    tuple val(meta), path("${meta.id}.merged.*"), emit: merged
    tuple val("${task.process}"), val('gpu-search'), eval("gpu-search --version | sed 's/.* //'"), topic: versions

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def outputs = meta.search == 'blastp' ?
        "-o ${prefix}.merged.tsv" :
        "-o ${prefix}.merged.txt --tblout ${prefix}.merged.tbl --domtblout ${prefix}.merged.domtbl"
    """
    gpu-search merge ${args} ${outputs} ${hits}
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    touch ${prefix}.merged.tsv
    """
}

workflow SHARDED_SEARCH {
    take:
    db        // tuple(meta, fasta)
    n_shards  // val
    search    // 'hmmsearch' | 'blastp'
    query     // path: HMM file or query FASTA

    main:
    GPU_SEARCH_MAKEDB(db, n_shards)
    shards = GPU_SEARCH_MAKEDB.out.shards
        .transpose()
        .map { meta, shard -> [meta + [id: shard.baseName, search: search], shard] }
    if (search == 'blastp') {
        GPU_BLASTP(
            shards.map { meta, shard -> [meta, file(query)] },
            shards
        )
        hits = GPU_BLASTP.out.hits
    } else {
        GPU_HMMSEARCH(shards.map { meta, shard -> [meta, file(query), shard] })
        hits = GPU_HMMSEARCH.out.hits
    }
    // gpu-search merge puts the shards back in database order itself
    merged_in = hits
        .map { meta, h -> h }
        .collect(sort: true)
        .map { h -> [[id: db_id(params.db), search: search], h] }
    GPU_SEARCH_MERGE(merged_in)

    emit:
    merged = GPU_SEARCH_MERGE.out.merged
}

def db_id(path) {
    return file(path).name.replaceAll(/\.(gz|faa|fasta|fa)$/, '').replaceAll(/\.(faa|fasta|fa)$/, '')
}

workflow {
    if (!params.db) { error "give --db: the protein database (FASTA, may be gzipped)" }
    def query = params.search == 'blastp' ? params.queries : params.hmm
    if (!query) { error "give --hmm (hmmsearch) or --queries (blastp)" }
    db = Channel.of([[id: db_id(params.db)], file(params.db, checkIfExists: true)])
    SHARDED_SEARCH(db, params.shards, params.search, query)
    SHARDED_SEARCH.out.merged.subscribe { meta, files -> log.info "merged: ${files}" }
}
