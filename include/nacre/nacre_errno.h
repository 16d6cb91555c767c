/* nacre_errno.h - nacre's own error codes, in a range that cannot collide with errno.
 *
 * Every function returns 0 or a negative error: -errno (Linux values) or -NACRE_E*.
 * nacre_strerror() describes both.
 */
#ifndef NACRE_ERRNO_H
#define NACRE_ERRNO_H

enum {
	NACRE_EBASE = 4000,
	NACRE_EPROTO_VERSION = 4001, /* peer speaks no protocol version we speak */
	NACRE_EAUTH = 4002,          /* cluster key rejected, or peer proved no key */
	NACRE_EFSNAME = 4003,        /* server serves another file system */
	NACRE_ESTALE_LAYOUT = 4004,  /* layout generation changed under the caller */
	NACRE_EBADMAGIC = 4005,      /* not a nacre frame, superblock or record */
	NACRE_EFORMAT = 4006,        /* on-disk format version we do not know */
	NACRE_ENOTARGET = 4007,      /* no such target registered */
	NACRE_ETIMEDOUT_SRV = 4008,  /* server did not answer within the timeout */
	NACRE_ERESTORING = 4009,     /* HSM: the file is being restored; retry the call later */
	NACRE_ESEC = 4010,           /* wire security flavour below the server's minimum, or
				      * one the peer does not support */
	NACRE_EGROUPS = 4011,        /* a cred's group-list token the MDS does not know (it
				      * restarted, or dropped it): register the list, retry */
	NACRE_EFIDGRANT = 4012,      /* a create named a FID outside the sequences the MDS
				      * granted this client: let the MDS choose */
	NACRE_ELAST = 4013,
};

/* Returns a static string for a negative (or positive) errno or NACRE_E* code.
 * Thread-safe. Never NULL. */
const char *nacre_strerror(int err);
/* The errno an application should see for err (negative or positive; 0 is a failure with
 * no code): nacre's own codes and server timeouts are I/O errors, as on a local disk. */
int nacre_errno_for_app(int err);

#endif
