/* fid.h - FIDs, the one place: comparison, hashing, Lustre's text form ("[0x200000400:0x1:0x0]")
 * and the 16-byte big-endian key that sorts as (seq, oid, ver), for every program (servers,
 * libnacre, the mount, the copytool). libnacre's nacre_fid_* calls are these. Thread-safe. */
#ifndef NACRE_FID_H
#define NACRE_FID_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

#define FID_KEY_LEN 16

int fid_eq(const struct nacre_fid *a, const struct nacre_fid *b);
int fid_is_zero(const struct nacre_fid *f);
/* A well-mixed hash of all three fields, for hash tables. */
uint64_t fid_hash(const struct nacre_fid *f);
/* Writes "[0x<seq>:0x<oid>:0x<ver>]" into buf (NACRE_FID_STR_MAX bytes hold any). Returns
 * buf; NULL fid writes "". */
char *fid_format(const struct nacre_fid *fid, char *buf, size_t len);
/* Parses the text form, brackets and "0x" optional, leading zeros allowed. 0 or -EINVAL. */
int fid_parse(const char *s, struct nacre_fid *fid);
/* The key of fid in the MDS's tables and the OSS's object names: big-endian seq, oid, ver. */
void fid_to_key(const struct nacre_fid *fid, uint8_t out[FID_KEY_LEN]);
void fid_from_key(const uint8_t key[FID_KEY_LEN], struct nacre_fid *fid);

#endif
