/* nacre_vxattr.h - the virtual extended attributes of a nacre mount: how the nacre CLI, a
 * script or an application asks nacre-mount for what lfs asks Lustre through ioctls.
 *
 * Every name starts with "nacre.". None is listed by listxattr or stored on the MDS; the
 * mount serves each through libnacre with the caller's credentials, so the MDS decides who
 * may do what. Values are text, without a trailing NUL (but nacre.hsm_import's); numbers are
 * decimal unless said otherwise, fields separated by one space, lines ended by '\n'.
 * A FID is written "[0x200000400:0x1:0x0]" (nacre_fid_format).
 */
#ifndef NACRE_VXATTR_H
#define NACRE_VXATTR_H

#define NACRE_VXATTR_PREFIX "nacre."

/* get, set, remove; a file or a directory.
 *   "stripe_count=C stripe_size=S stripe_offset=O pattern=raid0 gen=G[ osts=I,J,...]"
 * (osts only once the file has objects). A set may leave keys out: count 0 and size 0 mean
 * the defaults, offset -1 round-robin. On a directory it sets the default layout of new
 * files, on an empty file its layout; removing it on a directory clears the default. */
#define NACRE_VXATTR_LAYOUT "nacre.layout"

/* get; anything: its FID. */
#define NACRE_VXATTR_FID "nacre.fid"

/* get; the mount's root: the file system name. */
#define NACRE_VXATTR_FSNAME "nacre.fsname"

/* get; the mount's root: this mount's instance name as Lustre names a client's llite
 * device, "FSNAME-INSTANCE" (INSTANCE: 16 hex digits, nacre_fs_client_id), as
 * `lfs getname` prints it. */
#define NACRE_VXATTR_INSTANCE "nacre.instance"

/* get; the mount's root: the parameters this mount serves, one line "NAME MODE" each, NAME
 * the dotted lctl name with this mount's device names (llite.FSNAME-INSTANCE.x,
 * osc.FSNAME-OST0003-osc-INSTANCE.x), MODE rw or ro. */
#define NACRE_VXATTR_PARAMS "nacre.params"
/* get, set; the mount's root; the name is this prefix followed by a NAME of nacre.params:
 * its value as text ("16\n"); a set takes the text (a trailing newline is allowed) and
 * needs uid 0 (EACCES), answers EINVAL for a value that is not a number, ERANGE for one
 * out of the parameter's range, EPERM for a read-only one, ENODATA for an unknown NAME. */
#define NACRE_VXATTR_PARAM "nacre.param."

/* get; the mount's root: how to reach the file system as this mount does, for a program
 * that serves some files through libnacre itself (libnacre-preload), one "KEY=VALUE" line
 * each: spec, key_file (absolute; "" = none), client_name ("" = libnacre's default),
 * sec ("" = the server's minimum), timeout_ms, recovery_timeout_ms. The key file's
 * permissions decide who may use it. */
#define NACRE_VXATTR_CONNECT "nacre.connect"

/* set; a file, any value: the kernel drops the attributes and pages it caches of it (a
 * program that wrote it through libnacre, not this mount, asks before close). */
#define NACRE_VXATTR_INVALIDATE "nacre.invalidate"

/* get; the mount's root: one line per target of the cluster registry,
 *   "TYPE INDEX UP ADDR KB_TOTAL KB_FREE KB_AVAIL FILES FFREE"
 * TYPE is MDT or OST, UP 1 while its server is connected to the MDS else 0, ADDR host:port
 * or "-". */
#define NACRE_VXATTR_TARGETS "nacre.targets"

/* get; the mount's root; the name is this prefix followed by a FID: the path of that FID
 * relative to the file system root, starting with '/'. The caller needs search permission
 * on every directory of that path (EACCES otherwise), as a lookup of the path would. */
#define NACRE_VXATTR_FID2PATH "nacre.fid2path."

/* get; anything: its hard links in link order (the order they were made, a renamed link
 * last, as Lustre's link EA), each "[PARENT_FID]/NAME" followed by a NUL (a name may hold
 * '\n'), only those in directories the caller may search. ENOENT when there is none (the
 * root), EACCES when the caller may see none. At most NACRE_VXATTR_LIST_MAX bytes: the
 * links after those are left out. */
#define NACRE_VXATTR_PARENTS "nacre.parents"
#define NACRE_VXATTR_LIST_MAX 65536

/* get; the mount's root; the name is this prefix followed by a FID: the path of each hard
 * link of that FID, as nacre.fid2path writes it, each followed by a NUL, in link order; "/"
 * for the root. Only paths the caller could look up (EACCES when there is none). At most
 * NACRE_VXATTR_LIST_MAX bytes, as nacre.parents. */
#define NACRE_VXATTR_LINKPATHS "nacre.linkpaths."

/* get; the mount's root: the MDS's recovery window (nacre_recovery_status), one line
 *   "STATE START DURATION TIME_LEFT EXPECTED CONNECTED REPLAYED COMPLETED EVICTED
 *    REPLAYED_REQUESTS QUEUED LAST_TRANSNO LAST_COMMITTED"
 * STATE is a name below, START seconds since the epoch (0: no window since the MDS
 * started), DURATION and TIME_LEFT seconds, then the clients by state and the request
 * counts. Answered even while the MDS holds this mount's other requests for its recovery. */
#define NACRE_VXATTR_RECOVERY_STATUS "nacre.recovery_status"
#define NACRE_RECOVERY_COMPLETE_NAME "COMPLETE"
#define NACRE_RECOVERY_RECOVERING_NAME "RECOVERING"

/* get; a file: "0xSTATE ARCHIVE_ID", STATE the NACRE_HS_* bits as 8 hex digits.
 * set; a file: "SET CLEAR [ARCHIVE_ID]", the bits to set and to clear in hex (without 0x);
 * an archive id of 0 or none keeps the file's. */
#define NACRE_VXATTR_HSM_STATE "nacre.hsm_state"

/* get; a file: "" when no HSM action is queued or running for it, else
 *   "ACTION STATUS DONE TOTAL ERR"
 * ACTION and STATUS as named below, DONE and TOTAL bytes (TOTAL 0 while unknown), ERR the
 * final negative errno of a FAILED action, else 0. */
#define NACRE_VXATTR_HSM_ACTION "nacre.hsm_action"

/* set; a file: "VERB [ARCHIVE_ID]", VERB a request name below (archive id 0 or none: the
 * file's, or the default).
 * set; the mount's root: the same line, then one FID per line, for many files at once (at
 * most NACRE_VXATTR_HSM_REQUEST_MAX; more are ignored). The first failing file's errno is
 * returned: ask again per file to know which failed and why. */
#define NACRE_VXATTR_HSM_REQUEST "nacre.hsm_request"
#define NACRE_VXATTR_HSM_REQUEST_MAX 4000

/* get; the mount's root; the name is this prefix followed by a COOKIE (0 at first): the
 * actions of the coordinator queue after COOKIE, one per line,
 *   "COOKIE ACTION STATUS FID ARCHIVE_ID DONE TOTAL ERR PATH"
 * (PATH, the archive object, is "-" until known and runs to the end of the line), then a
 * last line "eof", or "more" when there are more: ask again after the last COOKIE. */
#define NACRE_VXATTR_HSM_LIST "nacre.hsm_list."

/* set; a directory, by root: creates in it a released stub of an archived object,
 *   "SIZE MODE UID GID SEC NSEC ARCHIVE_ID" NUL NAME NUL ARCHIVE_PATH NUL
 * MODE in octal, SEC and NSEC its mtime (NSEC below 1000000000), ARCHIVE_ID not 0. */
#define NACRE_VXATTR_HSM_IMPORT "nacre.hsm_import"

/* Names of the copytool actions (NACRE_HSMA_*) in nacre.hsm_action and nacre.hsm_list. */
#define NACRE_HSMA_ARCHIVE_NAME "ARCHIVE"
#define NACRE_HSMA_RESTORE_NAME "RESTORE"
#define NACRE_HSMA_REMOVE_NAME "REMOVE"
#define NACRE_HSMA_CANCEL_NAME "CANCEL"

/* Names of the action statuses (NACRE_HAS_*), in the same values. */
#define NACRE_HAS_WAITING_NAME "WAITING"
#define NACRE_HAS_STARTED_NAME "STARTED"
#define NACRE_HAS_FAILED_NAME "FAILED"
#define NACRE_HAS_CANCELED_NAME "CANCELED"
#define NACRE_HAS_SUCCEED_NAME "SUCCEED"

/* Verbs of the user requests (NACRE_HUA_*) that nacre.hsm_request takes. */
#define NACRE_HUA_ARCHIVE_NAME "archive"
#define NACRE_HUA_RESTORE_NAME "restore"
#define NACRE_HUA_RELEASE_NAME "release"
#define NACRE_HUA_REMOVE_NAME "remove"
#define NACRE_HUA_CANCEL_NAME "cancel"

#endif
