/* jobid.h - the job id a client sends with its metadata requests (Lustre's jobid). */
#ifndef NACRE_COMMON_JOBID_H
#define NACRE_COMMON_JOBID_H

#include <sys/types.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

/* The job id Lustre's jobid_name "%e.%u" makes: process pid's command name (its bytes
 * outside printable ASCII as '_') and uid. "" if the process is gone. */
void jobid_procname_uid(pid_t pid, uint32_t uid, char out[NACRE_JOBID_MAX + 1]);

#endif
