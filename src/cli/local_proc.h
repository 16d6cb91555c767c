/* local_proc.h - processes and paths on this host, for `nacre up`/`nacre down` and their
 * runner (bringup_local.c): finding a program, starting it detached with its output in a
 * log, telling a live nacre process from a reused pid, unmounting. Single-threaded.
 */
#ifndef NACRE_LOCAL_PROC_H
#define NACRE_LOCAL_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* out = a "/" b; -ENAMETOOLONG (out untouched) if it does not fit. */
int lp_path_join(char *out, size_t len, const char *a, const char *b);
/* Makes in absolute (it may not exist yet), without trailing slashes. 0 or -errno. */
int lp_absolute(const char *in, char *out, size_t len);
/* Finds a program next to this executable, else in PATH; prints what to do if neither
 * has it. 0 or -ENOENT. */
int lp_find_program(const char *name, char *out, size_t len);
/* Starts argv[0] in its own session with stdin from /dev/null and stdout/stderr appended
 * to log. Returns the pid or -errno. */
pid_t lp_spawn(char *const argv[], const char *log);
/* Prints the last lines of a log so a failed start explains itself. */
void lp_show_log_tail(const char *log);
/* 1 if pid is alive (not a zombie) and runs a nacre program (guards against a reused
 * pid). */
int lp_is_nacre_proc(pid_t pid);
/* Unmounts mnt: fusermount3 -u, then a lazy unmount if it is busy. 0 or -errno. */
int lp_unmount(const char *mnt);

#endif
