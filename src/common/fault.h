/* fault.h - named fault points, in the manner of Lustre's fail_loc: failures on purpose, so
 * that every recovery path can be exercised by a test.
 *
 * A point is compiled in always. Disarmed, NACRE_FAULT(point) costs one load and one
 * predictable branch; armed, it decides by the point's mode whether this pass fails:
 *   once        the next pass only, then the point disarms itself
 *   every:N     every Nth pass (every:1 = always)
 *   skip:N      every pass after the first N
 *   prob:P      each pass with probability P percent (0 < P <= 100)
 * and the code at the point does what the point's action says: crash the process (as kill -9
 * would), fail the operation with an error, drop or delay a message, close a connection.
 *
 * Arming: the environment (NACRE_FAULT, read by fault_init_env at start) or an admin request
 * (WIRE_OP_FAULT_SET, `nacre fault set`). A spec is
 *     POINT=MODE[,op=OPCODE][,ms=N][,err=ERRNO][,action=crash|error]
 * several joined by ';'. POINT "all" with MODE "off" disarms everything.
 * Thread-safe.
 */
#ifndef NACRE_FAULT_H
#define NACRE_FAULT_H

#include <stddef.h>
#include <stdint.h>

enum fault_point {
	FAULT_MDS_COMMIT_BEFORE,  /* mds: a group commit is about to commit (crash | error) */
	FAULT_MDS_COMMIT_AFTER,   /* mds: a mutation committed, its reply not yet sent */
	FAULT_OSS_WRITE_BEFORE,   /* oss: before the pwrite of an OST_WRITE (crash | error) */
	FAULT_OSS_WRITE_AFTER,    /* oss: after the pwrite, before the reply (crash | error) */
	FAULT_RPC_DROP_REQUEST,   /* server: a request is dropped unread, never executed */
	FAULT_RPC_DROP_REPLY,     /* server: a request is executed and its reply dropped */
	FAULT_RPC_DELAY_REPLY,    /* server: the reply waits ms milliseconds (not a deferred one) */
	FAULT_RPC_CLOSE_CONN,     /* server: the connection closes instead of the reply */
	FAULT_MDS_DB_FULL,        /* mds: a commit fails as if the MDT were full (-ENOSPC) */
	FAULT_POINT_COUNT_,
};

enum fault_action {
	FAULT_ACT_DEFAULT, /* the point's own behaviour (drop, delay, close; crash for commit) */
	FAULT_ACT_CRASH,   /* _exit(FAULT_CRASH_STATUS) at once, like kill -9 */
	FAULT_ACT_ERROR,   /* the operation fails with -err */
};

#define FAULT_CRASH_STATUS 86

/* What an armed point that fired asks of the code at it. */
struct fault_hit {
	enum fault_action action;
	int err;      /* negative errno for FAULT_ACT_ERROR */
	uint32_t ms;  /* FAULT_RPC_DELAY_REPLY */
};

extern int fault_any_armed; /* nonzero while any point is armed; read without a lock */

/* 1 when point fires on this pass (for a request of opcode, 0 when none applies), with
 * *hit filled (may be NULL). Use through NACRE_FAULT / NACRE_FAULT_OP. */
int fault_check(enum fault_point point, uint16_t opcode, struct fault_hit *hit);

#define NACRE_FAULT_OP(point, opcode, hit)                                                  \
	(__builtin_expect(__atomic_load_n(&fault_any_armed, __ATOMIC_RELAXED), 0) &&        \
	 fault_check((point), (opcode), (hit)))
#define NACRE_FAULT(point, hit) NACRE_FAULT_OP(point, 0, hit)

/* Turns an opcode name ("MDS_CREATE") into its number; -1 if unknown. Set by the protocol
 * layer so specs may name opcodes. */
typedef int (*fault_op_resolver)(const char *name);

/* Arms or disarms points from spec (syntax above). Returns 0, or -EINVAL with a sentence
 * naming the bad part in err. Points not named keep their state. */
int fault_set(const char *spec, fault_op_resolver resolve, char *err, size_t err_len);
/* Arms from the NACRE_FAULT environment variable if set. Returns as fault_set. */
int fault_init_env(fault_op_resolver resolve, char *err, size_t err_len);
/* Writes the armed points as a spec (";"-joined, each with its settings, so that fault_set
 * of it arms the same points) into buf; "" when none. A point that does not fit is left
 * out. Returns buf. */
char *fault_describe(char *buf, size_t len);
/* The point's name ("mds.commit_after"); "?" when out of range. */
const char *fault_point_name(enum fault_point point);
/* Carries out FAULT_ACT_CRASH: logs the point's name and exits the process at once. */
void fault_crash(enum fault_point point) __attribute__((noreturn));

#endif
