/* jobid.h - the job id a client sends with its metadata requests (Lustre's jobid). */
#ifndef NACRE_COMMON_JOBID_H
#define NACRE_COMMON_JOBID_H

#include <sys/types.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

/* The job id Lustre's jobid_name "%e.%u" makes: process pid's command name (its bytes
 * outside printable ASCII as '_') and uid. "" if the process is gone. */
void jobid_procname_uid(pid_t pid, uint32_t uid, char out[NACRE_JOBID_MAX + 1]);
/* Lustre's jobid_var: the value of the environment variable var (SLURM_JOB_ID, PBS_JOBID)
 * process pid started with (its bytes outside printable ASCII, and spaces, as '_'; cut to
 * NACRE_JOBID_MAX), or when it has none, jobid_procname_uid's. */
void jobid_from_env(pid_t pid, uint32_t uid, const char *var, char out[NACRE_JOBID_MAX + 1]);
/* 1 if name can be an environment variable's name for jobid_var ([A-Za-z_][A-Za-z0-9_]*,
 * at most 63 bytes). */
int jobid_var_valid(const char *name);

#endif
