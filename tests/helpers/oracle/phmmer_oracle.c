/* phmmer_oracle: HMMER 3.4's own phmmer, serial, rebuilt from library calls.
 *
 * Test oracle only.  Linked against the libhmmer/libeasel shared libraries
 * shipped inside the pyhmmer wheel (HMMER 3.4, SSE build), it repeats
 * phmmer.c's serial_master() and serial_loop() (no threads, no MPI) and
 * writes every report with HMMER's own functions:
 *
 *   header           p7_banner + output_header() (copied from phmmer.c)
 *   per query        p7_SingleBuilder, then p7_tophits_Targets, p7_tophits_Domains,
 *                    p7_pli_Statistics
 *   --tblout         p7_tophits_TabularTargets   + p7_tophits_TabularTail
 *   --domtblout      p7_tophits_TabularDomains   + p7_tophits_TabularTail
 *   --pfamtblout     p7_tophits_TabularXfam      + p7_tophits_TabularTail
 *   -A               p7_tophits_Alignment + esl_msafile_Write, after each query's "//"
 *
 * so gpu-search's phmmer (gpu_search/hmmer/phmmer.py and report.py) can be
 * compared with HMMER line by line.
 *
 * Usage:  phmmer_oracle [options] <seqfile> <seqdb>
 *
 * Options: phmmer's -o, -A, --tblout, --domtblout, --pfamtblout, --acc, --noali,
 *   --notextw, --textw, --popen, --pextend, --mx, --mxfile, -E, -T, --domE, --domT,
 *   --incE, --incT, --incdomE, --incdomT, --max, --F1, --F2, --F3, --nobias,
 *   --EmL, --EmN, --EvL, --EvN, --EfL, --EfN, --Eft, --nonull2, -Z, --domZ, --seed,
 *   --qformat, --tformat, --cpu (accepted and echoed as phmmer does; the search itself
 *   is always serial).
 *
 * Differences from the real phmmer, all deliberate:
 *   - serial only (see hmmsearch_oracle.c: threads change only which
 *     sub-threshold hits are kept, and so the width of the name columns);
 *   - --daemon and the hidden --restrictdb_* options are not offered (the hidden
 *     --cut_* ones are kept: p7_pipeline_Create() reads them);
 *   - argv[0] is replaced by "phmmer", so the banner and the tabular
 *     "# Option settings:" line read as phmmer's own.
 *
 * Build (tests/helpers/oracle/build.py does this):
 *   cc -O1 -I$LIBS/include/libhmmer -I$LIBS/include/libeasel -I$LIBS/include/libhmmer/impl_sse \
 *      phmmer_oracle.c -L$LIBS -llibhmmer -llibeasel -Wl,-rpath,$LIBS -lm -lpthread -o phmmer_oracle
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easel.h"
#include "esl_alphabet.h"
#include "esl_getopts.h"
#include "esl_msa.h"
#include "esl_msafile.h"
#include "esl_random.h"
#include "esl_sq.h"
#include "esl_sqio.h"
#include "esl_stopwatch.h"

#include "hmmer.h"

#define REPOPTS     "-E,-T,--cut_ga,--cut_nc,--cut_tc"
#define DOMREPOPTS  "--domE,--domT,--cut_ga,--cut_nc,--cut_tc"
#define INCOPTS     "--incE,--incT,--cut_ga,--cut_nc,--cut_tc"
#define INCDOMOPTS  "--incdomE,--incdomT,--cut_ga,--cut_nc,--cut_tc"
#define THRESHOPTS  "-E,-T,--domE,--domT,--incE,--incT,--incdomE,--incdomT,--cut_ga,--cut_nc,--cut_tc"

/* phmmer.c's option table (HMMER 3.4), less the options named above. */
static ESL_OPTIONS options[] = {
  /* name           type         default     env  range       toggles reqs  incomp             help                                                            docgroup*/
  { "-h",           eslARG_NONE,    FALSE,   NULL, NULL,      NULL,  NULL,  NULL,              "show brief help on version and usage",                         1 },
  /* Control of output */
  { "-o",           eslARG_OUTFILE,  NULL,   NULL, NULL,      NULL,  NULL,  NULL,              "direct output to file <f>, not stdout",                        2 },
  { "-A",           eslARG_OUTFILE,  NULL,   NULL, NULL,      NULL,  NULL,  NULL,              "save multiple alignment of hits to file <f>",                  2 },
  { "--tblout",     eslARG_OUTFILE,  NULL,   NULL, NULL,      NULL,  NULL,  NULL,              "save parseable table of per-sequence hits to file <f>",        2 },
  { "--domtblout",  eslARG_OUTFILE,  NULL,   NULL, NULL,      NULL,  NULL,  NULL,              "save parseable table of per-domain hits to file <f>",          2 },
  { "--pfamtblout", eslARG_OUTFILE,  NULL,   NULL, NULL,      NULL,  NULL,  NULL,              "save table of hits and domains to file, in Pfam format <f>",   2 },
  { "--acc",        eslARG_NONE,    FALSE,   NULL, NULL,      NULL,  NULL,  NULL,              "prefer accessions over names in output",                       2 },
  { "--noali",      eslARG_NONE,    FALSE,   NULL, NULL,      NULL,  NULL,  NULL,              "don't output alignments, so output is smaller",                2 },
  { "--notextw",    eslARG_NONE,     NULL,   NULL, NULL,      NULL,  NULL, "--textw",          "unlimit ASCII text output line width",                         2 },
  { "--textw",      eslARG_INT,     "120",   NULL, "n>=120",  NULL,  NULL, "--notextw",        "set max width of ASCII text output lines",                     2 },
  /* Control of scoring system */
  { "--popen",      eslARG_REAL,   "0.02",   NULL, "0<=x<0.5",NULL,  NULL,  NULL,              "gap open probability",                                         3 },
  { "--pextend",    eslARG_REAL,    "0.4",   NULL, "0<=x<1",  NULL,  NULL,  NULL,              "gap extend probability",                                       3 },
  { "--mx",         eslARG_STRING, "BLOSUM62", NULL, NULL,    NULL,  NULL,  "--mxfile",        "substitution score matrix choice (of some built-in matrices)", 3 },
  { "--mxfile",     eslARG_INFILE,   NULL,   NULL, NULL,      NULL,  NULL,  "--mx",            "read substitution score matrix from file <f>",                 3 },
  /* Control of reporting thresholds */
  { "-E",           eslARG_REAL,   "10.0",   NULL, "x>0",     NULL,  NULL,  REPOPTS,           "report sequences <= this E-value threshold in output",         4 },
  { "-T",           eslARG_REAL,    FALSE,   NULL, NULL,      NULL,  NULL,  REPOPTS,           "report sequences >= this score threshold in output",           4 },
  { "--domE",       eslARG_REAL,   "10.0",   NULL, "x>0",     NULL,  NULL,  DOMREPOPTS,        "report domains <= this E-value threshold in output",           4 },
  { "--domT",       eslARG_REAL,    FALSE,   NULL, NULL,      NULL,  NULL,  DOMREPOPTS,        "report domains >= this score cutoff in output",                4 },
  /* Control of inclusion thresholds */
  { "--incE",       eslARG_REAL,   "0.01",   NULL, "x>0",     NULL,  NULL,  INCOPTS,           "consider sequences <= this E-value threshold as significant",  5 },
  { "--incT",       eslARG_REAL,    FALSE,   NULL, NULL,      NULL,  NULL,  INCOPTS,           "consider sequences >= this score threshold as significant",    5 },
  { "--incdomE",    eslARG_REAL,   "0.01",   NULL, "x>0",     NULL,  NULL,  INCDOMOPTS,        "consider domains <= this E-value threshold as significant",    5 },
  { "--incdomT",    eslARG_REAL,    FALSE,   NULL, NULL,      NULL,  NULL,  INCDOMOPTS,        "consider domains >= this score threshold as significant",      5 },
  /* Model-specific thresholding (unused in phmmer; p7_pipeline_Create() reads them) */
  { "--cut_ga",     eslARG_NONE,    FALSE,   NULL, NULL,      NULL,  NULL,  THRESHOPTS,        "use profile's GA gathering cutoffs to set all thresholding",  99 },
  { "--cut_nc",     eslARG_NONE,    FALSE,   NULL, NULL,      NULL,  NULL,  THRESHOPTS,        "use profile's NC noise cutoffs to set all thresholding",      99 },
  { "--cut_tc",     eslARG_NONE,    FALSE,   NULL, NULL,      NULL,  NULL,  THRESHOPTS,        "use profile's TC trusted cutoffs to set all thresholding",    99 },
  /* Control of filter pipeline */
  { "--max",        eslARG_NONE,    FALSE,   NULL, NULL,      NULL,  NULL, "--F1,--F2,--F3",   "Turn all heuristic filters off (less speed, more power)",      7 },
  { "--F1",         eslARG_REAL,   "0.02",   NULL, NULL,      NULL,  NULL, "--max",            "Stage 1 (MSV) threshold: promote hits w/ P <= F1",             7 },
  { "--F2",         eslARG_REAL,   "1e-3",   NULL, NULL,      NULL,  NULL, "--max",            "Stage 2 (Vit) threshold: promote hits w/ P <= F2",             7 },
  { "--F3",         eslARG_REAL,   "1e-5",   NULL, NULL,      NULL,  NULL, "--max",            "Stage 3 (Fwd) threshold: promote hits w/ P <= F3",             7 },
  { "--nobias",     eslARG_NONE,     NULL,   NULL, NULL,      NULL,  NULL, "--max",            "turn off composition bias filter",                             7 },
  /* Control of E-value calibration */
  { "--EmL",        eslARG_INT,     "200",   NULL, "n>0",     NULL,  NULL,  NULL,              "length of sequences for MSV Gumbel mu fit",                   11 },
  { "--EmN",        eslARG_INT,     "200",   NULL, "n>0",     NULL,  NULL,  NULL,              "number of sequences for MSV Gumbel mu fit",                   11 },
  { "--EvL",        eslARG_INT,     "200",   NULL, "n>0",     NULL,  NULL,  NULL,              "length of sequences for Viterbi Gumbel mu fit",               11 },
  { "--EvN",        eslARG_INT,     "200",   NULL, "n>0",     NULL,  NULL,  NULL,              "number of sequences for Viterbi Gumbel mu fit",               11 },
  { "--EfL",        eslARG_INT,     "100",   NULL, "n>0",     NULL,  NULL,  NULL,              "length of sequences for Forward exp tail tau fit",            11 },
  { "--EfN",        eslARG_INT,     "200",   NULL, "n>0",     NULL,  NULL,  NULL,              "number of sequences for Forward exp tail tau fit",            11 },
  { "--Eft",        eslARG_REAL,   "0.04",   NULL, "0<x<1",   NULL,  NULL,  NULL,              "tail mass for Forward exponential tail tau fit",              11 },
  /* other options */
  { "--nonull2",    eslARG_NONE,     NULL,   NULL, NULL,      NULL,  NULL,  NULL,              "turn off biased composition score corrections",               12 },
  { "-Z",           eslARG_REAL,    FALSE,   NULL, "x>0",     NULL,  NULL,  NULL,              "set # of comparisons done, for E-value calculation",          12 },
  { "--domZ",       eslARG_REAL,    FALSE,   NULL, "x>0",     NULL,  NULL,  NULL,              "set # of significant seqs, for domain E-value calculation",   12 },
  { "--seed",       eslARG_INT,      "42",   NULL, "n>=0",    NULL,  NULL,  NULL,              "set RNG seed to <n> (if 0: one-time arbitrary seed)",         12 },
  { "--qformat",    eslARG_STRING,   NULL,   NULL, NULL,      NULL,  NULL,  NULL,              "assert query <seqfile> is in format <s>: no autodetection",   12 },
  { "--tformat",    eslARG_STRING,   NULL,   NULL, NULL,      NULL,  NULL,  NULL,              "assert target <seqdb> is in format <s>>: no autodetection",   12 },
  { "--cpu",        eslARG_INT,       "2", "HMMER_NCPU","n>=0",NULL, NULL,  NULL,              "number of parallel CPU workers (accepted; search is serial)", 12 },
  {  0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
};

#include "seq_format.h"

static char usage[]  = "[-options] <seqfile> <seqdb>";
static char banner[] = "search a protein sequence against a protein database";


/* As phmmer.c's output_header(), for the options offered here. */
static void
output_header(FILE *ofp, const ESL_GETOPTS *go, char *qfile, char *dbfile)
{
  p7_banner(ofp, go->argv[0], banner);

  fprintf(ofp, "# query sequence file:             %s\n", qfile);
  fprintf(ofp, "# target sequence database:        %s\n", dbfile);
  if (esl_opt_IsUsed(go, "-o"))           fprintf(ofp, "# output directed to file:         %s\n",             esl_opt_GetString(go, "-o"));
  if (esl_opt_IsUsed(go, "-A"))           fprintf(ofp, "# MSA of hits saved to file:       %s\n",             esl_opt_GetString(go, "-A"));
  if (esl_opt_IsUsed(go, "--tblout"))     fprintf(ofp, "# per-seq hits tabular output:     %s\n",             esl_opt_GetString(go, "--tblout"));
  if (esl_opt_IsUsed(go, "--domtblout"))  fprintf(ofp, "# per-dom hits tabular output:     %s\n",             esl_opt_GetString(go, "--domtblout"));
  if (esl_opt_IsUsed(go, "--pfamtblout")) fprintf(ofp, "# pfam-style tabular hit output:   %s\n",             esl_opt_GetString(go, "--pfamtblout"));
  if (esl_opt_IsUsed(go, "--acc"))        fprintf(ofp, "# prefer accessions over names:    yes\n");
  if (esl_opt_IsUsed(go, "--noali"))      fprintf(ofp, "# show alignments in output:       no\n");
  if (esl_opt_IsUsed(go, "--notextw"))    fprintf(ofp, "# max ASCII text line length:      unlimited\n");
  if (esl_opt_IsUsed(go, "--textw"))      fprintf(ofp, "# max ASCII text line length:      %d\n",             esl_opt_GetInteger(go, "--textw"));
  if (esl_opt_IsUsed(go, "--popen"))      fprintf(ofp, "# gap open probability:            %f\n",             esl_opt_GetReal  (go, "--popen"));
  if (esl_opt_IsUsed(go, "--pextend"))    fprintf(ofp, "# gap extend probability:          %f\n",             esl_opt_GetReal  (go, "--pextend"));
  if (esl_opt_IsUsed(go, "--mx"))         fprintf(ofp, "# subst score matrix (built-in):   %s\n",             esl_opt_GetString(go, "--mx"));
  if (esl_opt_IsUsed(go, "--mxfile"))     fprintf(ofp, "# subst score matrix (file):       %s\n",             esl_opt_GetString(go, "--mxfile"));
  if (esl_opt_IsUsed(go, "-E"))           fprintf(ofp, "# sequence reporting threshold:    E-value <= %g\n",  esl_opt_GetReal(go, "-E"));
  if (esl_opt_IsUsed(go, "-T"))           fprintf(ofp, "# sequence reporting threshold:    score >= %g\n",    esl_opt_GetReal(go, "-T"));
  if (esl_opt_IsUsed(go, "--domE"))       fprintf(ofp, "# domain reporting threshold:      E-value <= %g\n",  esl_opt_GetReal(go, "--domE"));
  if (esl_opt_IsUsed(go, "--domT"))       fprintf(ofp, "# domain reporting threshold:      score >= %g\n",    esl_opt_GetReal(go, "--domT"));
  if (esl_opt_IsUsed(go, "--incE"))       fprintf(ofp, "# sequence inclusion threshold:    E-value <= %g\n",  esl_opt_GetReal(go, "--incE"));
  if (esl_opt_IsUsed(go, "--incT"))       fprintf(ofp, "# sequence inclusion threshold:    score >= %g\n",    esl_opt_GetReal(go, "--incT"));
  if (esl_opt_IsUsed(go, "--incdomE"))    fprintf(ofp, "# domain inclusion threshold:      E-value <= %g\n",  esl_opt_GetReal(go, "--incdomE"));
  if (esl_opt_IsUsed(go, "--incdomT"))    fprintf(ofp, "# domain inclusion threshold:      score >= %g\n",    esl_opt_GetReal(go, "--incdomT"));
  if (esl_opt_IsUsed(go, "--max"))        fprintf(ofp, "# Max sensitivity mode:            on [all heuristic filters off]\n");
  if (esl_opt_IsUsed(go, "--F1"))         fprintf(ofp, "# MSV filter P threshold:       <= %g\n",             esl_opt_GetReal(go, "--F1"));
  if (esl_opt_IsUsed(go, "--F2"))         fprintf(ofp, "# Vit filter P threshold:       <= %g\n",             esl_opt_GetReal(go, "--F2"));
  if (esl_opt_IsUsed(go, "--F3"))         fprintf(ofp, "# Fwd filter P threshold:       <= %g\n",             esl_opt_GetReal(go, "--F3"));
  if (esl_opt_IsUsed(go, "--nobias"))     fprintf(ofp, "# biased composition HMM filter:   off\n");
  if (esl_opt_IsUsed(go, "--nonull2"))    fprintf(ofp, "# null2 bias corrections:          off\n");
  if (esl_opt_IsUsed(go, "--EmL"))        fprintf(ofp, "# seq length, MSV Gumbel mu fit:   %d\n",             esl_opt_GetInteger(go, "--EmL"));
  if (esl_opt_IsUsed(go, "--EmN"))        fprintf(ofp, "# seq number, MSV Gumbel mu fit:   %d\n",             esl_opt_GetInteger(go, "--EmN"));
  if (esl_opt_IsUsed(go, "--EvL"))        fprintf(ofp, "# seq length, Vit Gumbel mu fit:   %d\n",             esl_opt_GetInteger(go, "--EvL"));
  if (esl_opt_IsUsed(go, "--EvN"))        fprintf(ofp, "# seq number, Vit Gumbel mu fit:   %d\n",             esl_opt_GetInteger(go, "--EvN"));
  if (esl_opt_IsUsed(go, "--EfL"))        fprintf(ofp, "# seq length, Fwd exp tau fit:     %d\n",             esl_opt_GetInteger(go, "--EfL"));
  if (esl_opt_IsUsed(go, "--EfN"))        fprintf(ofp, "# seq number, Fwd exp tau fit:     %d\n",             esl_opt_GetInteger(go, "--EfN"));
  if (esl_opt_IsUsed(go, "--Eft"))        fprintf(ofp, "# tail mass for Fwd exp tau fit:   %f\n",             esl_opt_GetReal   (go, "--Eft"));
  if (esl_opt_IsUsed(go, "-Z"))           fprintf(ofp, "# sequence search space set to:    %.0f\n",           esl_opt_GetReal(go, "-Z"));
  if (esl_opt_IsUsed(go, "--domZ"))       fprintf(ofp, "# domain search space set to:      %.0f\n",           esl_opt_GetReal(go, "--domZ"));
  if (esl_opt_IsUsed(go, "--seed"))  {
    if (esl_opt_GetInteger(go, "--seed") == 0) fprintf(ofp, "# random number seed:              one-time arbitrary\n");
    else                                       fprintf(ofp, "# random number seed set to:       %d\n",             esl_opt_GetInteger(go, "--seed"));
  }
  if (esl_opt_IsUsed(go, "--qformat"))    fprintf(ofp, "# query <seqfile> format asserted: %s\n",             esl_opt_GetString(go, "--qformat"));
  if (esl_opt_IsUsed(go, "--tformat"))    fprintf(ofp, "# target <seqdb> format asserted:  %s\n",             esl_opt_GetString(go, "--tformat"));
  if (esl_opt_IsUsed(go, "--cpu"))        fprintf(ofp, "# number of worker threads:        %d\n",             esl_opt_GetInteger(go, "--cpu"));
  fprintf(ofp, "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n\n");
}


/* As phmmer.c's process_commandline(), without the long help. */
static ESL_GETOPTS *
process_commandline(int argc, char **argv, char **ret_qfile, char **ret_dbfile)
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
  *ret_qfile  = esl_opt_GetArg(go, 1);
  *ret_dbfile = esl_opt_GetArg(go, 2);
  if (strcmp(*ret_qfile, "-") == 0 && strcmp(*ret_dbfile, "-") == 0)
    { puts("Either <seqfile> or <seqdb> may be '-' (to read from stdin), but not both."); goto FAILURE; }
  return go;

 FAILURE:
  esl_usage(stdout, argv[0], usage);
  esl_getopts_Destroy(go);
  exit(1);
}


/* As phmmer.c's serial_loop(): every target through p7_Pipeline(). */
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


/* As phmmer.c's serial_master() with ncpus = 0. */
int
main(int argc, char **argv)
{
  ESL_GETOPTS   *go        = NULL;
  char          *qfile     = NULL;
  char          *dbfile    = NULL;
  FILE          *ofp       = stdout;
  FILE          *afp       = NULL;
  FILE          *tblfp     = NULL;
  FILE          *domtblfp  = NULL;
  FILE          *pfamtblfp = NULL;
  ESL_SQFILE    *qfp       = NULL;
  ESL_SQFILE    *dbfp      = NULL;
  ESL_SQ        *qsq       = NULL;
  ESL_ALPHABET  *abc       = NULL;
  P7_BG         *bg        = NULL;
  P7_BG         *wbg       = NULL;   /* the worker's clone, as info[0].bg in phmmer.c */
  P7_BUILDER    *bld       = NULL;
  ESL_STOPWATCH *w         = esl_stopwatch_Create();
  int            textw;
  int            seed;
  int            nquery    = 0;
  int            status, qstatus, sstatus;

  argv[0] = "phmmer";           /* banner and "# Option settings:" read as phmmer's */
  impl_Init();
  p7_FLogsumInit();

  go    = process_commandline(argc, argv, &qfile, &dbfile);
  textw = esl_opt_GetBoolean(go, "--notextw") ? 0 : esl_opt_GetInteger(go, "--textw");
  abc   = esl_alphabet_Create(eslAMINO);
  bg    = p7_bg_Create(abc);

  /* The builder as phmmer.c sets it up: p7_builder_Create(NULL, ...) seeds its RNG with 42
   * and reseeds before each model; --seed n > 0 replaces that seed, --seed 0 leaves it. */
  bld = p7_builder_Create(NULL, abc);
  if ((seed = esl_opt_GetInteger(go, "--seed")) > 0)
    {
      esl_randomness_Init(bld->r, seed);
      bld->do_reseeding = TRUE;
    }
  bld->EmL = esl_opt_GetInteger(go, "--EmL");
  bld->EmN = esl_opt_GetInteger(go, "--EmN");
  bld->EvL = esl_opt_GetInteger(go, "--EvL");
  bld->EvN = esl_opt_GetInteger(go, "--EvN");
  bld->EfL = esl_opt_GetInteger(go, "--EfL");
  bld->EfN = esl_opt_GetInteger(go, "--EfN");
  bld->Eft = esl_opt_GetReal   (go, "--Eft");
  if (esl_opt_IsOn(go, "--mxfile")) status = p7_builder_SetScoreSystem (bld, esl_opt_GetString(go, "--mxfile"), NULL, esl_opt_GetReal(go, "--popen"), esl_opt_GetReal(go, "--pextend"), bg);
  else                              status = p7_builder_LoadScoreSystem(bld, esl_opt_GetString(go, "--mx"),           esl_opt_GetReal(go, "--popen"), esl_opt_GetReal(go, "--pextend"), bg);
  if (status != eslOK) p7_Fail("Failed to set single query seq score system:\n%s\n", bld->errbuf);

  /* Open the results output files */
  if (esl_opt_IsOn(go, "-o"))           { if ((ofp       = fopen(esl_opt_GetString(go, "-o"),           "w")) == NULL) p7_Fail("Failed to open output file %s for writing\n", esl_opt_GetString(go, "-o")); }
  if (esl_opt_IsOn(go, "-A"))           { if ((afp       = fopen(esl_opt_GetString(go, "-A"),           "w")) == NULL) p7_Fail("Failed to open alignment file %s for writing\n", esl_opt_GetString(go, "-A")); }
  if (esl_opt_IsOn(go, "--tblout"))     { if ((tblfp     = fopen(esl_opt_GetString(go, "--tblout"),     "w")) == NULL) p7_Fail("Failed to open tabular per-seq output file %s for writing\n", esl_opt_GetString(go, "--tblout")); }
  if (esl_opt_IsOn(go, "--domtblout"))  { if ((domtblfp  = fopen(esl_opt_GetString(go, "--domtblout"),  "w")) == NULL) p7_Fail("Failed to open tabular per-dom output file %s for writing\n", esl_opt_GetString(go, "--domtblout")); }
  if (esl_opt_IsOn(go, "--pfamtblout")) { if ((pfamtblfp = fopen(esl_opt_GetString(go, "--pfamtblout"), "w")) == NULL) p7_Fail("Failed to open pfam-style tabular output file %s for writing\n", esl_opt_GetString(go, "--pfamtblout")); }

  /* Open the target sequence database */
  status = esl_sqfile_OpenDigital(abc, dbfile, seq_format(go, "--tformat"), p7_SEQDBENV, &dbfp);
  if      (status == eslENOTFOUND) p7_Fail("Failed to open target sequence database %s for reading\n",      dbfile);
  else if (status == eslEFORMAT)   p7_Fail("Target sequence database file %s is empty or misformatted\n",   dbfile);
  else if (status == eslEINVAL)    p7_Fail("Can't autodetect format of a stdin or .gz seqfile");
  else if (status != eslOK)        p7_Fail("Unexpected error %d opening target sequence database file %s\n", status, dbfile);

  /* Open the query sequence file */
  status = esl_sqfile_OpenDigital(abc, qfile, seq_format(go, "--qformat"), NULL, &qfp);
  if      (status == eslENOTFOUND) p7_Fail("Failed to open sequence file %s for reading\n",      qfile);
  else if (status == eslEFORMAT)   p7_Fail("Sequence file %s is empty or misformatted\n",        qfile);
  else if (status == eslEINVAL)    p7_Fail("Can't autodetect format of a stdin or .gz seqfile");
  else if (status != eslOK)        p7_Fail("Unexpected error %d opening sequence file %s\n", status, qfile);
  qsq = esl_sq_CreateDigital(abc);

  output_header(ofp, go, qfile, dbfile);
  wbg = p7_bg_Clone(bg);

  /* Outer loop over sequence queries */
  while ((qstatus = esl_sqio_Read(qfp, qsq)) == eslOK)
    {
      P7_OPROFILE *om  = NULL;
      P7_OPROFILE *wom = NULL;   /* the worker's clone, as info[0].om in phmmer.c */
      P7_PIPELINE *pli = NULL;
      P7_TOPHITS  *th  = NULL;

      nquery++;
      if (qsq->n == 0) continue; /* phmmer skips zero length queries as if they weren't there */

      esl_stopwatch_Start(w);
      if (nquery > 1)
        {
          if (! esl_sqfile_IsRewindable(dbfp))
            p7_Fail("Target sequence file %s isn't rewindable; can't search it with multiple queries", dbfile);
          esl_sqfile_Position(dbfp, 0);
        }

      fprintf(ofp, "Query:       %s  [L=%ld]\n", qsq->name, (long) qsq->n);
      if (qsq->acc[0]  != '\0') fprintf(ofp, "Accession:   %s\n", qsq->acc);
      if (qsq->desc[0] != '\0') fprintf(ofp, "Description: %s\n", qsq->desc);

      p7_SingleBuilder(bld, qsq, wbg, NULL, NULL, NULL, &om);

      th  = p7_tophits_Create();
      wom = p7_oprofile_Clone(om);
      pli = p7_pipeline_Create(go, om->M, 100, FALSE, p7_SEARCH_SEQS); /* L_hint = 100 is just a dummy for now */
      p7_pli_NewModel(pli, wom, wbg);

      sstatus = serial_loop(pli, wom, wbg, th, dbfp);
      switch (sstatus) {
      case eslEFORMAT: p7_Fail("Parse failed (sequence file %s):\n%s\n", dbfp->filename, esl_sqfile_GetErrorBuf(dbfp)); break;
      case eslEOF:     break;
      default:         p7_Fail("Unexpected error %d reading sequence file %s", sstatus, dbfp->filename);
      }

      p7_tophits_SortBySortkey(th);
      p7_tophits_Threshold(th, pli);
      p7_tophits_Targets(ofp, th, pli, textw); fprintf(ofp, "\n\n");
      p7_tophits_Domains(ofp, th, pli, textw); fprintf(ofp, "\n\n");

      if (tblfp)     p7_tophits_TabularTargets(tblfp,    qsq->name, qsq->acc, th, pli, (nquery == 1));
      if (domtblfp)  p7_tophits_TabularDomains(domtblfp, qsq->name, qsq->acc, th, pli, (nquery == 1));
      if (pfamtblfp) p7_tophits_TabularXfam(pfamtblfp,   qsq->name, qsq->acc, th, pli);

      esl_stopwatch_Stop(w);
      p7_pli_Statistics(ofp, pli, w);
      fprintf(ofp, "//\n");

      /* -A: the included domains' alignment, as phmmer.c writes it */
      if (afp)
        {
          ESL_MSA *msa = NULL;
          if (p7_tophits_Alignment(th, abc, NULL, NULL, 0, p7_ALL_CONSENSUS_COLS, &msa) == eslOK)
            {
              esl_msa_SetName(msa, om->name, -1);
              if (qsq->acc[0]  != '\0') esl_msa_SetAccession(msa, qsq->acc,  -1);
              if (qsq->desc[0] != '\0') esl_msa_SetDesc     (msa, qsq->desc, -1);
              esl_msa_FormatAuthor(msa, "phmmer (HMMER %s)", HMMER_VERSION);
              if (textw > 0) esl_msafile_Write(afp, msa, eslMSAFILE_STOCKHOLM);
              else           esl_msafile_Write(afp, msa, eslMSAFILE_PFAM);
              fprintf(ofp, "# Alignment of %d hits satisfying inclusion thresholds saved to: %s\n", msa->nseq, esl_opt_GetString(go, "-A"));
            }
          else fprintf(ofp, "# No hits satisfy inclusion thresholds; no alignment saved\n");
          esl_msa_Destroy(msa);
        }
      fflush(ofp);

      p7_tophits_Destroy(th);
      p7_pipeline_Destroy(pli);
      p7_oprofile_Destroy(wom);
      p7_oprofile_Destroy(om);
      esl_sq_Reuse(qsq);
    }
  if      (qstatus == eslEFORMAT) p7_Fail("Parse failed (sequence file %s):\n%s\n", qfp->filename, esl_sqfile_GetErrorBuf(qfp));
  else if (qstatus != eslEOF)     p7_Fail("Unexpected error %d reading sequence file %s", qstatus, qfp->filename);

  /* Terminate outputs... any last words? */
  if (tblfp)     p7_tophits_TabularTail(tblfp,     "phmmer", p7_SEARCH_SEQS, qfile, dbfile, go);
  if (domtblfp)  p7_tophits_TabularTail(domtblfp,  "phmmer", p7_SEARCH_SEQS, qfile, dbfile, go);
  if (pfamtblfp) p7_tophits_TabularTail(pfamtblfp, "phmmer", p7_SEARCH_SEQS, qfile, dbfile, go);
  if (ofp)       fprintf(ofp, "[ok]\n");

  p7_bg_Destroy(wbg);
  p7_bg_Destroy(bg);
  p7_builder_Destroy(bld);
  esl_sqfile_Close(qfp);
  esl_sqfile_Close(dbfp);
  esl_sq_Destroy(qsq);
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
