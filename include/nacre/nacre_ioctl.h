/* nacre_ioctl.h - the ioctls of a nacre mount, for what a getxattr name cannot carry.
 *
 * NACRE_IOC_FIND, on an open directory: one page of `nacre find`'s scan of the tree under
 * it, evaluated by the MDS with the caller's credentials. In: a FIND request body of the
 * wire protocol (find_req: its credentials and FID are ignored and replaced by the caller's
 * and the directory's) after its length as a little-endian u32, in NACRE_IOC_FIND_SIZE bytes
 * (the rest is padding). Out: the reply body
 * (find_rep and its entries), at most NACRE_IOC_FIND_SIZE bytes; the page is made to fit.
 * The result of the ioctl is the reply's length, or -1 with errno. libnacre speaks it:
 * nacre_find_ioctl() asks with a typed request and decodes the page, and the mount answers
 * with nacre_find_ioctl_serve() (nacre.h).
 */
#ifndef NACRE_IOCTL_H
#define NACRE_IOCTL_H

#include <linux/ioctl.h>

#define NACRE_IOC_FIND_SIZE 16383u /* the most a restricted ioctl may carry each way */
#define NACRE_IOC_FIND _IOC(_IOC_READ | _IOC_WRITE, 'N', 0x46, NACRE_IOC_FIND_SIZE)
/* NACRE_IOC_QUOTA, on any open file or directory: one QUOTA request (docs/quota.md) with
 * the caller's credentials, framed as NACRE_IOC_FIND's. Its payloads are libnacre's:
 * nacre_quota_ioctl() (nacre.h) makes the request and reads the reply, and the mount
 * answers with nacre_quota_ioctl_serve(). */
#define NACRE_IOC_QUOTA _IOC(_IOC_READ | _IOC_WRITE, 'N', 0x51, NACRE_IOC_FIND_SIZE)

#endif
