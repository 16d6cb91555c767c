/* vxattr.h - the values of the mount's virtual xattrs (include/nacre/nacre_vxattr.h names
 * them and gives each grammar): one formatter and one parser per value, used by nacre-mount,
 * which serves them, and by the nacre CLI and the copytool, which read and write them, so
 * both sides speak one grammar. (nacre.layout's is layout_format/layout_parse.)
 *
 * Parsers take untrusted text (a setxattr value from any user, or what a mount answered):
 * they never read past it and return -EINVAL for anything malformed. FIDs stay text here
 * (nacre_fid_parse and nacre_fid_format belong to libnacre). Formatters follow snprintf's
 * rules: they return the length the value needs. All are pure and thread-safe.
 */
#ifndef NACRE_VXATTR_CODEC_H
#define NACRE_VXATTR_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

/* ---- HSM names (static strings) ---- */

/* NACRE_HSMA_* as "ARCHIVE"...; any other value is "CANCEL". */
const char *vxattr_hsm_action_name(uint32_t action);
/* NACRE_HAS_* as "WAITING"...; any other value is "UNKNOWN". */
const char *vxattr_hsm_status_name(uint32_t status);
/* NACRE_HUA_* as "archive"...; any other value is "cancel". */
const char *vxattr_hsm_request_name(uint32_t action);

/* ---- nacre.hsm_state ---- */

/* get: "0xSTATE ARCHIVE_ID". */
int vxattr_hsm_state_format(char *buf, size_t len, uint32_t state, uint32_t archive_id);
/* s NUL-terminated. 0 or -EINVAL. */
int vxattr_hsm_state_parse(const char *s, uint32_t *state, uint32_t *archive_id);
/* set: "SET CLEAR ARCHIVE_ID". */
int vxattr_hsm_flags_format(char *buf, size_t len, uint32_t set, uint32_t clear,
			    uint32_t archive_id);
/* s NUL-terminated; a missing archive id is 0. 0 or -EINVAL. */
int vxattr_hsm_flags_parse(const char *s, uint32_t *set, uint32_t *clear,
			   uint32_t *archive_id);

/* ---- nacre.hsm_action ---- */

/* "ACTION STATUS DONE TOTAL ERR" of a (action, status, bytes_done, bytes_total, err). */
int vxattr_hsm_action_format(char *buf, size_t len, const struct nacre_hsm_action *a);
/* s NUL-terminated: fills those fields of a (DONE, TOTAL, ERR may be missing: 0), zeroes the
 * others. "" (no action) is -EINVAL like anything malformed. */
int vxattr_hsm_action_parse(const char *s, struct nacre_hsm_action *a);

/* ---- nacre.hsm_request ---- */

/* "VERB ARCHIVE_ID", and a '\n' after it when batch is set: the caller appends one FID per
 * line. */
int vxattr_hsm_request_format(char *buf, size_t len, uint32_t action, uint32_t archive_id,
			      int batch);
/* v NUL-terminated, and cut in place after the first line. *action is a NACRE_HUA_*; *fids
 * points after the first line's '\n' (NULL when there is none) for
 * vxattr_hsm_request_next_fid. 0 or -EINVAL (unknown verb, archive id out of range). */
int vxattr_hsm_request_parse(char *v, uint32_t *action, uint32_t *archive_id, char **fids);
/* The next non-empty line at *p, NUL-terminated in place, *p moved past it; NULL at the
 * end. The caller parses it as a FID. */
char *vxattr_hsm_request_next_fid(char **p);

/* ---- nacre.hsm_list.COOKIE ---- */

/* One action's line (with its '\n'); fid is a's FID as text. */
int vxattr_hsm_list_format(char *buf, size_t len, const struct nacre_hsm_action *a,
			   const char *fid);
/* The last line: "eof\n", or "more\n" when eof is 0. */
int vxattr_hsm_list_end(char *buf, size_t len, int eof);
/* line NUL-terminated, without its '\n'. 1: an action, into a (path as sent: "-" when not
 * known; fid left zero) and fid (its text); 0: the last line, *more set to 1 for "more" and
 * 0 for "eof"; -EINVAL: neither. */
int vxattr_hsm_list_parse(const char *line, struct nacre_hsm_action *a,
			  char fid[NACRE_FID_STR_MAX], int *more);

/* ---- nacre.hsm_import ---- */

struct vxattr_hsm_import {
	uint64_t size;
	uint32_t mode; /* permission bits */
	uint32_t uid;
	uint32_t gid;
	struct nacre_time mtime;
	uint32_t archive_id;
	const char *name; /* the stub's name in the directory */
	const char *path; /* the archive object */
};

/* The value, its final NUL included, into buf. Returns its length, or -ENAMETOOLONG when it
 * does not fit len. */
int vxattr_hsm_import_format(char *buf, size_t len, const struct vxattr_hsm_import *im);
/* v is size bytes (no NUL needed after them); im's name and path point into v. 0 or
 * -EINVAL. */
int vxattr_hsm_import_parse(const char *v, size_t size, struct vxattr_hsm_import *im);

/* ---- nacre.targets ---- */

/* One target's line (with its '\n'). */
int vxattr_target_format(char *buf, size_t len, const struct nacre_target *t);
/* line NUL-terminated, without its '\n', into t (ADDR "-" is ""). 0 or -EINVAL. */
int vxattr_target_parse(const char *line, struct nacre_target *t);

/* ---- nacre.recovery_status ---- */

/* The value (with its '\n'). */
int vxattr_recovery_format(char *buf, size_t len, const struct nacre_recovery_status *r);
/* s NUL-terminated, the '\n' optional. 0 or -EINVAL. */
int vxattr_recovery_parse(const char *s, struct nacre_recovery_status *r);

#endif
