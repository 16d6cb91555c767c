/* fault_args.h - the words of `nacre fault set|list|clear` after the options (fault.c):
 * which server, and the fault spec to send it. Pure functions, for the unit tests.
 */
#ifndef NACRE_CLI_FAULT_ARGS_H
#define NACRE_CLI_FAULT_ARGS_H

#include <stddef.h>

#include "nacre/nacre_types.h"

#define CLI_FAULT_SPEC_MAX 1024 /* what FAULT_SET carries */

struct cli_fault_args {
	char addr[NACRE_ADDR_LIST_MAX]; /* SERVER's address; "" when none was given */
	char fsname[NACRE_FSNAME_MAX + 1]; /* from SERVER as host:port:/FSNAME, else "" */
	char spec[CLI_FAULT_SPEC_MAX + 1]; /* "" for list: only read */
};

/* verb is "set", "list" or "clear", words[0..n) what follows the options:
 *   set    [SERVER] SPEC...   each SPEC a POINT=MODE[,...] item (or several joined by
 *                             ';'), or two words POINT MODE[,...]; they are joined by ';'
 *   list   [SERVER]           spec ""
 *   clear  [SERVER]           spec "all=off"
 * SERVER is host:port (failover addresses joined by ',') or host:port:/FSNAME: a word with
 * ':' and no '=' (a fault point name has no ':'). Returns 0, or -EINVAL with a sentence
 * naming the bad word in err. */
int cli_fault_args_parse(const char *verb, int n, char *const *words,
			 struct cli_fault_args *out, char *err, size_t err_len);

#endif
