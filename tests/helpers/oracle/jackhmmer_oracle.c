/* jackhmmer_oracle: HMMER 3.4's own jackhmmer, serial, rebuilt from library calls.
 *
 * Test oracle only.  Linked against the libhmmer/libeasel shared libraries
 * shipped inside the pyhmmer wheel (HMMER 3.4, SSE build), it repeats
 * jackhmmer.c's serial_master() and serial_loop() (no threads, no MPI) and
 * writes every output with HMMER's own functions:
 *
 *   header           p7_banner + output_header() (copied from jackhmmer.c)
 *   per query        the "Query:" lines, then per round: the model (p7_SingleBuilder
 *                    from the query in round 1, p7_Builder from the last round's
 *                    alignment after), the "@@" lines, p7_tophits_CompareRanking,
 *                    p7_tophits_Targets, p7_tophits_Domains, p7_tophits_Alignment
 *                    (the query and the included domains), p7_pli_Statistics and
 *                    the convergence test
 *   --tblout         p7_tophits_TabularTargets of the last round + p7_tophits_TabularTail
 *   --domtblout      p7_tophits_TabularDomains of the last round + p7_tophits_TabularTail
 *   -A               the last round's alignment, esl_msafile_Write, before the query's "//"
 *   --chkhmm <f>     each round's model, p7_hmmfile_WriteASCII, to <f>-<round>.hmm
 *   --chkali <f>     each round's alignment, Pfam format, to <f>-<round>.sto
 *
 * so gpu-search's jackhmmer (gpu_search/hmmer/jackhmmer.py) can be compared with
 * HMMER line by line.
 *
 * Usage:  jackhmmer_oracle [options] <seqfile> <seqdb>
 *
 * Options: jackhmmer's option table of HMMER 3.4 (p7_builder_Create() and
 *   p7_pipeline_Create() read many of them), with --cpu accepted and echoed as
 *   jackhmmer does; the search itself is always serial.
 *
 * Differences from the real jackhmmer, all deliberate:
 *   - serial only (see hmmsearch_oracle.c: threads change only which
 *     sub-threshold hits are kept, and so the width of the name columns);
 *   - the MPI options are not offered;
 *   - argv[0] is replaced by "jackhmmer", so the banner and the tabular
 *     "# Option settings:" line read as jackhmmer's own.
 *
 * Build (tests/helpers/oracle/build.py does this):
 *   cc -O1 -I$LIBS/include/libhmmer -I$LIBS/include/libeasel -I$LIBS/include/libhmmer/impl_sse \
 *      jackhmmer_oracle.c -L$LIBS -llibhmmer -llibeasel -Wl,-rpath,$LIBS -lm -lpthread -o jackhmmer_oracle
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easel.h"
#include "esl_alphabet.h"
#include "esl_getopts.h"
#include "esl_keyhash.h"
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
#define CONOPTS     "--fast,--hand"
#define EFFOPTS     "--eent,--eentexp,--eclust,--eset,--enone"
#define WGTOPTS     "--wgsc,--wblosum,--wpb,--wnone"

/* jackhmmer.c's option table (HMMER 3.4), less the MPI options. */
static ESL_OPTIONS options[] = {
  /* name           type              default   env  range   toggles     reqs   incomp             help                                                  docgroup*/
  { "-h",           eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL,  NULL,            "show brief help on version and usage",                         1 },
  { "-N",           eslARG_INT,           "5", NULL, "n>0",     NULL,    NULL,  NULL,            "set maximum number of iterations to <n>",                      1 },
  /* Control of output */
  { "-o",           eslARG_OUTFILE,      NULL, NULL, NULL,      NULL,    NULL,  NULL,            "direct output to file <f>, not stdout",                        2 },
  { "-A",           eslARG_OUTFILE,      NULL, NULL, NULL,      NULL,    NULL,  NULL,            "save multiple alignment of hits to file <f>",                  2 },
  { "--tblout",     eslARG_OUTFILE,      NULL, NULL, NULL,      NULL,    NULL,  NULL,            "save parseable table of per-sequence hits to file <f>",        2 },
  { "--domtblout",  eslARG_OUTFILE,      NULL, NULL, NULL,      NULL,    NULL,  NULL,            "save parseable table of per-domain hits to file <f>",          2 },
  { "--chkhmm",     eslARG_OUTFILE,      NULL, NULL, NULL,      NULL,    NULL,  NULL,            "save HMM checkpoints to files <f>-<iteration>.hmm",            2 },
  { "--chkali",     eslARG_OUTFILE,      NULL, NULL, NULL,      NULL,    NULL,  NULL,            "save alignment checkpoints to files <f>-<iteration>.sto",      2 },
  { "--acc",        eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL,  NULL,            "prefer accessions over names in output",                       2 },
  { "--noali",      eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL,  NULL,            "don't output alignments, so output is smaller",                2 },
  { "--notextw",    eslARG_NONE,         NULL, NULL, NULL,      NULL,    NULL, "--textw",        "unlimit ASCII text output line width",                         2 },
  { "--textw",      eslARG_INT,         "120", NULL, "n>=120",  NULL,    NULL, "--notextw",      "set max width of ASCII text output lines",                     2 },
  /* Control of scoring system (first round) */
  { "--popen",      eslARG_REAL,       "0.02", NULL, "0<=x<0.5",NULL,    NULL,  NULL,            "gap open probability",                                         3 },
  { "--pextend",    eslARG_REAL,        "0.4", NULL, "0<=x<1",  NULL,    NULL,  NULL,            "gap extend probability",                                       3 },
  { "--mx",         eslARG_STRING, "BLOSUM62", NULL, NULL,      NULL,    NULL,  "--mxfile",      "substitution score matrix choice (of some built-in matrices)", 3 },
  { "--mxfile",     eslARG_INFILE,       NULL, NULL, NULL,      NULL,    NULL,  "--mx",          "read substitution score matrix from file <f>",                 3 },
  /* Control of reporting thresholds */
  { "-E",           eslARG_REAL,       "10.0", NULL, "x>0",     NULL,    NULL,  REPOPTS,         "report sequences <= this E-value threshold in output",         4 },
  { "-T",           eslARG_REAL,        FALSE, NULL, NULL,      NULL,    NULL,  REPOPTS,         "report sequences >= this score threshold in output",           4 },
  { "--domE",       eslARG_REAL,       "10.0", NULL, "x>0",     NULL,    NULL,  DOMREPOPTS,      "report domains <= this E-value threshold in output",           4 },
  { "--domT",       eslARG_REAL,        FALSE, NULL, NULL,      NULL,    NULL,  DOMREPOPTS,      "report domains >= this score cutoff in output",                4 },
  /* Control of inclusion (significance) thresholds: jackhmmer's defaults are 0.001 */
  { "--incE",       eslARG_REAL,      "0.001", NULL, "x>0",     NULL,    NULL,  INCOPTS,         "consider sequences <= this E-value threshold as significant",  5 },
  { "--incT",       eslARG_REAL,        FALSE, NULL, NULL,      NULL,    NULL,  INCOPTS,         "consider sequences >= this score threshold as significant",    5 },
  { "--incdomE",    eslARG_REAL,      "0.001", NULL, "x>0",     NULL,    NULL,  INCDOMOPTS,      "consider domains <= this E-value threshold as significant",    5 },
  { "--incdomT",    eslARG_REAL,        FALSE, NULL, NULL,      NULL,    NULL,  INCDOMOPTS,      "consider domains >= this score threshold as significant",      5 },
  /* Model-specific thresholding: unused and refused in jackhmmer, but p7_pipeline_Create() reads them */
  { "--cut_ga",     eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL,  THRESHOPTS,      "use profile's GA gathering cutoffs to set all thresholding",  99 },
  { "--cut_nc",     eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL,  THRESHOPTS,      "use profile's NC noise cutoffs to set all thresholding",      99 },
  { "--cut_tc",     eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL,  THRESHOPTS,      "use profile's TC trusted cutoffs to set all thresholding",    99 },
  /* Control of acceleration pipeline */
  { "--max",        eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL, "--F1,--F2,--F3", "Turn all heuristic filters off (less speed, more power)",      7 },
  { "--F1",         eslARG_REAL,       "0.02", NULL, NULL,      NULL,    NULL, "--max",          "Stage 1 (MSV) threshold: promote hits w/ P <= F1",             7 },
  { "--F2",         eslARG_REAL,       "1e-3", NULL, NULL,      NULL,    NULL, "--max",          "Stage 2 (Vit) threshold: promote hits w/ P <= F2",             7 },
  { "--F3",         eslARG_REAL,       "1e-5", NULL, NULL,      NULL,    NULL, "--max",          "Stage 3 (Fwd) threshold: promote hits w/ P <= F3",             7 },
  { "--nobias",     eslARG_NONE,         NULL, NULL, NULL,      NULL,    NULL, "--max",          "turn off composition bias filter",                             7 },
  /* Model construction (p7_builder_Create() reads them; jackhmmer's models are --hand) */
  { "--fast",       eslARG_NONE,        FALSE, NULL, NULL,    CONOPTS,   NULL,  NULL,            "assign cols w/ >= symfrac residues as consensus",              99 },
  { "--hand",       eslARG_NONE,    "default", NULL, NULL,    CONOPTS,   NULL,  NULL,            "manual construction (requires reference annotation)",          99 },
  { "--symfrac",    eslARG_REAL,        "0.5", NULL, "0<=x<=1", NULL,"--fast",  NULL,            "sets sym fraction controlling --fast construction",            99 },
  { "--fragthresh", eslARG_REAL,        "0.5", NULL, "0<=x<=1", NULL,    NULL,  NULL,            "if L <= x*alen, tag sequence as a fragment",                   8 },
  /* Relative sequence weighting */
  { "--wpb",        eslARG_NONE,    "default", NULL, NULL,   WGTOPTS,    NULL,  NULL,            "Henikoff position-based weights",                              9 },
  { "--wgsc",       eslARG_NONE,         NULL, NULL, NULL,   WGTOPTS,    NULL,  NULL,            "Gerstein/Sonnhammer/Chothia tree weights",                     9 },
  { "--wblosum",    eslARG_NONE,         NULL, NULL, NULL,   WGTOPTS,    NULL,  NULL,            "Henikoff simple filter weights",                               9 },
  { "--wnone",      eslARG_NONE,         NULL, NULL, NULL,   WGTOPTS,    NULL,  NULL,            "don't do any relative weighting; set all to 1",                9 },
  { "--wgiven",     eslARG_NONE,         NULL, NULL, NULL,   WGTOPTS,    NULL,  NULL,            "use weights as given in MSA file",                            99 },
  { "--wid",        eslARG_REAL,       "0.62", NULL,"0<=x<=1", NULL,"--wblosum",NULL,            "for --wblosum: set identity cutoff",                           9 },
  /* Effective sequence number */
  { "--eent",       eslARG_NONE,    "default", NULL, NULL,   EFFOPTS,    NULL,  NULL,            "adjust eff seq # to achieve relative entropy target",          10 },
  { "--eentexp",    eslARG_NONE,     "default",NULL, NULL,   EFFOPTS,    NULL,  NULL,            "adjust eff seq # to reach rel. ent. target using exp scaling", 10 },
  { "--eclust",     eslARG_NONE,        FALSE, NULL, NULL,   EFFOPTS,    NULL,  NULL,            "eff seq # is # of single linkage clusters",                    10 },
  { "--enone",      eslARG_NONE,        FALSE, NULL, NULL,   EFFOPTS,    NULL,  NULL,            "no effective seq # weighting: just use nseq",                  10 },
  { "--eset",       eslARG_REAL,         NULL, NULL, NULL,   EFFOPTS,    NULL,  NULL,            "set eff seq # for all models to <x>",                          10 },
  { "--ere",        eslARG_REAL,         NULL, NULL,"x>0",      NULL,    NULL,  NULL,            "for --eent[exp]: set minimum rel entropy/position to <x>",     10 },
  { "--esigma",     eslARG_REAL,       "45.0", NULL,"x>0",      NULL,    NULL,  NULL,            "for --eent[exp]: set sigma param to <x>",                      10 },
  { "--eid",        eslARG_REAL,       "0.62", NULL,"0<=x<=1",  NULL,"--eclust",NULL,            "for --eclust: set fractional identity cutoff to <x>",          10 },
  /* Prior */
  { "--pnone",      eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL,"--plaplace",      "don't use any prior; parameters are frequencies",             13 },
  { "--plaplace",   eslARG_NONE,        FALSE, NULL, NULL,      NULL,    NULL,   "--pnone",      "use a Laplace +1 prior",                                      13 },
  /* E-value calibration */
  { "--EmL",        eslARG_INT,         "200", NULL,"n>0",      NULL,    NULL,  NULL,            "length of sequences for MSV Gumbel mu fit",                   11 },
  { "--EmN",        eslARG_INT,         "200", NULL,"n>0",      NULL,    NULL,  NULL,            "number of sequences for MSV Gumbel mu fit",                   11 },
  { "--EvL",        eslARG_INT,         "200", NULL,"n>0",      NULL,    NULL,  NULL,            "length of sequences for Viterbi Gumbel mu fit",               11 },
  { "--EvN",        eslARG_INT,         "200", NULL,"n>0",      NULL,    NULL,  NULL,            "number of sequences for Viterbi Gumbel mu fit",               11 },
  { "--EfL",        eslARG_INT,         "100", NULL,"n>0",      NULL,    NULL,  NULL,            "length of sequences for Forward exp tail tau fit",            11 },
  { "--EfN",        eslARG_INT,         "200", NULL,"n>0",      NULL,    NULL,  NULL,            "number of sequences for Forward exp tail tau fit",            11 },
  { "--Eft",        eslARG_REAL,       "0.04", NULL,"0<x<1",    NULL,    NULL,  NULL,            "tail mass for Forward exponential tail tau fit",              11 },
  /* Other options */
  { "--nonull2",    eslARG_NONE,         NULL, NULL, NULL,      NULL,    NULL,  NULL,            "turn off biased composition score corrections",               12 },
  { "-Z",           eslARG_REAL,        FALSE, NULL, "x>0",     NULL,    NULL,  NULL,            "set # of comparisons done, for E-value calculation",          12 },
  { "--domZ",       eslARG_REAL,        FALSE, NULL, "x>0",     NULL,    NULL,  NULL,            "set # of significant seqs, for domain E-value calculation",   12 },
  { "--seed",       eslARG_INT,          "42", NULL, "n>=0",    NULL,    NULL,  NULL,            "set RNG seed to <n> (if 0: one-time arbitrary seed)",         12 },
  { "--qformat",    eslARG_STRING,       NULL, NULL, NULL,      NULL,    NULL,  NULL,            "assert query <seqfile> is in format <s>: no autodetection",   12 },
  { "--tformat",    eslARG_STRING,       NULL, NULL, NULL,      NULL,    NULL,  NULL,            "assert target <seqdb> is in format <s>: no autodetection",    12 },
  { "--cpu",        eslARG_INT,           "2", "HMMER_NCPU","n>=0",NULL, NULL,  NULL,            "number of parallel CPU workers (accepted; search is serial)", 12 },
  {  0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
};

#include "seq_format.h"

static char usage[]  = "[-options] <seqfile> <seqdb>";
static char banner[] = "iteratively search a protein sequence against a protein database";

#define ECHO(opt, ...) do { if (esl_opt_IsUsed(go, opt)) fprintf(ofp, __VA_ARGS__); } while (0)

/* As jackhmmer.c's output_header() (its -T and --domT lines say "score <=" there too). */
static void
output_header(FILE *ofp, const ESL_GETOPTS *go, char *qfile, char *dbfile)
{
  p7_banner(ofp, go->argv[0], banner);

  fprintf(ofp, "# query sequence file:             %s\n", qfile);
  fprintf(ofp, "# target sequence database:        %s\n", dbfile);
  ECHO("-N",           "# maximum iterations set to:       %d\n",            esl_opt_GetInteger(go, "-N"));
  ECHO("-o",           "# output directed to file:         %s\n",            esl_opt_GetString(go, "-o"));
  ECHO("-A",           "# MSA of hits saved to file:       %s\n",            esl_opt_GetString(go, "-A"));
  ECHO("--tblout",     "# per-seq hits tabular output:     %s\n",            esl_opt_GetString(go, "--tblout"));
  ECHO("--domtblout",  "# per-dom hits tabular output:     %s\n",            esl_opt_GetString(go, "--domtblout"));
  ECHO("--chkhmm",     "# HMM checkpoint files output:     %s-<i>.hmm\n",    esl_opt_GetString(go, "--chkhmm"));
  ECHO("--chkali",     "# MSA checkpoint files output:     %s-<i>.sto\n",    esl_opt_GetString(go, "--chkali"));
  ECHO("--acc",        "# prefer accessions over names:    yes\n");
  ECHO("--noali",      "# show alignments in output:       no\n");
  ECHO("--notextw",    "# max ASCII text line length:      unlimited\n");
  ECHO("--textw",      "# max ASCII text line length:      %d\n",            esl_opt_GetInteger(go, "--textw"));
  ECHO("--popen",      "# gap open probability:            %f\n",            esl_opt_GetReal   (go, "--popen"));
  ECHO("--pextend",    "# gap extend probability:          %f\n",            esl_opt_GetReal   (go, "--pextend"));
  ECHO("--mx",         "# subst score matrix (built-in):   %s\n",            esl_opt_GetString (go, "--mx"));
  ECHO("--mxfile",     "# subst score matrix (file):       %s\n",            esl_opt_GetString (go, "--mxfile"));
  ECHO("-E",           "# sequence reporting threshold:    E-value <= %g\n", esl_opt_GetReal   (go, "-E"));
  ECHO("-T",           "# sequence reporting threshold:    score <= %g\n",   esl_opt_GetReal   (go, "-T"));
  ECHO("--domE",       "# domain reporting threshold:      E-value <= %g\n", esl_opt_GetReal   (go, "--domE"));
  ECHO("--domT",       "# domain reporting threshold:      score <= %g\n",   esl_opt_GetReal   (go, "--domT"));
  ECHO("--incE",       "# sequence inclusion threshold:    E-value <= %g\n", esl_opt_GetReal   (go, "--incE"));
  ECHO("--incT",       "# sequence inclusion threshold:    score >= %g\n",   esl_opt_GetReal   (go, "--incT"));
  ECHO("--incdomE",    "# domain inclusion threshold:      E-value <= %g\n", esl_opt_GetReal   (go, "--incdomE"));
  ECHO("--incdomT",    "# domain inclusion threshold:      score >= %g\n",   esl_opt_GetReal   (go, "--incdomT"));
  ECHO("--max",        "# Max sensitivity mode:            on [all heuristic filters off]\n");
  ECHO("--F1",         "# MSV filter P threshold:       <= %g\n",            esl_opt_GetReal(go, "--F1"));
  ECHO("--F2",         "# Vit filter P threshold:       <= %g\n",            esl_opt_GetReal(go, "--F2"));
  ECHO("--F3",         "# Fwd filter P threshold:       <= %g\n",            esl_opt_GetReal(go, "--F3"));
  ECHO("--nobias",     "# biased composition HMM filter:   off\n");
  ECHO("--fast",       "# model architecture construction: fast/heuristic\n");
  ECHO("--hand",       "# model architecture construction: hand-specified by RF annotation\n");
  ECHO("--symfrac",    "# sym frac for model structure:    %.3f\n",          esl_opt_GetReal(go, "--symfrac"));
  ECHO("--fragthresh", "# define fragments if <= x*alen:   %.3f\n",          esl_opt_GetReal(go, "--fragthresh"));
  ECHO("--wpb",        "# relative weighting scheme:       Henikoff PB\n");
  ECHO("--wgsc",       "# relative weighting scheme:       G/S/C\n");
  ECHO("--wblosum",    "# relative weighting scheme:       BLOSUM filter\n");
  ECHO("--wnone",      "# relative weighting scheme:       none\n");
  ECHO("--wid",        "# frac id cutoff for BLOSUM wgts:  %f\n",            esl_opt_GetReal(go, "--wid"));
  ECHO("--eent",       "# effective seq number scheme:     entropy weighting\n");
  ECHO("--eclust",     "# effective seq number scheme:     single linkage clusters\n");
  ECHO("--enone",      "# effective seq number scheme:     none\n");
  ECHO("--eset",       "# effective seq number:            set to %f\n",     esl_opt_GetReal(go, "--eset"));
  ECHO("--ere",        "# minimum rel entropy target:      %f bits\n",       esl_opt_GetReal(go, "--ere"));
  ECHO("--esigma",     "# entropy target sigma parameter:  %f bits\n",       esl_opt_GetReal(go, "--esigma"));
  ECHO("--eid",        "# frac id cutoff for --eclust:     %f\n",            esl_opt_GetReal(go, "--eid"));
  ECHO("--pnone",      "# prior scheme:                    none\n");
  ECHO("--plaplace",   "# prior scheme:                    Laplace +1\n");
  ECHO("--EmL",        "# seq length, MSV Gumbel mu fit:   %d\n",            esl_opt_GetInteger(go, "--EmL"));
  ECHO("--EmN",        "# seq number, MSV Gumbel mu fit:   %d\n",            esl_opt_GetInteger(go, "--EmN"));
  ECHO("--EvL",        "# seq length, Vit Gumbel mu fit:   %d\n",            esl_opt_GetInteger(go, "--EvL"));
  ECHO("--EvN",        "# seq number, Vit Gumbel mu fit:   %d\n",            esl_opt_GetInteger(go, "--EvN"));
  ECHO("--EfL",        "# seq length, Fwd exp tau fit:     %d\n",            esl_opt_GetInteger(go, "--EfL"));
  ECHO("--EfN",        "# seq number, Fwd exp tau fit:     %d\n",            esl_opt_GetInteger(go, "--EfN"));
  ECHO("--Eft",        "# tail mass for Fwd exp tau fit:   %f\n",            esl_opt_GetReal   (go, "--Eft"));
  ECHO("--nonull2",    "# null2 bias corrections:          off\n");
  ECHO("-Z",           "# sequence search space set to:    %.0f\n",          esl_opt_GetReal(go, "-Z"));
  ECHO("--domZ",       "# domain search space set to:      %.0f\n",          esl_opt_GetReal(go, "--domZ"));
  if (esl_opt_IsUsed(go, "--seed"))  {
    if (esl_opt_GetInteger(go, "--seed") == 0) fprintf(ofp, "# random number seed:              one-time arbitrary\n");
    else                                       fprintf(ofp, "# random number seed set to:       %d\n", esl_opt_GetInteger(go, "--seed"));
  }
  ECHO("--qformat",    "# query <seqfile> format asserted: %s\n",            esl_opt_GetString(go, "--qformat"));
  ECHO("--tformat",    "# target <seqdb> format asserted:  %s\n",            esl_opt_GetString(go, "--tformat"));
  ECHO("--cpu",        "# number of worker threads:        %d\n",            esl_opt_GetInteger(go, "--cpu"));
  fprintf(ofp, "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n\n");
}


/* As jackhmmer.c's process_commandline(), without the long help. */
static ESL_GETOPTS *
process_commandline(int argc, char **argv, char **ret_qfile, char **ret_dbfile)
{
  ESL_GETOPTS *go = esl_getopts_Create(options);

  if (esl_opt_ProcessEnvironment(go)         != eslOK) { printf("Failed to process environment: %s\n", go->errbuf); goto FAILURE; }
  if (esl_opt_ProcessCmdline(go, argc, argv) != eslOK) { printf("Failed to parse command line: %s\n",  go->errbuf); goto FAILURE; }
  if (esl_opt_VerifyConfig(go)               != eslOK) { printf("Failed to parse command line: %s\n",  go->errbuf); goto FAILURE; }
  /* options jackhmmer refuses (group 99) */
  if (esl_opt_GetSetter(go, "--cut_ga")  != eslARG_SETBY_DEFAULT ||
      esl_opt_GetSetter(go, "--cut_nc")  != eslARG_SETBY_DEFAULT ||
      esl_opt_GetSetter(go, "--cut_tc")  != eslARG_SETBY_DEFAULT ||
      esl_opt_GetSetter(go, "--fast")    != eslARG_SETBY_DEFAULT ||
      esl_opt_GetSetter(go, "--hand")    != eslARG_SETBY_DEFAULT ||
      esl_opt_GetSetter(go, "--symfrac") != eslARG_SETBY_DEFAULT ||
      esl_opt_GetSetter(go, "--wgiven")  != eslARG_SETBY_DEFAULT)
    { puts("Failed to parse command line: jackhmmer does not accept that option"); goto FAILURE; }
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
  if (strcmp(*ret_dbfile, "-") == 0) { puts("jackhmmer cannot read <seqdb> from stdin stream"); goto FAILURE; }
  return go;

 FAILURE:
  esl_usage(stdout, argv[0], usage);
  esl_getopts_Destroy(go);
  exit(1);
}


/* As jackhmmer.c's checkpoint_hmm(): the first query starts the file, later ones append. */
static void
checkpoint_hmm(int nquery, P7_HMM *hmm, char *basename, int iteration)
{
  FILE *fp       = NULL;
  char *filename = NULL;

  esl_sprintf(&filename, "%s-%d.hmm", basename, iteration);
  if ((fp = fopen(filename, nquery == 1 ? "w" : "a")) == NULL) p7_Fail("Failed to open HMM checkpoint file %s\n", filename);
  p7_hmmfile_WriteASCII(fp, -1, hmm);
  fclose(fp);
  free(filename);
}

/* As jackhmmer.c's checkpoint_msa(): Pfam format; the first query starts the file. */
static void
checkpoint_msa(int nquery, ESL_MSA *msa, char *basename, int iteration)
{
  FILE *fp       = NULL;
  char *filename = NULL;

  esl_sprintf(&filename, "%s-%d.sto", basename, iteration);
  if ((fp = fopen(filename, nquery == 1 ? "w" : "a")) == NULL) p7_Fail("Failed to open MSA checkpoint file %s\n", filename);
  esl_msafile_Write(fp, msa, eslMSAFILE_PFAM);
  fclose(fp);
  free(filename);
}


/* As jackhmmer.c's serial_loop(): every target through p7_Pipeline(). */
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


/* As jackhmmer.c's serial_master() with ncpus = 0. */
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
  ESL_SQFILE    *qfp       = NULL;
  ESL_SQFILE    *dbfp      = NULL;
  ESL_SQ        *qsq       = NULL;
  ESL_ALPHABET  *abc       = NULL;
  P7_BG         *bg        = NULL;
  P7_BG         *wbg       = NULL;   /* the worker's clone, as info[0].bg in jackhmmer.c */
  P7_BUILDER    *bld       = NULL;
  ESL_KEYHASH   *kh        = NULL;   /* the last round's included targets (their ranks) */
  ESL_STOPWATCH *w         = esl_stopwatch_Create();
  int            textw;
  int            maxiterations;
  int            iteration;
  int            nnew_targets;
  int            prv_msa_nseq = 1;
  int            nquery    = 0;
  int            status, qstatus, sstatus;

  argv[0] = "jackhmmer";        /* banner and "# Option settings:" read as jackhmmer's */
  impl_Init();
  p7_FLogsumInit();

  go            = process_commandline(argc, argv, &qfile, &dbfile);
  textw         = esl_opt_GetBoolean(go, "--notextw") ? 0 : esl_opt_GetInteger(go, "--textw");
  maxiterations = esl_opt_GetInteger(go, "-N");
  abc           = esl_alphabet_Create(eslAMINO);
  bg            = p7_bg_Create(abc);
  kh            = esl_keyhash_Create();

  /* The builder as jackhmmer.c sets it up: from the options (--hand architecture, --seed ...),
   * with the single-sequence score system of round 1 */
  bld = p7_builder_Create(go, abc);
  if (esl_opt_IsOn(go, "--mxfile")) status = p7_builder_SetScoreSystem (bld, esl_opt_GetString(go, "--mxfile"), NULL, esl_opt_GetReal(go, "--popen"), esl_opt_GetReal(go, "--pextend"), bg);
  else                              status = p7_builder_LoadScoreSystem(bld, esl_opt_GetString(go, "--mx"),           esl_opt_GetReal(go, "--popen"), esl_opt_GetReal(go, "--pextend"), bg);
  if (status != eslOK) p7_Fail("Failed to set single query seq score system:\n%s\n", bld->errbuf);

  if (esl_opt_IsOn(go, "-o")          && (ofp      = fopen(esl_opt_GetString(go, "-o"),          "w")) == NULL) p7_Fail("Failed to open output file %s for writing\n", esl_opt_GetString(go, "-o"));
  if (esl_opt_IsOn(go, "-A")          && (afp      = fopen(esl_opt_GetString(go, "-A"),          "w")) == NULL) p7_Fail("Failed to open alignment output file %s for writing\n", esl_opt_GetString(go, "-A"));
  if (esl_opt_IsOn(go, "--tblout")    && (tblfp    = fopen(esl_opt_GetString(go, "--tblout"),    "w")) == NULL) p7_Fail("Failed to open tabular per-seq output file %s for writing\n", esl_opt_GetString(go, "--tblout"));
  if (esl_opt_IsOn(go, "--domtblout") && (domtblfp = fopen(esl_opt_GetString(go, "--domtblout"), "w")) == NULL) p7_Fail("Failed to open tabular per-dom output file %s for writing\n", esl_opt_GetString(go, "--domtblout"));

  status = esl_sqfile_OpenDigital(abc, dbfile, seq_format(go, "--tformat"), p7_SEQDBENV, &dbfp);
  if      (status == eslENOTFOUND) p7_Fail("Failed to open target sequence database %s for reading\n",      dbfile);
  else if (status == eslEFORMAT)   p7_Fail("Target sequence database file %s is empty or misformatted\n",   dbfile);
  else if (status == eslEINVAL)    p7_Fail("Can't autodetect format of a stdin or .gz seqfile");
  else if (status != eslOK)        p7_Fail("Unexpected error %d opening target sequence database file %s\n", status, dbfile);
  if (! esl_sqfile_IsRewindable(dbfp))
    p7_Fail("Target sequence file %s isn't rewindable; jackhmmer requires that it is", dbfile);

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
      P7_HMM      *hmm     = NULL;     /* the round's model: only needed for --chkhmm */
      P7_HMM     **ret_hmm = NULL;
      P7_OPROFILE *om      = NULL;
      P7_OPROFILE *wom     = NULL;     /* the worker's clone, as info[0].om */
      P7_PIPELINE *pli     = NULL;
      P7_TOPHITS  *th      = NULL;
      P7_TRACE    *qtr     = NULL;     /* faux trace of the query, aligned to its own model */
      ESL_MSA     *msa     = NULL;     /* the query and the included domains */

      if (esl_opt_IsOn(go, "--chkhmm")) ret_hmm = &hmm;

      nquery++;
      if (qsq->n == 0) continue; /* jackhmmer skips zero length queries as if they weren't there */

      fprintf(ofp, "Query:       %s  [L=%ld]\n", qsq->name, (long) qsq->n);
      if (qsq->acc[0]  != '\0') fprintf(ofp, "Accession:   %s\n", qsq->acc);
      if (qsq->desc[0] != '\0') fprintf(ofp, "Description: %s\n", qsq->desc);
      fprintf(ofp, "\n");

      for (iteration = 1; iteration <= maxiterations; iteration++)
        {
          esl_stopwatch_Start(w);

          if (om  != NULL) p7_oprofile_Destroy(om);
          if (pli != NULL) p7_pipeline_Destroy(pli);
          if (th  != NULL) p7_tophits_Destroy(th);
          if (wom != NULL) p7_oprofile_Destroy(wom);

          /* the search model: from the query alone (round 1) or from the last round's alignment */
          if (msa == NULL)
            {
              p7_SingleBuilder(bld, qsq, wbg, ret_hmm, &qtr, NULL, &om);
              prv_msa_nseq = 1;
            }
          else
            {
              status = p7_Builder(bld, msa, wbg, ret_hmm, NULL, NULL, &om, NULL);
              if      (status == eslENORESULT) p7_Fail("Failed to construct new model from iteration %d results:\n%s", iteration, bld->errbuf);
              else if (status == eslEFORMAT)   p7_Fail("Failed to construct new model from iteration %d results:\n%s", iteration, bld->errbuf);
              else if (status != eslOK)        p7_Fail("Unexpected error constructing new model at iteration %d:",     iteration);

              fprintf(ofp, "@@\n");
              fprintf(ofp, "@@ Round:                  %d\n", iteration);
              fprintf(ofp, "@@ Included in MSA:        %d subsequences (query + %d subseqs from %d targets)\n",
                      msa->nseq, msa->nseq-1, kh->nkeys);
              fprintf(ofp, "@@ Model size:             %d positions\n", om->M);
              fprintf(ofp, "@@\n\n");

              prv_msa_nseq = msa->nseq;
              esl_msa_Destroy(msa);
              msa = NULL;
            }

          if (esl_opt_IsOn(go, "--chkhmm"))
            {
              checkpoint_hmm(nquery, hmm, esl_opt_GetString(go, "--chkhmm"), iteration);
              p7_hmm_Destroy(hmm);
              hmm = NULL;
            }

          th  = p7_tophits_Create();
          wom = p7_oprofile_Clone(om);
          pli = p7_pipeline_Create(go, om->M, 400, FALSE, p7_SEARCH_SEQS); /* 400 is a dummy length */
          p7_pli_NewModel(pli, wom, wbg);

          sstatus = serial_loop(pli, wom, wbg, th, dbfp);
          switch (sstatus) {
          case eslEFORMAT: p7_Fail("Parse failed (sequence file %s):\n%s\n", dbfp->filename, esl_sqfile_GetErrorBuf(dbfp)); break;
          case eslEOF:     break;
          default:         p7_Fail("Unexpected error %d reading sequence file %s", sstatus, dbfp->filename);
          }

          p7_tophits_SortBySortkey(th);
          p7_tophits_Threshold(th, pli);
          p7_tophits_CompareRanking(th, kh, &nnew_targets);
          p7_tophits_Targets(ofp, th, pli, textw); fprintf(ofp, "\n\n");
          p7_tophits_Domains(ofp, th, pli, textw); fprintf(ofp, "\n\n");

          /* the next round's alignment: the query (its faux trace) and the included domains */
          p7_tophits_Alignment(th, abc, &qsq, &qtr, 1, p7_ALL_CONSENSUS_COLS, &msa);
          esl_msa_Digitize(abc, msa, NULL);
          esl_msa_FormatName(msa, "%s-i%d", qsq->name, iteration);
          if (qsq->acc[0]  != '\0') esl_msa_SetAccession(msa, qsq->acc,  -1);
          if (qsq->desc[0] != '\0') esl_msa_SetDesc     (msa, qsq->desc, -1);
          esl_msa_FormatAuthor(msa, "jackhmmer (HMMER %s)", HMMER_VERSION);

          if (esl_opt_IsOn(go, "--chkali")) checkpoint_msa(nquery, msa, esl_opt_GetString(go, "--chkali"), iteration);

          esl_stopwatch_Stop(w);
          p7_pli_Statistics(ofp, pli, w);

          /* convergence: no new target included, and the alignment did not grow */
          fprintf(ofp, "\n");
          fprintf(ofp, "@@ New targets included:   %d\n", nnew_targets);
          fprintf(ofp, "@@ New alignment includes: %d subseqs (was %d), including original query\n", msa->nseq, prv_msa_nseq);
          if (nnew_targets == 0 && msa->nseq <= prv_msa_nseq)
            {
              fprintf(ofp, "@@\n");
              fprintf(ofp, "@@ CONVERGED (in %d rounds). \n", iteration);
              fprintf(ofp, "@@\n\n");
              break;
            }
          else if (iteration < maxiterations)
            fprintf(ofp, "@@ Continuing to next round.\n\n");

          esl_sqfile_Position(dbfp, 0);
        }

      /* the last round's results */
      if (tblfp)    p7_tophits_TabularTargets(tblfp,    qsq->name, qsq->acc, th, pli, (nquery == 1));
      if (domtblfp) p7_tophits_TabularDomains(domtblfp, qsq->name, qsq->acc, th, pli, (nquery == 1));
      if (afp)
        {
          if (textw > 0) esl_msafile_Write(afp, msa, eslMSAFILE_STOCKHOLM);
          else           esl_msafile_Write(afp, msa, eslMSAFILE_PFAM);
          fprintf(ofp, "# Alignment of %d hits satisfying inclusion thresholds saved to: %s\n", msa->nseq, esl_opt_GetString(go, "-A"));
        }
      fprintf(ofp, "//\n");
      fflush(ofp);

      p7_pipeline_Destroy(pli);
      p7_tophits_Destroy(th);
      p7_oprofile_Destroy(wom);
      p7_oprofile_Destroy(om);
      esl_msa_Destroy(msa);
      p7_trace_Destroy(qtr);
      esl_sq_Reuse(qsq);
      esl_keyhash_Reuse(kh);
      esl_sqfile_Position(dbfp, 0);
    }
  if      (qstatus == eslEFORMAT) p7_Fail("Parse failed (sequence file %s):\n%s\n", qfp->filename, esl_sqfile_GetErrorBuf(qfp));
  else if (qstatus != eslEOF)     p7_Fail("Unexpected error %d reading sequence file %s", qstatus, qfp->filename);

  if (tblfp)    p7_tophits_TabularTail(tblfp,    "jackhmmer", p7_SEARCH_SEQS, qfile, dbfile, go);
  if (domtblfp) p7_tophits_TabularTail(domtblfp, "jackhmmer", p7_SEARCH_SEQS, qfile, dbfile, go);
  if (ofp)      fprintf(ofp, "[ok]\n");

  p7_bg_Destroy(wbg);
  p7_bg_Destroy(bg);
  p7_builder_Destroy(bld);
  esl_keyhash_Destroy(kh);
  esl_sqfile_Close(qfp);
  esl_sqfile_Close(dbfp);
  esl_sq_Destroy(qsq);
  esl_alphabet_Destroy(abc);
  esl_stopwatch_Destroy(w);
  if (ofp != stdout) fclose(ofp);
  if (afp)           fclose(afp);
  if (tblfp)         fclose(tblfp);
  if (domtblfp)      fclose(domtblfp);
  esl_getopts_Destroy(go);
  return eslOK;
}
