/* fwdback_oracle: HMMER's own Forward and Backward parsers for every (model, sequence) pair.
 *
 * Test oracle only, built as filters_oracle.c is (tests/helpers/oracle/build.py) against the
 * libhmmer of pyhmmer's wheel: each model configured as p7_Pipeline() configures it (local
 * multihit, length reconfigured per target), then p7_ForwardParser and p7_BackwardParser as
 * p7_Pipeline calls them before domain definition, p7_DomainDecoding on their rows, and
 * p7_domaindef_ByPosteriorHeuristics for its counts.
 *
 * Usage:   fwdback_oracle <hmmfile> <protein fasta>
 *          fwdback_oracle <hmmfile> <protein fasta> <segments> uni|multi
 * Output:  one tab-separated line per pair:
 *          model  seqname  L  fwd  bck  fwd_rows  bck_rows  own  post  nexpected  nregions  nclustered
 *          fwd, bck: the two scores in nats (C99 %a hex floats, nan where HMMER reports a
 *          range error); *_rows: the special states' rows 0..L (E N J B C SCALE each, as
 *          P7_OMX's xmx holds them), every float as 8 hex digits of its bits, big-endian;
 *          own: the Backward's has_own_scales; post: mocc, btot, etot for i = 0..L, the same
 *          way; nexpected (%a), nregions, nclustered: P7_DOMAINDEF's after domain definition.
 *          With a segments file (one line "first length" per sequence, in the FASTA's order):
 *          p7_Forward and p7_Backward (whole matrices) over each sequence's segment, the model
 *          configured to the whole sequence's length in unihit or multihit mode, as
 *          p7_domaindef_ByPosteriorHeuristics runs them on an envelope or a region; per pair:
 *          model  seqname  Lr  fwd  bck  fwd_rows  bck_rows  fwd_matrix  bck_matrix  pp_rows  pp_matrix  range
 *          oa_rows  oa_matrix  oasc  trace  null2  n2sc  domcorrection
 *          (the matrices: P7_OMX's dpf rows, 0..Lr for the Forward, 1..Lr for the Backward);
 *          then p7_Decoding's posteriors in place of the Backward (rows and matrix 0..Lr) and
 *          whether it returned eslERANGE; then p7_OptimalAccuracy's rows, matrix (0..Lr, in
 *          place of the Forward) and score; then p7_OATrace's trace, "st,k,i,pp;" a step;
 *          then p7_Null2_ByExpectation's odds (Kp floats), logf of them for the segment's
 *          residues, and their float sum (%a), as rescore_isolated_domain computes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "hmmer.h"
#include "impl_sse.h"
#include "esl_sqio.h"

static void die(const char *msg, const char *what) { fprintf(stderr, "fwdback_oracle: %s %s\n", msg, what); exit(2); }

static void print_floats_raw(const float *v, int n)
{
  for (int j = 0; j < n; j++) {
    unsigned int bits;
    memcpy(&bits, &v[j], 4);
    printf("%08x", bits);
  }
}

static void print_floats(const float *v, int n)
{
  putchar('\t');
  print_floats_raw(v, n);
}

int main(int argc, char **argv)
{
  char          errbuf[eslERRBUFSIZE];
  ESL_ALPHABET *abc = NULL;
  P7_HMMFILE   *hfp = NULL;
  P7_HMM       *hmm = NULL;

  if (argc != 3 && argc != 5) die("usage:", "fwdback_oracle <hmmfile> <fasta> [<segments> uni|multi]");
  int  *seg = NULL, nseg = 0, unihit = 0;
  if (argc == 5) {
    FILE *sf = fopen(argv[3], "r");
    int a, b;
    if (sf == NULL) die("cannot open", argv[3]);
    while (fscanf(sf, "%d %d", &a, &b) == 2) {
      seg = realloc(seg, sizeof(int) * 2 * (nseg + 1));
      seg[2*nseg] = a; seg[2*nseg+1] = b; nseg++;
    }
    fclose(sf);
    unihit = strcmp(argv[4], "uni") == 0;
  }
  if (p7_hmmfile_Open(argv[1], NULL, &hfp, errbuf) != eslOK) die("cannot open HMM file", argv[1]);

  while (p7_hmmfile_Read(hfp, &abc, &hmm) == eslOK)
    {
      P7_BG       *bg  = p7_bg_Create(abc);
      P7_PROFILE  *gm  = p7_profile_Create(hmm->M, abc);
      P7_OPROFILE *om  = p7_oprofile_Create(hmm->M, abc);
      P7_OMX      *fwd = p7_omx_Create(hmm->M, 0, 0);
      P7_OMX      *bck = p7_omx_Create(hmm->M, 0, 0);
      P7_OMX      *wf  = p7_omx_Create(hmm->M, 0, 0);     /* domain definition's workspace */
      P7_OMX      *wb  = p7_omx_Create(hmm->M, 0, 0);
      ESL_RANDOMNESS *rng = esl_randomness_CreateFast(42);
      P7_DOMAINDEF *ddef = p7_domaindef_Create(rng);
      ESL_SQFILE  *sqfp = NULL;
      ESL_SQ      *sq  = esl_sq_CreateDigital(abc);
      int          status;

      p7_ProfileConfig(hmm, bg, gm, 100, p7_LOCAL);   /* as p7_pli_NewModel: local multihit */
      p7_oprofile_Convert(gm, om);

      if (esl_sqfile_OpenDigital(abc, argv[2], eslSQFILE_FASTA, NULL, &sqfp) != eslOK)
        die("cannot open FASTA", argv[2]);
      int nsq = 0;
      while ((status = esl_sqio_Read(sqfp, sq)) == eslOK)
        {
          float fsc, bsc;
          if (seg) {                     /* a segment, whole matrices */
            int first, Lr, Q = p7O_NQF(om->M);
            if (nsq >= nseg) die("fewer segments than sequences in", argv[3]);
            first = seg[2*nsq]; Lr = seg[2*nsq+1]; nsq++;
            p7_omx_GrowTo(wf, om->M, Lr, Lr);
            p7_omx_GrowTo(wb, om->M, Lr, Lr);
            if (unihit) p7_oprofile_ReconfigUnihit(om, sq->n); else p7_oprofile_ReconfigMultihit(om, sq->n);
            if (p7_Forward(sq->dsq + first - 1, Lr, om, wf, &fsc) != eslOK) fsc = NAN;
            if (p7_Backward(sq->dsq + first - 1, Lr, om, wf, wb, &bsc) != eslOK) bsc = NAN;
            printf("%s\t%s\t%d\t%a\t%a", hmm->name, sq->name, Lr, fsc, bsc);
            print_floats(wf->xmx, (Lr + 1) * p7X_NXCELLS);
            print_floats(wb->xmx, (Lr + 1) * p7X_NXCELLS);
            putchar('\t');
            for (int i = 0; i <= Lr; i++) print_floats_raw((float *) wf->dpf[i], Q * p7X_NSCELLS * 4);
            putchar('\t');
            for (int i = 1; i <= Lr; i++) print_floats_raw((float *) wb->dpf[i], Q * p7X_NSCELLS * 4);
            /* the posteriors, in place of the Backward as rescore_isolated_domain decodes */
            int range = p7_Decoding(om, wf, wb, wb) == eslERANGE;
            print_floats(wb->xmx, (Lr + 1) * p7X_NXCELLS);
            putchar('\t');
            for (int i = 0; i <= Lr; i++) print_floats_raw((float *) wb->dpf[i], Q * p7X_NSCELLS * 4);
            printf("\t%d", range);
            /* the optimal accuracy matrix, in place of the Forward as rescore_isolated_domain does */
            float oasc;
            p7_OptimalAccuracy(om, wb, wf, &oasc);
            print_floats(wf->xmx, (Lr + 1) * p7X_NXCELLS);
            putchar('\t');
            for (int i = 0; i <= Lr; i++) print_floats_raw((float *) wf->dpf[i], Q * p7X_NSCELLS * 4);
            printf("\t%a\t", oasc);
            /* the optimal accuracy trace: state, node, residue, posterior bits for each step */
            P7_TRACE *tr = p7_trace_CreateWithPP();
            p7_OATrace(om, wb, wf, tr);
            for (int z = 0; z < tr->N; z++) {
              unsigned int bits;
              memcpy(&bits, &tr->pp[z], 4);
              printf("%d,%d,%d,%08x;", tr->st[z], tr->k[z], tr->i[z], bits);
            }
            /* null2 as rescore_isolated_domain takes it after the trace (row 0 of the
               posteriors its workspace), each residue's logf of it, and their sum */
            float null2[64], n2sc, domcorrection = 0.0f;
            p7_Null2_ByExpectation(om, wb, null2);
            print_floats(null2, abc->Kp);
            putchar('\t');
            for (int i = first; i < first + Lr; i++) {
              n2sc = logf(null2[sq->dsq[i]]);
              domcorrection += n2sc;
              print_floats_raw(&n2sc, 1);
            }
            printf("\t%a\n", domcorrection);
            p7_trace_Destroy(tr);
            p7_oprofile_ReconfigMultihit(om, sq->n);
            esl_sq_Reuse(sq);
            continue;
          }
          p7_omx_GrowTo(fwd, om->M, 0, sq->n);
          p7_omx_GrowTo(bck, om->M, 0, sq->n);
          p7_oprofile_ReconfigLength(om, sq->n);        /* as p7_pli_NewSeq */
          if (p7_ForwardParser(sq->dsq, sq->n, om, fwd, &fsc) != eslOK) fsc = NAN;
          if (p7_BackwardParser(sq->dsq, sq->n, om, fwd, bck, &bsc) != eslOK) bsc = NAN;
          printf("%s\t%s\t%ld\t%a\t%a", hmm->name, sq->name, (long) sq->n, fsc, bsc);
          print_floats(fwd->xmx, (sq->n + 1) * p7X_NXCELLS);
          print_floats(bck->xmx, (sq->n + 1) * p7X_NXCELLS);
          printf("\t%d", bck->has_own_scales);
          p7_domaindef_GrowTo(ddef, sq->n);
          p7_DomainDecoding(om, fwd, bck, ddef);
          {
            float *post = malloc(sizeof(float) * 3 * (sq->n + 1));
            for (int i = 0; i <= sq->n; i++) {
              post[3*i] = ddef->mocc[i]; post[3*i+1] = ddef->btot[i]; post[3*i+2] = ddef->etot[i];
            }
            print_floats(post, 3 * (sq->n + 1));
            free(post);
          }
          p7_domaindef_Reuse(ddef);
          p7_domaindef_ByPosteriorHeuristics(sq, NULL, om, fwd, bck, wf, wb, ddef, bg, FALSE, NULL, NULL, NULL);
          printf("\t%a\t%d\t%d\n", ddef->nexpected, ddef->nregions, ddef->nclustered);
          p7_domaindef_Reuse(ddef);
          esl_sq_Reuse(sq);
        }
      if (status != eslEOF) die("bad FASTA", argv[2]);
      esl_sqfile_Close(sqfp);
      esl_sq_Destroy(sq);
      p7_omx_Destroy(fwd);
      p7_omx_Destroy(bck);
      p7_omx_Destroy(wf);
      p7_omx_Destroy(wb);
      p7_domaindef_Destroy(ddef);
      esl_randomness_Destroy(rng);
      p7_oprofile_Destroy(om);
      p7_profile_Destroy(gm);
      p7_bg_Destroy(bg);
      p7_hmm_Destroy(hmm);
    }
  p7_hmmfile_Close(hfp);
  esl_alphabet_Destroy(abc);
  free(seg);
  return 0;
}
