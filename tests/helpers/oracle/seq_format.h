/* seq_format(): the sequence file format --qformat or --tformat asserts, decoded as HMMER's
 * programs decode it (esl_sqio_EncodeFormat; an unknown name fails as theirs do), else
 * autodetection.  Included by the oracles whose programs take those options (all four). */
#ifndef ORACLE_SEQ_FORMAT_H
#define ORACLE_SEQ_FORMAT_H

static int
seq_format(const ESL_GETOPTS *go, const char *option)
{
  int fmt;
  if (! esl_opt_IsOn(go, option)) return eslSQFILE_UNKNOWN;
  fmt = esl_sqio_EncodeFormat(esl_opt_GetString(go, option));
  if (fmt == eslSQFILE_UNKNOWN) p7_Fail("%s is not a recognized input sequence file format\n", esl_opt_GetString(go, option));
  return fmt;
}

#endif
