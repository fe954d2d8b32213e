/* hmmscan_oracle: HMMER 3.4's own hmmscan, serial, rebuilt from library calls;
 * and hmmpress, to make the pressed databases hmmscan reads.
 *
 * Test oracle only.  Linked against the libhmmer/libeasel shared libraries
 * shipped inside the pyhmmer wheel (HMMER 3.4, SSE build), it repeats
 * hmmscan.c's serial_master() and serial_loop() (no threads, no MPI) and
 * writes every report with HMMER's own functions:
 *
 *   header           p7_banner + output_header() (copied from hmmscan.c)
 *   per query        p7_Pipeline over every model of the pressed database (MSV
 *                    part from .h3f, the rest from .h3p where the MSV filter
 *                    passes), then p7_tophits_Targets, p7_tophits_Domains,
 *                    p7_pli_Statistics
 *   --tblout         p7_tophits_TabularTargets   + p7_tophits_TabularTail
 *   --domtblout      p7_tophits_TabularDomains   + p7_tophits_TabularTail
 *   --pfamtblout     p7_tophits_TabularXfam      + p7_tophits_TabularTail
 *
 * so gpu-search's hmmscan (gpu_search/hmmer/hmmscan.py and report.py) can be
 * compared with HMMER line by line.
 *
 * Usage:  hmmscan_oracle [options] <hmmdb> <seqfile>
 *         hmmscan_oracle --press <hmmfile>
 *
 * hmmscan's options: -o, --tblout, --domtblout, --pfamtblout, --acc, --noali,
 *   --notextw, --textw, -E, -T, --domE, --domT, --incE, --incT, --incdomE,
 *   --incdomT, --cut_ga, --cut_nc, --cut_tc, --max, --F1, --F2, --F3, --nobias,
 *   --nonull2, -Z, --domZ, --seed, --qformat, --cpu (accepted and echoed as
 *   hmmscan does; the search itself is always serial).
 *
 * --press <hmmfile> is hmmpress.c's main() (without -f): it writes
 *   <hmmfile>.h3m, .h3i, .h3f and .h3p, as HMMER's hmmpress does.
 *
 * Differences from the real programs, all deliberate:
 *   - serial only: with threads, each worker's pipeline counts its own models
 *     while it searches (Z grows as models are read), which changes only which
 *     sub-threshold hits are kept, and so the width of the name columns;
 *   - the MPI options and the hidden --notrans/--vertcodon are not offered;
 *   - argv[0] is replaced by "hmmscan", so the banner and the tabular
 *     "# Option settings:" line read as hmmscan's own;
 *   - hmmpress's messages on stdout are left out.
 *
 * Build (tests/helpers/oracle/build.py does this):
 *   cc -O1 -I$LIBS/include/libhmmer -I$LIBS/include/libeasel -I$LIBS/include/libhmmer/impl_sse \
 *      hmmscan_oracle.c -L$LIBS -llibhmmer -llibeasel -Wl,-rpath,$LIBS -lm -lpthread -o hmmscan_oracle
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easel.h"
#include "esl_alphabet.h"
#include "esl_getopts.h"
#include "esl_sq.h"
#include "esl_sqio.h"
#include "esl_ssi.h"
#include "esl_stopwatch.h"

#include "hmmer.h"

#define REPOPTS     "-E,-T,--cut_ga,--cut_nc,--cut_tc"
#define DOMREPOPTS  "--domE,--domT,--cut_ga,--cut_nc,--cut_tc"
#define INCOPTS     "--incE,--incT,--cut_ga,--cut_nc,--cut_tc"
#define INCDOMOPTS  "--incdomE,--incdomT,--cut_ga,--cut_nc,--cut_tc"
#define THRESHOPTS  "-E,-T,--domE,--domT,--incE,--incT,--incdomE,--incdomT,--cut_ga,--cut_nc,--cut_tc"

/* hmmscan.c's option table (HMMER 3.4), less the options named above. */
static ESL_OPTIONS options[] = {
  /* name           type          default  env  range toggles  reqs   incomp                         help                                           docgroup*/
  { "-h",           eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  NULL,            "show brief help on version and usage",                          1 },
  /* Control of output */
  { "-o",           eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "direct output to file <f>, not stdout",                         2 },
  { "--tblout",     eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "save parseable table of per-sequence hits to file <f>",         2 },
  { "--domtblout",  eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "save parseable table of per-domain hits to file <f>",           2 },
  { "--pfamtblout", eslARG_OUTFILE, NULL, NULL, NULL,    NULL,  NULL,  NULL,            "save table of hits and domains to file, in Pfam format <f>",    2 },
  { "--acc",        eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  NULL,            "prefer accessions over names in output",                        2 },
  { "--noali",      eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  NULL,            "don't output alignments, so output is smaller",                 2 },
  { "--notextw",    eslARG_NONE,    NULL, NULL, NULL,    NULL,  NULL, "--textw",        "unlimit ASCII text output line width",                          2 },
  { "--textw",      eslARG_INT,    "120", NULL, "n>=120",NULL,  NULL, "--notextw",      "set max width of ASCII text output lines",                      2 },
  /* Control of reporting thresholds */
  { "-E",           eslARG_REAL,  "10.0", NULL, "x>0",   NULL,  NULL,  REPOPTS,         "report models <= this E-value threshold in output",             4 },
  { "-T",           eslARG_REAL,   FALSE, NULL, NULL,    NULL,  NULL,  REPOPTS,         "report models >= this score threshold in output",               4 },
  { "--domE",       eslARG_REAL,  "10.0", NULL, "x>0",   NULL,  NULL,  DOMREPOPTS,      "report domains <= this E-value threshold in output",            4 },
  { "--domT",       eslARG_REAL,   FALSE, NULL, NULL,    NULL,  NULL,  DOMREPOPTS,      "report domains >= this score cutoff in output",                 4 },
  /* Control of inclusion (significance) thresholds: */
  { "--incE",       eslARG_REAL,  "0.01", NULL, "x>0",   NULL,  NULL,  INCOPTS,         "consider models <= this E-value threshold as significant",      5 },
  { "--incT",       eslARG_REAL,   FALSE, NULL, NULL,    NULL,  NULL,  INCOPTS,         "consider models >= this score threshold as significant",        5 },
  { "--incdomE",    eslARG_REAL,  "0.01", NULL, "x>0",   NULL,  NULL,  INCDOMOPTS,      "consider domains <= this E-value threshold as significant",     5 },
  { "--incdomT",    eslARG_REAL,   FALSE, NULL, NULL,    NULL,  NULL,  INCDOMOPTS,      "consider domains >= this score threshold as significant",       5 },
  /* Model-specific thresholding for both reporting and inclusion */
  { "--cut_ga",     eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  THRESHOPTS,      "use profile's GA gathering cutoffs to set all thresholding",    6 },
  { "--cut_nc",     eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  THRESHOPTS,      "use profile's NC noise cutoffs to set all thresholding",        6 },
  { "--cut_tc",     eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL,  THRESHOPTS,      "use profile's TC trusted cutoffs to set all thresholding",      6 },
  /* Control of acceleration pipeline */
  { "--max",        eslARG_NONE,   FALSE, NULL, NULL,    NULL,  NULL, "--F1,--F2,--F3", "Turn all heuristic filters off (less speed, more power)",       7 },
  { "--F1",         eslARG_REAL,  "0.02", NULL, NULL,    NULL,  NULL, "--max",          "MSV threshold: promote hits w/ P <= F1",                        7 },
  { "--F2",         eslARG_REAL,  "1e-3", NULL, NULL,    NULL,  NULL, "--max",          "Vit threshold: promote hits w/ P <= F2",                        7 },
  { "--F3",         eslARG_REAL,  "1e-5", NULL, NULL,    NULL,  NULL, "--max",          "Fwd threshold: promote hits w/ P <= F3",                        7 },
  { "--nobias",     eslARG_NONE,    NULL, NULL, NULL,    NULL,  NULL, "--max",          "turn off composition bias filter",                              7 },
  /* Other options */
  { "--nonull2",    eslARG_NONE,    NULL, NULL, NULL,    NULL,  NULL,  NULL,            "turn off biased composition score corrections",                12 },
  { "-Z",           eslARG_REAL,   FALSE, NULL, "x>0",   NULL,  NULL,  NULL,            "set # of comparisons done, for E-value calculation",           12 },
  { "--domZ",       eslARG_REAL,   FALSE, NULL, "x>0",   NULL,  NULL,  NULL,            "set # of significant seqs, for domain E-value calculation",    12 },
  { "--seed",       eslARG_INT,    "42",  NULL, "n>=0",  NULL,  NULL,  NULL,            "set RNG seed to <n> (if 0: one-time arbitrary seed)",          12 },
  { "--qformat",    eslARG_STRING,  NULL, NULL, NULL,    NULL,  NULL,  NULL,            "assert input <seqfile> is in format <s>: no autodetection",    12 },
  { "--cpu",        eslARG_INT,   p7_NCPU,"HMMER_NCPU","n>=0",NULL,NULL, NULL,          "number of parallel CPU workers (accepted; search is serial)",  12 },
  {  0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
};

#include "seq_format.h"

static char usage[]  = "[-options] <hmmdb> <seqfile>";
static char banner[] = "search sequence(s) against a profile database";


/* As hmmscan.c's output_header(), for the options offered here. */
static void
output_header(FILE *ofp, const ESL_GETOPTS *go, char *hmmfile, char *seqfile)
{
  p7_banner(ofp, go->argv[0], banner);

  fprintf(ofp, "# query sequence file:             %s\n", seqfile);
  fprintf(ofp, "# target HMM database:             %s\n", hmmfile);
  if (esl_opt_IsUsed(go, "-o"))           fprintf(ofp, "# output directed to file:         %s\n",             esl_opt_GetString(go, "-o"));
  if (esl_opt_IsUsed(go, "--tblout"))     fprintf(ofp, "# per-seq hits tabular output:     %s\n",             esl_opt_GetString(go, "--tblout"));
  if (esl_opt_IsUsed(go, "--domtblout"))  fprintf(ofp, "# per-dom hits tabular output:     %s\n",             esl_opt_GetString(go, "--domtblout"));
  if (esl_opt_IsUsed(go, "--pfamtblout")) fprintf(ofp, "# pfam-style tabular hit output:   %s\n",             esl_opt_GetString(go, "--pfamtblout"));
  if (esl_opt_IsUsed(go, "--acc"))        fprintf(ofp, "# prefer accessions over names:    yes\n");
  if (esl_opt_IsUsed(go, "--noali"))      fprintf(ofp, "# show alignments in output:       no\n");
  if (esl_opt_IsUsed(go, "--notextw"))    fprintf(ofp, "# max ASCII text line length:      unlimited\n");
  if (esl_opt_IsUsed(go, "--textw"))      fprintf(ofp, "# max ASCII text line length:      %d\n",             esl_opt_GetInteger(go, "--textw"));
  if (esl_opt_IsUsed(go, "-E"))           fprintf(ofp, "# profile reporting threshold:     E-value <= %g\n",  esl_opt_GetReal(go, "-E"));
  if (esl_opt_IsUsed(go, "-T"))           fprintf(ofp, "# profile reporting threshold:     score >= %g\n",    esl_opt_GetReal(go, "-T"));
  if (esl_opt_IsUsed(go, "--domE"))       fprintf(ofp, "# domain reporting threshold:      E-value <= %g\n",  esl_opt_GetReal(go, "--domE"));
  if (esl_opt_IsUsed(go, "--domT"))       fprintf(ofp, "# domain reporting threshold:      score >= %g\n",    esl_opt_GetReal(go, "--domT"));
  if (esl_opt_IsUsed(go, "--incE"))       fprintf(ofp, "# profile inclusion threshold:     E-value <= %g\n",  esl_opt_GetReal(go, "--incE"));
  if (esl_opt_IsUsed(go, "--incT"))       fprintf(ofp, "# profile inclusion threshold:     score >= %g\n",    esl_opt_GetReal(go, "--incT"));
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
  if (esl_opt_IsUsed(go, "--qformat"))    fprintf(ofp, "# input seqfile format asserted:   %s\n",             esl_opt_GetString(go, "--qformat"));
  if (esl_opt_IsUsed(go, "--cpu"))        fprintf(ofp, "# number of worker threads:        %d\n",             esl_opt_GetInteger(go, "--cpu"));
  fprintf(ofp, "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n\n");
}


/* As hmmscan.c's process_commandline(), without the long help. */
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
  if (strcmp(*ret_hmmfile, "-") == 0)
    { puts("hmmscan cannot read <hmm database> from stdin stream, because it must have hmmpress'ed auxfiles"); goto FAILURE; }
  return go;

 FAILURE:
  esl_usage(stdout, argv[0], usage);
  esl_getopts_Destroy(go);
  exit(1);
}


/* As hmmscan.c's serial_loop(): every model of the database through p7_Pipeline().
 * (The MSV part of each model comes from the .h3f file; p7_Pipeline() reads the
 * rest from the .h3p file, through pli->hfp, only for models passing the MSV and
 * bias filters.  hmmscan.c ignores p7_Pipeline()'s return value; so does this.) */
static int
serial_loop(P7_PIPELINE *pli, P7_BG *bg, ESL_SQ *qsq, P7_TOPHITS *th, P7_HMMFILE *hfp)
{
  P7_OPROFILE  *om  = NULL;
  ESL_ALPHABET *abc = NULL;
  int           status;

  while ((status = p7_oprofile_ReadMSV(hfp, &abc, &om)) == eslOK)
    {
      p7_pli_NewModel(pli, om, bg);
      p7_bg_SetLength(bg, qsq->n);
      p7_oprofile_ReconfigLength(om, qsq->n);

      p7_Pipeline(pli, om, bg, qsq, NULL, th);

      p7_oprofile_Destroy(om);
      p7_pipeline_Reuse(pli);
    }
  esl_alphabet_Destroy(abc);
  return status;
}


/* As hmmpress.c's main() without -f: press <hmmfile> into its .h3m, .h3i, .h3f, .h3p. */
static int
press(char *hmmfile)
{
  ESL_ALPHABET *abc   = NULL;
  P7_HMMFILE   *hfp   = NULL;
  P7_HMM       *hmm   = NULL;
  P7_BG        *bg    = NULL;
  P7_PROFILE   *gm    = NULL;
  P7_OPROFILE  *om    = NULL;
  ESL_NEWSSI   *nssi  = NULL;
  FILE         *mfp, *ffp, *pfp;
  char         *mfile = NULL, *ffile = NULL, *pfile = NULL, *ssifile = NULL;
  uint16_t      fh    = 0;
  int           nmodel = 0;
  int           status;
  char          errbuf[eslERRBUFSIZE];

  status = p7_hmmfile_OpenNoDB(hmmfile, NULL, &hfp, errbuf);
  if (status != eslOK) p7_Fail("Failed to open HMM file %s: %s\n", hmmfile, errbuf);
  if (hfp->do_stdin || hfp->do_gzip) p7_Fail("HMM file %s must be a normal file, not gzipped or a stdin pipe", hmmfile);

  esl_sprintf(&ssifile, "%s.h3i", hmmfile);
  esl_sprintf(&mfile,   "%s.h3m", hmmfile);
  esl_sprintf(&ffile,   "%s.h3f", hmmfile);
  esl_sprintf(&pfile,   "%s.h3p", hmmfile);
  if (esl_newssi_Open(ssifile, FALSE, &nssi) != eslOK) p7_Fail("failed to create SSI index %s (already pressed?)", ssifile);
  if (esl_FileExists(mfile) || esl_FileExists(ffile) || esl_FileExists(pfile)) p7_Fail("%s is already pressed", hmmfile);
  if ((mfp = fopen(mfile, "wb")) == NULL) p7_Fail("Failed to open %s for writing", mfile);
  if ((ffp = fopen(ffile, "wb")) == NULL) p7_Fail("Failed to open %s for writing", ffile);
  if ((pfp = fopen(pfile, "wb")) == NULL) p7_Fail("Failed to open %s for writing", pfile);

  if (esl_newssi_AddFile(nssi, hfp->fname, 0, &fh) != eslOK) p7_Fail("Failed to add HMM file %s to new SSI index", hfp->fname);

  while ((status = p7_hmmfile_Read(hfp, &abc, &hmm)) == eslOK)
    {
      if (hmm->name == NULL) p7_Fail("Every HMM must have a name to be indexed. Failed to find name of HMM #%d\n", nmodel+1);
      if (nmodel == 0) {        /* first time initialization, now that alphabet known */
        bg = p7_bg_Create(abc);
        p7_bg_SetLength(bg, 400);
      }
      nmodel++;

      gm = p7_profile_Create(hmm->M, abc);
      p7_ProfileConfig(hmm, bg, gm, 400, p7_LOCAL);
      om = p7_oprofile_Create(gm->M, abc);
      p7_oprofile_Convert(gm, om);

      om->offs[p7_MOFFSET] = ftello(mfp);
      om->offs[p7_FOFFSET] = ftello(ffp);
      om->offs[p7_POFFSET] = ftello(pfp);

      if (esl_newssi_AddKey(nssi, hmm->name, fh, om->offs[p7_MOFFSET], 0, 0) != eslOK) p7_Fail("Failed to add key %s to SSI index", hmm->name);
      if (hmm->acc && esl_newssi_AddAlias(nssi, hmm->acc, hmm->name) != eslOK)       p7_Fail("Failed to add secondary key %s to SSI index", hmm->acc);

      p7_hmmfile_WriteBinary(mfp, -1, hmm);
      p7_oprofile_Write(ffp, pfp, om);

      p7_profile_Destroy(gm);
      p7_oprofile_Destroy(om);
      p7_hmm_Destroy(hmm);
    }
  if (status != eslEOF) p7_Fail("bad HMM file %s (status %d)", hmmfile, status);
  if (esl_newssi_Write(nssi) != eslOK) p7_Fail("SSI indexing failed: %s", nssi->errbuf);

  fclose(mfp); fclose(ffp); fclose(pfp);
  esl_newssi_Close(nssi);
  p7_bg_Destroy(bg);
  p7_hmmfile_Close(hfp);
  esl_alphabet_Destroy(abc);
  free(mfile); free(ffile); free(pfile); free(ssifile);
  return 0;
}


/* As hmmscan.c's serial_master() with ncpus = 0. */
int
main(int argc, char **argv)
{
  ESL_GETOPTS   *go        = NULL;
  char          *hmmfile   = NULL;
  char          *seqfile   = NULL;
  FILE          *ofp       = stdout;
  FILE          *tblfp     = NULL;
  FILE          *domtblfp  = NULL;
  FILE          *pfamtblfp = NULL;
  int            seqfmt    = eslSQFILE_UNKNOWN;
  ESL_SQFILE    *sqfp      = NULL;
  P7_HMMFILE    *hfp       = NULL;
  ESL_ALPHABET  *abc       = NULL;
  P7_OPROFILE   *om        = NULL;
  ESL_SQ        *qsq       = NULL;
  P7_BG         *bg        = NULL;
  ESL_STOPWATCH *w         = esl_stopwatch_Create();
  int            textw;
  int            nquery    = 0;
  int            status, hstatus, sstatus;
  char           errbuf[eslERRBUFSIZE];

  impl_Init();
  p7_FLogsumInit();

  if (argc == 3 && strcmp(argv[1], "--press") == 0) return press(argv[2]);

  argv[0] = "hmmscan";          /* banner and "# Option settings:" read as hmmscan's */
  go    = process_commandline(argc, argv, &hmmfile, &seqfile);
  textw = esl_opt_GetBoolean(go, "--notextw") ? 0 : esl_opt_GetInteger(go, "--textw");

  seqfmt = seq_format(go, "--qformat");

  /* Open the target profile database to get the sequence alphabet */
  status = p7_hmmfile_Open(hmmfile, p7_HMMDBENV, &hfp, errbuf);
  if      (status == eslENOTFOUND) p7_Fail("File existence/permissions problem in trying to open HMM file %s.\n%s\n", hmmfile, errbuf);
  else if (status == eslEFORMAT)   p7_Fail("File format problem, trying to open HMM file %s.\n%s\n",                  hmmfile, errbuf);
  else if (status != eslOK)        p7_Fail("Unexpected error %d in opening HMM file %s.\n%s\n",               status, hmmfile, errbuf);
  if (! hfp->is_pressed)           p7_Fail("Failed to open binary auxfiles for %s: use hmmpress first\n",             hfp->fname);

  hstatus = p7_oprofile_ReadMSV(hfp, &abc, &om);
  if      (hstatus == eslEFORMAT)   p7_Fail("bad format, binary auxfiles, %s:\n%s",     hmmfile, hfp->errbuf);
  else if (hstatus == eslEINCOMPAT) p7_Fail("HMM file %s contains different alphabets", hmmfile);
  else if (hstatus != eslOK)        p7_Fail("Unexpected error in reading HMMs from %s", hmmfile);
  p7_oprofile_Destroy(om);
  p7_hmmfile_Close(hfp);

  /* Open the query sequence database */
  status = esl_sqfile_OpenDigital(abc, seqfile, seqfmt, NULL, &sqfp);
  if      (status == eslENOTFOUND) p7_Fail("Failed to open sequence file %s for reading\n",      seqfile);
  else if (status == eslEFORMAT)   p7_Fail("Sequence file %s is empty or misformatted\n",        seqfile);
  else if (status == eslEINVAL)    p7_Fail("Can't autodetect format of a stdin or .gz seqfile");
  else if (status != eslOK)        p7_Fail("Unexpected error %d opening sequence file %s\n", status, seqfile);
  qsq = esl_sq_CreateDigital(abc);

  /* Open the results output files */
  if (esl_opt_IsOn(go, "-o"))           { if ((ofp       = fopen(esl_opt_GetString(go, "-o"),           "w")) == NULL) esl_fatal("Failed to open output file %s for writing\n",                 esl_opt_GetString(go, "-o")); }
  if (esl_opt_IsOn(go, "--tblout"))     { if ((tblfp     = fopen(esl_opt_GetString(go, "--tblout"),     "w")) == NULL) esl_fatal("Failed to open tabular per-seq output file %s for writing\n", esl_opt_GetString(go, "--tblout")); }
  if (esl_opt_IsOn(go, "--domtblout"))  { if ((domtblfp  = fopen(esl_opt_GetString(go, "--domtblout"),  "w")) == NULL) esl_fatal("Failed to open tabular per-dom output file %s for writing\n", esl_opt_GetString(go, "--domtblout")); }
  if (esl_opt_IsOn(go, "--pfamtblout")) { if ((pfamtblfp = fopen(esl_opt_GetString(go, "--pfamtblout"), "w")) == NULL) esl_fatal("Failed to open pfam-style tabular output file %s for writing\n", esl_opt_GetString(go, "--pfamtblout")); }

  output_header(ofp, go, hmmfile, seqfile);
  bg = p7_bg_Create(abc);      /* info[0].bg in hmmscan.c */

  /* Outside loop: over each query sequence in <seqfile>. */
  while ((sstatus = esl_sqio_Read(sqfp, qsq)) == eslOK)
    {
      P7_PIPELINE *pli = NULL;
      P7_TOPHITS  *th  = NULL;

      nquery++;
      esl_stopwatch_Start(w);

      /* Open the target profile database (again, for each query: read from its start) */
      status = p7_hmmfile_Open(hmmfile, p7_HMMDBENV, &hfp, NULL);
      if (status != eslOK) p7_Fail("Unexpected error %d in opening hmm file %s.\n", status, hmmfile);

      fprintf(ofp, "Query:       %s  [L=%ld]\n", qsq->name, (long) qsq->n);
      if (qsq->acc[0]  != 0) fprintf(ofp, "Accession:   %s\n", qsq->acc);
      if (qsq->desc[0] != 0) fprintf(ofp, "Description: %s\n", qsq->desc);

      /* Create processing pipeline and hit list */
      th  = p7_tophits_Create();
      pli = p7_pipeline_Create(go, 100, 100, FALSE, p7_SCAN_MODELS); /* M_hint = 100, L_hint = 100 are just dummies for now */
      pli->hfp = hfp;  /* for two-stage input, pipeline needs <hfp> */
      p7_pli_NewSeq(pli, qsq);

      hstatus = serial_loop(pli, bg, qsq, th, hfp);
      switch (hstatus) {
      case eslEFORMAT:   p7_Fail("bad file format in HMM file %s",           hmmfile); break;
      case eslEINCOMPAT: p7_Fail("HMM file %s contains different alphabets", hmmfile); break;
      case eslEOF:       break;
      default:           p7_Fail("Unexpected error in reading HMMs from %s", hmmfile);
      }

      /* Print results */
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
      fflush(ofp);

      p7_hmmfile_Close(hfp);
      p7_pipeline_Destroy(pli);
      p7_tophits_Destroy(th);
      esl_sq_Reuse(qsq);
    }
  if      (sstatus == eslEFORMAT) esl_fatal("Parse failed (sequence file %s):\n%s\n", sqfp->filename, esl_sqfile_GetErrorBuf(sqfp));
  else if (sstatus != eslEOF)     esl_fatal("Unexpected error %d reading sequence file %s", sstatus, sqfp->filename);

  /* Terminate outputs - any last words?  (hmmscan.c writes the pfam table's tail in
   * search mode) */
  if (tblfp)     p7_tophits_TabularTail(tblfp,     "hmmscan", p7_SCAN_MODELS, seqfile, hmmfile, go);
  if (domtblfp)  p7_tophits_TabularTail(domtblfp,  "hmmscan", p7_SCAN_MODELS, seqfile, hmmfile, go);
  if (pfamtblfp) p7_tophits_TabularTail(pfamtblfp, "hmmscan", p7_SEARCH_SEQS, seqfile, hmmfile, go);
  if (ofp)       fprintf(ofp, "[ok]\n");

  p7_bg_Destroy(bg);
  esl_sq_Destroy(qsq);
  esl_stopwatch_Destroy(w);
  esl_alphabet_Destroy(abc);
  esl_sqfile_Close(sqfp);
  if (ofp != stdout) fclose(ofp);
  if (tblfp)         fclose(tblfp);
  if (domtblfp)      fclose(domtblfp);
  if (pfamtblfp)     fclose(pfamtblfp);
  esl_getopts_Destroy(go);
  return eslOK;
}
