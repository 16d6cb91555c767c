/* fluid.h - `nacre-mount --fluid-config [PATH] [--dry-run]`: the entry point of the Fluid
 * ThinRuntime FUSE container (docs/fluid.md). */
#ifndef NACRE_FZ_FLUID_H
#define NACRE_FZ_FLUID_H

/* 1 if argv asks for Fluid mode (argv[1] is --fluid-config). */
int fz_fluid_wanted(int argc, char **argv);
/* Reads Fluid's config.json, prepares targetPath and execs this program as
 * `nacre-mount SPEC TARGET -o OPTS -f` (foreground; SIGTERM unmounts). With --dry-run it
 * prints what it would run and returns 0. Returns the exit code on failure (never returns
 * after a successful exec). */
int fz_fluid_main(int argc, char **argv);

#endif
