/* cl_export.h - marks the public entry points of libnacre.
 *
 * The shared library is built with -fvisibility=hidden, so only functions defined with
 * NACRE_API (exactly those declared in include/nacre/nacre.h) are exported; every cl_*
 * helper stays internal. */
#ifndef NACRE_CL_EXPORT_H
#define NACRE_CL_EXPORT_H

#define NACRE_API __attribute__((visibility("default")))

#endif
