/* filters_oracle: HMMER's own filter scores for every (model, sequence) pair.
 *
 * Test oracle only: it is linked against the libhmmer/libeasel shared libraries
 * that ship inside the pyhmmer wheel (HMMER 3.4, SSE build) and calls HMMER's
 * own p7_MSVFilter, p7_bg_NullOne, p7_bg_FilterScore, p7_ViterbiFilter and
 * p7_ForwardParser,
 * configured exactly as p7_Pipeline() configures them (local multihit profile,
 * length reconfigured per target). gpu-search's filters are tested against it.
 *
 * Usage:   filters_oracle <hmmfile> <protein fasta>
 * Output:  one tab-separated line per pair:
 *          model  seqname  L  msv  nullsc  filtersc  vit  fwd  (scores in nats, C99 %a hex floats;
 *          fwd is p7_ForwardParser's score, nan where HMMER reports a range error)
 *
 * Build (tests/helpers/oracle/build.py does this):
 *   cc -O1 -I$LIBS/include/libhmmer -I$LIBS/include/libeasel filters_oracle.c \
 *      -L$LIBS -llibhmmer -llibeasel -Wl,-rpath,$LIBS -lm -lpthread -o filters_oracle
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include "hmmer.h"
#include "esl_sqio.h"

static void die(const char *msg, const char *what) { fprintf(stderr, "filters_oracle: %s %s\n", msg, what); exit(2); }

int main(int argc, char **argv)
{
  char          errbuf[eslERRBUFSIZE];
  ESL_ALPHABET *abc = NULL;
  P7_HMMFILE   *hfp = NULL;
  P7_HMM       *hmm = NULL;

  if (argc != 3) die("usage:", "filters_oracle <hmmfile> <fasta>");
  if (p7_hmmfile_Open(argv[1], NULL, &hfp, errbuf) != eslOK) die("cannot open HMM file", argv[1]);

  while (p7_hmmfile_Read(hfp, &abc, &hmm) == eslOK)
    {
      P7_BG       *bg  = p7_bg_Create(abc);
      P7_PROFILE  *gm  = p7_profile_Create(hmm->M, abc);
      P7_OPROFILE *om  = p7_oprofile_Create(hmm->M, abc);
      P7_OMX      *oxf = p7_omx_Create(hmm->M, 0, 0);
      P7_OMX      *fwd = p7_omx_Create(hmm->M, 0, 0);
      ESL_SQFILE  *sqfp = NULL;
      ESL_SQ      *sq  = esl_sq_CreateDigital(abc);
      int          status;

      p7_ProfileConfig(hmm, bg, gm, 100, p7_LOCAL);   /* as p7_pli_NewModel: local multihit */
      p7_oprofile_Convert(gm, om);
      p7_bg_SetFilter(bg, om->M, om->compo);

      if (esl_sqfile_OpenDigital(abc, argv[2], eslSQFILE_FASTA, NULL, &sqfp) != eslOK) die("cannot open FASTA", argv[2]);
      while ((status = esl_sqio_Read(sqfp, sq)) == eslOK)
        {
          float usc, nullsc, filtersc, vfsc, fwdsc;
          p7_omx_GrowTo(oxf, om->M, 0, sq->n);
          p7_omx_GrowTo(fwd, om->M, 0, sq->n);
          p7_oprofile_ReconfigLength(om, sq->n);        /* as p7_pli_NewSeq */
          p7_bg_SetLength(bg, sq->n);
          p7_bg_NullOne(bg, sq->dsq, sq->n, &nullsc);
          p7_MSVFilter(sq->dsq, sq->n, om, oxf, &usc);
          p7_bg_FilterScore(bg, sq->dsq, sq->n, &filtersc);
          p7_ViterbiFilter(sq->dsq, sq->n, om, oxf, &vfsc);
          if (p7_ForwardParser(sq->dsq, sq->n, om, fwd, &fwdsc) != eslOK) fwdsc = NAN;
          printf("%s\t%s\t%ld\t%a\t%a\t%a\t%a\t%a\n", hmm->name, sq->name, (long) sq->n, usc, nullsc, filtersc, vfsc, fwdsc);
          esl_sq_Reuse(sq);
        }
      if (status != eslEOF) die("bad FASTA", argv[2]);
      esl_sqfile_Close(sqfp);
      esl_sq_Destroy(sq);
      p7_omx_Destroy(oxf);
      p7_omx_Destroy(fwd);
      p7_oprofile_Destroy(om);
      p7_profile_Destroy(gm);
      p7_bg_Destroy(bg);
      p7_hmm_Destroy(hmm);
    }
  p7_hmmfile_Close(hfp);
  esl_alphabet_Destroy(abc);
  return 0;
}
