/* mds_metrics.h - registers the MDS's own metrics (see mds_metrics.c). */
#ifndef NACRE_MDS_METRICS_H
#define NACRE_MDS_METRICS_H

#include "mds/mds.h"

/* Call once m's tables exist; m must outlive the process's metric scrapes. */
void mds_metrics_register(struct mds *m);

#endif
