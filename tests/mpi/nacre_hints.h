/* nacre_hints.h - honour the striping_factor / striping_unit MPI-IO hints on nacre.
 *
 * ROMIO's generic UFS driver (the one a FUSE mount gets) ignores striping_factor, so a
 * program that wants a layout sets it itself before the first write: rank 0 creates the
 * file empty (or finds it empty) and writes the nacre.layout xattr, then every rank opens
 * it with MPI_File_open. See docs/mpi-io.md. */
#ifndef NACRE_HINTS_H
#define NACRE_HINTS_H

#include <mpi.h>

/* Collective over comm. Reads striping_factor and striping_unit from info (may be
 * MPI_INFO_NULL), else from the ROMIO_HINTS file; if either is set and path does not exist
 * or is empty, rank 0 creates it with that layout. Returns 0, or a negative errno on rank 0
 * (the same value on every rank). */
int nacre_hints_precreate(MPI_Comm comm, const char *path, MPI_Info info);

#endif
