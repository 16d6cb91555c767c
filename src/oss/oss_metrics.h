/* oss_metrics.h - registers the OSS's metrics: per-OST bytes read and written, per-OST
 * space, and the OSS's total space as kbytesfree/kbytestotal. */
#ifndef NACRE_OSS_METRICS_H
#define NACRE_OSS_METRICS_H

#include "oss/target.h"

/* targets must outlive the process's metric scrapes (they live until exit). */
void oss_metrics_register(struct oss_target **targets, int n);

#endif
