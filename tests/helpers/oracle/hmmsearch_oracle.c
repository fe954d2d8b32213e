/* hmmsearch_oracle: HMMER 3.4's own hmmsearch, serial, rebuilt from library calls.
 *
 * Test oracle only.  Linked against the libhmmer/libeasel shared libraries
 * shipped inside the pyhmmer wheel (HMMER 3.4, SSE build), it repeats
 * hmmsearch.c's serial_master() and serial_loop() (no threads, no MPI) and
 * writes every report with HMMER's own functions:
 *
 *   header           p7_banner + output_header() (copied from hmmsearch.c)
 *   per query        p7_tophits_Targets, p7_tophits_Domains, p7_pli_Statistics
 *   --tblout         p7_tophits_TabularTargets   + p7_tophits_TabularTail
 *   --domtblout      p7_tophits_TabularDomains   + p7_tophits_TabularTail
 *   --pfamtblout     p7_tophits_TabularXfam      + p7_tophits_TabularTail
 *   -A               p7_tophits_Alignment + esl_msafile_Write, after each query's "//"
 *
 * so gpu-search's Python writers (gpu_search/hmmer/report.py) can be compared
 * with HMMER line by line.
 *
 * Usage:  hmmsearch_oracle [options] <hmmfile> <seqfile>
 *
 * Options: -o, -A, --tblout, --domtblout, --pfamtblout, --acc, --noali, --notextw,
 *   --textw, -E, -T, --domE, --domT, --incE, --incT, --incdomE, --incdomT,
 *   --cut_ga, --cut_nc, --cut_tc, --max, --F1, --F2, --F3, --nobias,
 *   --nonull2, -Z, --domZ, --seed, --tformat, --cpu (accepted and echoed as
 *   hmmsearch does; the search itself is always serial).
 *
 * Differences from the real hmmsearch, all deliberate:
 *   - serial only: HMMER's threaded search gives each worker its own
 *     running target count, which (only) changes which sub-threshold hits are
 *     kept in the hit list, and so the width of the name columns;
 *   - the hidden --restrictdb_* options are not offered;
 *   - argv[0] is replaced by "hmmsearch", so the banner and the tabular
 *     "# Option settings:" line read as hmmsearch's own.
 *
 * Build (tests/helpers/oracle/build.py does this):
 *   cc -O1 -I$LIBS/include/libhmmer -I$LIBS/include/libeasel -I$LIBS/include/libhmmer/impl_sse \
 *      hmmsearch_oracle.c -L$LIBS -llibhmmer -llibeasel -Wl,-rpath,$LIBS -lm -lpthread -o hmmsearch_oracle
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easel.h"
#include "esl_alphabet.h"
#include "esl_getopts.h"
#include "esl_msa.h"
#include "esl_msafile.h"
#include "esl_sq.h"
#include "esl_sqio.h"
#include "esl_stopwatch.h"

#include "hmmer.h"

#define REPOPTS     "-E,-T,--cut_ga,--cut_nc,--cut_tc"
#define DOMREPOPTS  "--domE,--domT,--cut_ga,--cut_nc,--cut_tc"
#define INCOPTS     "--incE,--incT,--cut_ga,--cut_nc,--cut_tc"
#define INCDOMOPTS  "--incdomE,--incdomT,--cut_ga,--cut_nc,--cut_tc"
#define THRESHOPTS  "-E,-T,--domE,--domT,--incE,--incT,--incdomE,--incdomT,--cut_ga,--cut_nc,--cut_tc"

/* hmmsearch.c's option table (HMMER 3.4), less --restrictdb_*. */
static ESL_OPTIONS options[] = {
  /* name           type      default  env  range     toggles   reqs   incomp              help                                                      docgroup*/
  { "-h",           eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  NULL,            "show brief help on version and usage",                         1 },
  /* Control of output */
  { "-o",           eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "direct output to file <f>, not stdout",                        2 },
  { "-A",           eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "save multiple alignment of all hits to file <f>",              2 },
  { "--tblout",     eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "save parseable table of per-sequence hits to file <f>",        2 },
  { "--domtblout",  eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "save parseable table of per-domain hits to file <f>",          2 },
  { "--pfamtblout", eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "save table of hits and domains to file, in Pfam format <f>",   2 },
  { "--acc",        eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  NULL,            "prefer accessions over names in output",                       2 },
  { "--noali",      eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  NULL,            "don't output alignments, so output is smaller",                2 },
  { "--notextw",    eslARG_NONE,    NULL, NULL, NULL,    NULL,  NULL, "--textw",        "unlimit ASCII text output line width",                         2 },
  { "--textw",      eslARG_INT,    "120", NULL, "n>=120",NULL,  NULL, "--notextw",      "set max width of ASCII text output lines",                     2 },
  /* Control of reporting thresholds */
  { "-E",           eslARG_REAL,  "10.0", NULL, "x>0",   NULL,  NULL,  REPOPTS,         "report sequences <= this E-value threshold in output",         4 },
  { "-T",           eslARG_REAL,   FALSE, NULL, NULL,    NULL,  NULL,  REPOPTS,         "report sequences >= this score threshold in output",           4 },
  { "--domE",       eslARG_REAL,  "10.0", NULL, "x>0",   NULL,  NULL,  DOMREPOPTS,      "report domains <= this E-value threshold in output",           4 },
  { "--domT",       eslARG_REAL,   FALSE, NULL, NULL,    NULL,  NULL,  DOMREPOPTS,      "report domains >= this score cutoff in output",                4 },
  /* Control of inclusion (significance) thresholds */
  { "--incE",       eslARG_REAL,  "0.01", NULL, "x>0",   NULL,  NULL,  INCOPTS,         "consider sequences <= this E-value threshold as significant",  5 },
  { "--incT",       eslARG_REAL,   FALSE, NULL, NULL,    NULL,  NULL,  INCOPTS,         "consider sequences >= this score threshold as significant",    5 },
  { "--incdomE",    eslARG_REAL,  "0.01", NULL, "x>0",   NULL,  NULL,  INCDOMOPTS,      "consider domains <= this E-value threshold as significant",    5 },
  { "--incdomT",    eslARG_REAL,   FALSE, NULL, NULL,    NULL,  NULL,  INCDOMOPTS,      "consider domains >= this score threshold as significant",      5 },
  /* Model-specific thresholding for both reporting and inclusion */
  { "--cut_ga",     eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  THRESHOPTS,      "use profile's GA gathering cutoffs to set all thresholding",   6 },
  { "--cut_nc",     eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  THRESHOPTS,      "use profile's NC noise cutoffs to set all thresholding",       6 },
  { "--cut_tc",     eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  THRESHOPTS,      "use profile's TC trusted cutoffs to set all thresholding",     6 },
  /* Control of acceleration pipeline */
  { "--max",        eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL, "--F1,--F2,--F3", "Turn all heuristic filters off (less speed, more power)",      7 },
  { "--F1",         eslARG_REAL,  "0.02", NULL, NULL,    NULL,  NULL, "--max",          "Stage 1 (MSV) threshold: promote hits w/ P <= F1",             7 },
  { "--F2",         eslARG_REAL,  "1e-3", NULL, NULL,    NULL,  NULL, "--max",          "Stage 2 (Vit) threshold: promote hits w/ P <= F2",             7 },
  { "--F3",         eslARG_REAL,  "1e-5", NULL, NULL,    NULL,  NULL, "--max",          "Stage 3 (Fwd) threshold: promote hits w/ P <= F3",             7 },
  { "--nobias",     eslARG_NONE,   NULL,  NULL, NULL,    NULL,  NULL, "--max",          "turn off composition bias filter",                             7 },
  /* Other options */
  { "--nonull2",    eslARG_NONE,   NULL,  NULL, NULL,    NULL,  NULL,  NULL,            "turn off biased composition score corrections",               12 },
  { "-Z",           eslARG_REAL,   FALSE, NULL, "x>0",   NULL,  NULL,  NULL,            "set # of comparisons done, for E-value calculation",          12 },
  { "--domZ",       eslARG_REAL,   FALSE, NULL, "x>0",   NULL,  NULL,  NULL,            "set # of significant seqs, for domain E-value calculation",   12 },
  { "--seed",       eslARG_INT,    "42",  NULL, "n>=0",  NULL,  NULL,  NULL,            "set RNG seed to <n> (if 0: one-time arbitrary seed)",         12 },
  { "--tformat",    eslARG_STRING,  NULL, NULL, NULL,    NULL,  NULL,  NULL,            "assert target <seqfile> is in format <s>: no autodetection",  12 },
  { "--cpu",        eslARG_INT,    "2","HMMER_NCPU","n>=0",NULL, NULL,  NULL,            "number of parallel CPU workers (accepted; search is serial)", 12 },
  {  0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
};

#include "seq_format.h"

static char usage[]  = "[options] <hmmfile> <seqdb>";
static char banner[] = "search profile(s) against a sequence database";


/* As hmmsearch.c's output_header(), for the options offered here. */
static void
output_header(FILE *ofp, const ESL_GETOPTS *go, char *hmmfile, char *seqfile)
{
  p7_banner(ofp, go->argv[0], banner);

  fprintf(ofp, "# query HMM file:                  %s\n", hmmfile);
  fprintf(ofp, "# target sequence database:        %s\n", seqfile);
  if (esl_opt_IsUsed(go, "-o"))           fprintf(ofp, "# output directed to file:         %s\n",             esl_opt_GetString(go, "-o"));
  if (esl_opt_IsUsed(go, "-A"))           fprintf(ofp, "# MSA of all hits saved to file:   %s\n",             esl_opt_GetString(go, "-A"));
  if (esl_opt_IsUsed(go, "--tblout"))     fprintf(ofp, "# per-seq hits tabular output:     %s\n",             esl_opt_GetString(go, "--tblout"));
  if (esl_opt_IsUsed(go, "--domtblout"))  fprintf(ofp, "# per-dom hits tabular output:     %s\n",             esl_opt_GetString(go, "--domtblout"));
  if (esl_opt_IsUsed(go, "--pfamtblout")) fprintf(ofp, "# pfam-style tabular hit output:   %s\n",             esl_opt_GetString(go, "--pfamtblout"));
  if (esl_opt_IsUsed(go, "--acc"))        fprintf(ofp, "# prefer accessions over names:    yes\n");
  if (esl_opt_IsUsed(go, "--noali"))      fprintf(ofp, "# show alignments in output:       no\n");
  if (esl_opt_IsUsed(go, "--notextw"))    fprintf(ofp, "# max ASCII text line length:      unlimited\n");
  if (esl_opt_IsUsed(go, "--textw"))      fprintf(ofp, "# max ASCII text line length:      %d\n",             esl_opt_GetInteger(go, "--textw"));
  if (esl_opt_IsUsed(go, "-E"))           fprintf(ofp, "# sequence reporting threshold:    E-value <= %g\n",  esl_opt_GetReal(go, "-E"));
  if (esl_opt_IsUsed(go, "-T"))           fprintf(ofp, "# sequence reporting threshold:    score >= %g\n",    esl_opt_GetReal(go, "-T"));
  if (esl_opt_IsUsed(go, "--domE"))       fprintf(ofp, "# domain reporting threshold:      E-value <= %g\n",  esl_opt_GetReal(go, "--domE"));
  if (esl_opt_IsUsed(go, "--domT"))       fprintf(ofp, "# domain reporting threshold:      score >= %g\n",    esl_opt_GetReal(go, "--domT"));
  if (esl_opt_IsUsed(go, "--incE"))       fprintf(ofp, "# sequence inclusion threshold:    E-value <= %g\n",  esl_opt_GetReal(go, "--incE"));
  if (esl_opt_IsUsed(go, "--incT"))       fprintf(ofp, "# sequence inclusion threshold:    score >= %g\n",    esl_opt_GetReal(go, "--incT"));
  if (esl_opt_IsUsed(go, "--incdomE"))    fprintf(ofp, "# domain inclusion threshold:      E-value <= %g\n",  esl_opt_GetReal(go, "--incdomE"));
  if (esl_opt_IsUsed(go, "--incdomT"))    fprintf(ofp, "# domain inclusion threshold:      score >= %g\n",    esl_opt_GetReal(go, "--incdomT"));
  if (esl_opt_IsUsed(go, "--cut_ga"))     fprintf(ofp, "# model-specific thresholding:     GA cutoffs\n");
  if (esl_opt_IsUsed(go, "--cut_nc"))     fprintf(ofp, "# model-specific thresholding:     NC cutoffs\n");
  if (esl_opt_IsUsed(go, "--cut_tc"))     fprintf(ofp, "# model-specific thresholding:     TC cutoffs\n");
  if (esl_opt_IsUsed(go, "--max"))        fprintf(ofp, "# Max sensitivity mode:            on [all heuristic filters off]\n");
  if (esl_opt_IsUsed(go, "--F1"))         fprintf(ofp, "# MSV filter P threshold:       <= %g\n",             esl_opt_GetReal(go, "--F1"));
  if (esl_opt_IsUsed(go, "--F2"))         fprintf(ofp, "# Vit filter P threshold:       <= %g\n",             esl_opt_GetReal(go, "--F2"));
  if (esl_opt_IsUsed(go, "--F3"))         fprintf(ofp, "# Fwd filter P threshold:       <= %g\n",             esl_opt_GetReal(go, "--F3"));
  if (esl_opt_IsUsed(go, "--nobias"))     fprintf(ofp, "# biased composition HMM filter:   off\n");
  if (esl_opt_IsUsed(go, "--nonull2"))    fprintf(ofp, "# null2 bias corrections:          off\n");
  if (esl_opt_IsUsed(go, "-Z"))           fprintf(ofp, "# sequence search space set to:    %.0f\n",           esl_opt_GetReal(go, "-Z"));
  if (esl_opt_IsUsed(go, "--domZ"))       fprintf(ofp, "# domain search space set to:      %.0f\n",           esl_opt_GetReal(go, "--domZ"));
  if (esl_opt_IsUsed(go, "--seed"))  {
    if (esl_opt_GetInteger(go, "--seed") == 0) fprintf(ofp, "# random number seed:              one-time arbitrary\n");
    else                                       fprintf(ofp, "# random number seed set to:       %d\n",             esl_opt_GetInteger(go, "--seed"));
  }
  if (esl_opt_IsUsed(go, "--tformat"))    fprintf(ofp, "# targ <seqfile> format asserted:  %s\n",             esl_opt_GetString(go, "--tformat"));
  if (esl_opt_IsUsed(go, "--cpu"))        fprintf(ofp, "# number of worker threads:        %d\n",             esl_opt_GetInteger(go, "--cpu"));
  fprintf(ofp, "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n\n");
}


/* As hmmsearch.c's process_commandline(), without the long help. */
static ESL_GETOPTS *
process_commandline(int argc, char **argv, char **ret_hmmfile, char **ret_seqfile)
{
  ESL_GETOPTS *go = esl_getopts_Create(options);

  if (esl_opt_ProcessEnvironment(go)         != eslOK) { printf("Failed to process environment: %s\n", go->errbuf); goto FAILURE; }
  if (esl_opt_ProcessCmdline(go, argc, argv) != eslOK) { printf("Failed to parse command line: %s\n",  go->errbuf); goto FAILURE; }
  if (esl_opt_VerifyConfig(go)               != eslOK) { printf("Failed to parse command line: %s\n",  go->errbuf); goto FAILURE; }
  if (esl_opt_GetBoolean(go, "-h"))
    {
      p7_banner(stdout, argv[0], banner);
      esl_usage(stdout, argv[0], usage);
      esl_opt_DisplayHelp(stdout, go, 0, 2, 80);
      exit(0);
    }
  if (esl_opt_ArgNumber(go) != 2) { puts("Incorrect number of command line arguments."); goto FAILURE; }
  *ret_hmmfile = esl_opt_GetArg(go, 1);
  *ret_seqfile = esl_opt_GetArg(go, 2);
  if (strcmp(*ret_hmmfile, "-") == 0 && strcmp(*ret_seqfile, "-") == 0)
    { puts("Either <hmmfile> or <seqdb> may be '-' (to read from stdin), but not both."); goto FAILURE; }
  return go;

 FAILURE:
  esl_usage(stdout, argv[0], usage);
  esl_getopts_Destroy(go);
  exit(1);
}


/* As hmmsearch.c's serial_loop(): every target through p7_Pipeline(). */
static int
serial_loop(P7_PIPELINE *pli, P7_OPROFILE *om, P7_BG *bg, P7_TOPHITS *th, ESL_SQFILE *dbfp)
{
  ESL_SQ *dbsq = esl_sq_CreateDigital(om->abc);
  int     sstatus;

  while ((sstatus = esl_sqio_Read(dbfp, dbsq)) == eslOK)
    {
      p7_pli_NewSeq(pli, dbsq);
      p7_bg_SetLength(bg, dbsq->n);
      p7_oprofile_ReconfigLength(om, dbsq->n);

      p7_Pipeline(pli, om, bg, dbsq, NULL, th);

      esl_sq_Reuse(dbsq);
      p7_pipeline_Reuse(pli);
    }
  esl_sq_Destroy(dbsq);
  return sstatus;
}


/* As hmmsearch.c's serial_master() with ncpus = 0. */
int
main(int argc, char **argv)
{
  ESL_GETOPTS   *go        = NULL;
  char          *hmmfile   = NULL;
  char          *dbfile    = NULL;
  FILE          *ofp       = stdout;
  FILE          *afp       = NULL;
  FILE          *tblfp     = NULL;
  FILE          *domtblfp  = NULL;
  FILE          *pfamtblfp = NULL;
  P7_HMMFILE    *hfp       = NULL;
  ESL_SQFILE    *dbfp      = NULL;
  P7_HMM        *hmm       = NULL;
  ESL_ALPHABET  *abc       = NULL;
  P7_BG         *bg        = NULL;
  ESL_STOPWATCH *w         = esl_stopwatch_Create();
  int            textw;
  int            nquery    = 0;
  int            status, hstatus, sstatus;
  char           errbuf[eslERRBUFSIZE];

  argv[0] = "hmmsearch";        /* banner and "# Option settings:" read as hmmsearch's */
  impl_Init();
  p7_FLogsumInit();

  go = process_commandline(argc, argv, &hmmfile, &dbfile);
  textw = esl_opt_GetBoolean(go, "--notextw") ? 0 : esl_opt_GetInteger(go, "--textw");

  /* Open the target sequence database */
  status = esl_sqfile_Open(dbfile, seq_format(go, "--tformat"), p7_SEQDBENV, &dbfp);
  if      (status == eslENOTFOUND) p7_Fail("Failed to open sequence file %s for reading\n", dbfile);
  else if (status == eslEFORMAT)   p7_Fail("Sequence file %s is empty or misformatted\n",   dbfile);
  else if (status == eslEINVAL)    p7_Fail("Can't autodetect format of a stdin or .gz seqfile");
  else if (status != eslOK)        p7_Fail("Unexpected error %d opening sequence file %s\n", status, dbfile);

  /* Open the query profile HMM file */
  status = p7_hmmfile_Open(hmmfile, NULL, &hfp, errbuf);
  if      (status == eslENOTFOUND) p7_Fail("File existence/permissions problem in trying to open HMM file %s.\n%s\n", hmmfile, errbuf);
  else if (status == eslEFORMAT)   p7_Fail("File format problem in trying to open HMM file %s.\n%s\n",                hmmfile, errbuf);
  else if (status != eslOK)        p7_Fail("Unexpected error %d in opening HMM file %s.\n%s\n",               status, hmmfile, errbuf);

  /* Open the results output files */
  if (esl_opt_IsOn(go, "-o"))           { if ((ofp       = fopen(esl_opt_GetString(go, "-o"),           "w")) == NULL) p7_Fail("Failed to open output file %s for writing\n", esl_opt_GetString(go, "-o")); }
  if (esl_opt_IsOn(go, "-A"))           { if ((afp       = fopen(esl_opt_GetString(go, "-A"),           "w")) == NULL) p7_Fail("Failed to open alignment file %s for writing\n", esl_opt_GetString(go, "-A")); }
  if (esl_opt_IsOn(go, "--tblout"))     { if ((tblfp     = fopen(esl_opt_GetString(go, "--tblout"),     "w")) == NULL) p7_Fail("Failed to open tabular per-seq output file %s for writing\n", esl_opt_GetString(go, "--tblout")); }
  if (esl_opt_IsOn(go, "--domtblout"))  { if ((domtblfp  = fopen(esl_opt_GetString(go, "--domtblout"),  "w")) == NULL) p7_Fail("Failed to open tabular per-dom output file %s for writing\n", esl_opt_GetString(go, "--domtblout")); }
  if (esl_opt_IsOn(go, "--pfamtblout")) { if ((pfamtblfp = fopen(esl_opt_GetString(go, "--pfamtblout"), "w")) == NULL) p7_Fail("Failed to open pfam-style tabular output file %s for writing\n", esl_opt_GetString(go, "--pfamtblout")); }

  /* <abc> is not known 'til first HMM is read; the header comes after it. */
  hstatus = p7_hmmfile_Read(hfp, &abc, &hmm);
  if (hstatus == eslOK)
    {
      output_header(ofp, go, hmmfile, dbfile);
      esl_sqfile_SetDigital(dbfp, abc);
      bg = p7_bg_Create(abc);
    }

  /* Outer loop: over each query HMM in <hmmfile>. */
  while (hstatus == eslOK)
    {
      P7_PROFILE  *gm  = NULL;
      P7_OPROFILE *om  = NULL;
      P7_OPROFILE *wom = NULL;   /* the worker's clone, as info[0].om in hmmsearch.c */
      P7_PIPELINE *pli = NULL;
      P7_TOPHITS  *th  = NULL;

      nquery++;
      esl_stopwatch_Start(w);

      /* seqfile may need to be rewound (multiquery mode) */
      if (nquery > 1)
        {
          if (! esl_sqfile_IsRewindable(dbfp))
            esl_fatal("Target sequence file %s isn't rewindable; can't search it with multiple queries", dbfile);
          esl_sqfile_Position(dbfp, 0);
        }

      fprintf(ofp, "Query:       %s  [M=%d]\n", hmm->name, hmm->M);
      if (hmm->acc)  fprintf(ofp, "Accession:   %s\n", hmm->acc);
      if (hmm->desc) fprintf(ofp, "Description: %s\n", hmm->desc);

      /* Convert to an optimized model */
      gm = p7_profile_Create (hmm->M, abc);
      om = p7_oprofile_Create(hmm->M, abc);
      p7_ProfileConfig(hmm, bg, gm, 100, p7_LOCAL); /* 100 is a dummy length for now; and MSVFilter requires local mode */
      p7_oprofile_Convert(gm, om);                  /* <om> is now p7_LOCAL, multihit */

      /* Create processing pipeline and hit list */
      th  = p7_tophits_Create();
      wom = p7_oprofile_Clone(om);
      pli = p7_pipeline_Create(go, om->M, 100, FALSE, p7_SEARCH_SEQS); /* L_hint = 100 is just a dummy for now */
      status = p7_pli_NewModel(pli, wom, bg);
      if (status == eslEINVAL) p7_Fail(pli->errbuf);

      sstatus = serial_loop(pli, wom, bg, th, dbfp);
      switch (sstatus) {
      case eslEFORMAT: esl_fatal("Parse failed (sequence file %s):\n%s\n", dbfp->filename, esl_sqfile_GetErrorBuf(dbfp)); break;
      case eslEOF:     break;
      default:         esl_fatal("Unexpected error %d reading sequence file %s", sstatus, dbfp->filename);
      }

      /* Print the results.  */
      p7_tophits_SortBySortkey(th);
      p7_tophits_Threshold(th, pli);
      p7_tophits_Targets(ofp, th, pli, textw); fprintf(ofp, "\n\n");
      p7_tophits_Domains(ofp, th, pli, textw); fprintf(ofp, "\n\n");

      if (tblfp)     p7_tophits_TabularTargets(tblfp,    hmm->name, hmm->acc, th, pli, (nquery == 1));
      if (domtblfp)  p7_tophits_TabularDomains(domtblfp, hmm->name, hmm->acc, th, pli, (nquery == 1));
      if (pfamtblfp) p7_tophits_TabularXfam(pfamtblfp,   hmm->name, hmm->acc, th, pli);

      esl_stopwatch_Stop(w);
      p7_pli_Statistics(ofp, pli, w);
      fprintf(ofp, "//\n");

      /* -A: the included domains' alignment, as hmmsearch.c writes it */
      if (afp)
        {
          ESL_MSA *msa = NULL;
          if (p7_tophits_Alignment(th, abc, NULL, NULL, 0, p7_ALL_CONSENSUS_COLS, &msa) == eslOK)
            {
              esl_msa_SetName     (msa, hmm->name, -1);
              esl_msa_SetAccession(msa, hmm->acc,  -1);
              esl_msa_SetDesc     (msa, hmm->desc, -1);
              esl_msa_FormatAuthor(msa, "hmmsearch (HMMER %s)", HMMER_VERSION);
              if (textw > 0) esl_msafile_Write(afp, msa, eslMSAFILE_STOCKHOLM);
              else           esl_msafile_Write(afp, msa, eslMSAFILE_PFAM);
              fprintf(ofp, "# Alignment of %d hits satisfying inclusion thresholds saved to: %s\n", msa->nseq, esl_opt_GetString(go, "-A"));
            }
          else fprintf(ofp, "# No hits satisfy inclusion thresholds; no alignment saved\n");
          esl_msa_Destroy(msa);
        }
      fflush(ofp);

      p7_pipeline_Destroy(pli);
      p7_tophits_Destroy(th);
      p7_oprofile_Destroy(wom);
      p7_oprofile_Destroy(om);
      p7_profile_Destroy(gm);
      p7_hmm_Destroy(hmm);

      hstatus = p7_hmmfile_Read(hfp, &abc, &hmm);
    }

  switch (hstatus) {
  case eslEOD:       p7_Fail("read failed, HMM file %s may be truncated?", hmmfile); break;
  case eslEFORMAT:   p7_Fail("bad file format in HMM file %s",             hmmfile); break;
  case eslEINCOMPAT: p7_Fail("HMM file %s contains different alphabets",   hmmfile); break;
  case eslEOF:       break;
  default:           p7_Fail("Unexpected error (%d) in reading HMMs from %s", hstatus, hmmfile);
  }

  /* Terminate outputs... any last words? */
  if (tblfp)     p7_tophits_TabularTail(tblfp,     "hmmsearch", p7_SEARCH_SEQS, hmmfile, dbfile, go);
  if (domtblfp)  p7_tophits_TabularTail(domtblfp,  "hmmsearch", p7_SEARCH_SEQS, hmmfile, dbfile, go);
  if (pfamtblfp) p7_tophits_TabularTail(pfamtblfp, "hmmsearch", p7_SEARCH_SEQS, hmmfile, dbfile, go);
  if (ofp)       fprintf(ofp, "[ok]\n");

  p7_bg_Destroy(bg);
  p7_hmmfile_Close(hfp);
  esl_sqfile_Close(dbfp);
  esl_alphabet_Destroy(abc);
  esl_stopwatch_Destroy(w);
  if (ofp != stdout) fclose(ofp);
  if (afp)           fclose(afp);
  if (tblfp)         fclose(tblfp);
  if (domtblfp)      fclose(domtblfp);
  if (pfamtblfp)     fclose(pfamtblfp);
  esl_getopts_Destroy(go);
  return eslOK;
}
