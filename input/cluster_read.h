/* cluster_read.h: reading a cluster file (clusters/ format), its GPU types
 * taken from the GPU catalogue where they name one, into a cluster
 * (cluster_read.c). */
#ifndef AMPPLAN_CLUSTER_READ_H
#define AMPPLAN_CLUSTER_READ_H

struct cluster;
struct err;

/* The GPU catalogue's file name under the data directory (gpus/ in the
 * source tree, PREFIX/share/ampplan/gpus when installed): figures with a
 * source each, which a cluster file's GPU type may take by name
 * ("catalogue": NAME) and override field by field. */
#define CLUSTER_CATALOGUE "gpus/catalogue.json"

/* Loads a cluster file (clusters/ format). Returns 0 and *out (caller frees
 * with cluster_free), or -1 with *out NULL and e naming the file and the
 * field or the line:column. */
int cluster_load(struct cluster **out, const char *path, struct err *e);

#endif
