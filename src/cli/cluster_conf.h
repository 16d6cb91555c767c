/* cluster_conf.h - the cluster config file of `nacre cluster up|down|status` (docs/cluster.md):
 * one INI file (inih) naming every host and what runs there.
 *
 *   [cluster]      fsname, key_file, stripe_count, stripe_size, remote_shell, bin_dir, run_dir
 *   [mds]          host, listen, data, metrics_addr, failover, failover_listen
 *   [oss NAME]     host, listen, osts = IDX:DIR[,IDX:DIR...], metrics_addr, failover,
 *                  failover_listen
 *   [client NAME]  host, mountpoint, options, metrics_addr
 *   [hsm]          archive = ID:URL (repeatable), copytools = HOST[,HOST...],
 *                  endpoint = URL, credentials = FILE (both for the copytools),
 *                  metrics_addr = HOST:PORT (archive k's copytool: PORT + k)
 *   [metrics]      log_dir, interval, azure_workspace, azure_key_file, azure_log_type,
 *                  azure_url
 *
 * Parsing is strict: an unknown section or key, a missing required key, a bad address or a
 * duplicate OST index is an error whose message starts with FILE:LINE. Single-threaded.
 *
 * `nacre up` fills a struct cc_conf itself (one host, up to 64 OSSes and 64 OSTs), so the
 * arrays hold more than a parsed file may ask for.
 */
#ifndef NACRE_CLUSTER_CONF_H
#define NACRE_CLUSTER_CONF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

#define CC_NAME_MAX 31
#define CC_HOST_MAX 255
#define CC_MAX_OSS 32          /* [oss] sections in a file */
#define CC_MAX_OSTS_PER_OSS 16 /* osts of one [oss] in a file */
#define CC_OSS_CAP 64          /* room in struct cc_conf */
#define CC_OSTS_CAP (CC_MAX_OSS * CC_MAX_OSTS_PER_OSS)
#define CC_MAX_CLIENTS 32
#define CC_MAX_ARCHIVES 8
#define CC_MAX_COPYTOOLS 8
#define CC_SHELL_MAX 512
#define CC_ADDR_MAX 300 /* host:port as written in the file */

struct cc_ost {
	int index;
	char dir[PATH_MAX];
};

/* A failover partner: a standby on another host, on the same (shared) storage. */
struct cc_failover {
	char host[CC_HOST_MAX + 1]; /* "" = none */
	char listen[CC_ADDR_MAX];   /* default: host, with the primary's port */
	int listen_line;            /* where failover_listen was set, 0 if not */
};

struct cc_oss {
	char name[CC_NAME_MAX + 1];
	char host[CC_HOST_MAX + 1];
	char listen[CC_ADDR_MAX];
	char metrics_addr[CC_ADDR_MAX];
	struct cc_failover failover;
	int ost0, nosts; /* its OSTs: c->osts[ost0 .. ost0 + nosts - 1] */
	int line; /* of the section header, for "missing key" messages */
};

struct cc_client {
	char name[CC_NAME_MAX + 1];
	char host[CC_HOST_MAX + 1];
	char mountpoint[PATH_MAX];
	char options[512];
	char metrics_addr[CC_ADDR_MAX];
	int admin; /* admin = yes: mounted as client nacre-admin (the local-admin nodemap rule:
		    * root is root there) */
	int line;
};

struct cc_archive {
	int id;
	char url[1024];
	char backend[1100]; /* the copytool's --backend for url; "" = the copytool has none */
};

/* The Logs Ingestion options a cluster passes on to every daemon and mount as they are
 * (--metrics-azure-NAME, -o metrics_azure_NAME=; [metrics] azure_NAME), NAME as in
 * cc_az_names. */
enum {
	CC_AZ_DCE,
	CC_AZ_DCR,
	CC_AZ_STREAM,
	CC_AZ_TENANT,
	CC_AZ_CLIENT_ID,
	CC_AZ_SECRET_FILE,
	CC_AZ_AUTHORITY,
	CC_AZ_N
};
extern const char *const cc_az_names[CC_AZ_N]; /* "dce", ..., "client-id", "secret-file" */
/* 0 if the options set in v (CC_AZ_N strings, NULL or "" = not set) are a whole Logs
 * Ingestion configuration or none, and not given with a workspace (workspace_set); else -1
 * with a sentence in err. */
int cc_az_check(const char *const *v, int workspace_set, char *err, size_t err_len);

struct cc_conf {
	char path[PATH_MAX]; /* the file, for messages */
	/* [cluster] */
	char fsname[NACRE_FSNAME_MAX + 1];
	char key_file[PATH_MAX];
	int stripe_count;     /* 0 = not set */
	uint32_t stripe_size; /* 0 = not set */
	char remote_shell[CC_SHELL_MAX]; /* contains {host} */
	char bin_dir[PATH_MAX];          /* "" = the directory of this nacre binary */
	char run_dir[PATH_MAX];          /* pid files and logs on every host */
	char sec_min[16];                /* the servers' --sec-min, "" = not set (null) */
	int quota_off;                   /* quota = off: the MDS's --quota off */
	int cluster_line;
	/* [mds] */
	char mds_host[CC_HOST_MAX + 1];
	char mds_listen[CC_ADDR_MAX];
	char mds_data[PATH_MAX];
	char mds_metrics_addr[CC_ADDR_MAX];
	struct cc_failover mds_failover;
	int mds_line;
	struct cc_oss oss[CC_OSS_CAP];
	int noss;
	struct cc_ost osts[CC_OSTS_CAP]; /* of every OSS, in the order of the file */
	int nosts;
	struct cc_client clients[CC_MAX_CLIENTS];
	int nclients;
	/* [hsm] */
	struct cc_archive archives[CC_MAX_ARCHIVES];
	int narchives;
	char copytools[CC_MAX_COPYTOOLS][CC_HOST_MAX + 1];
	int ncopytools;
	char hsm_endpoint[1024];     /* copytools' --endpoint (azure/s3 service), "" = public */
	char hsm_credentials[PATH_MAX]; /* copytools' --credentials file on their hosts, or "" */
	char copytool_metrics_addr[CC_ADDR_MAX]; /* archive k's copytool: this port + k */
	/* [metrics] */
	char metrics_log_dir[PATH_MAX]; /* created on every host by `nacre cluster up` */
	int metrics_interval; /* 0 = daemon default */
	/* every daemon's, the mounts' and the copytools' --metrics-azure* ("" = not set) */
	char metrics_azure[65];
	char metrics_azure_key_file[PATH_MAX];
	char metrics_azure_log_type[101];
	char metrics_azure_url[1024];
	/* the Logs Ingestion API's options, CC_AZ_* (metrics_azure.h; "" = not set) */
	char metrics_azure_ingest[CC_AZ_N][1024];
};

/* Parses path into *c (caller's storage, zeroed here). Returns 0, or -1 with a message
 * "FILE:LINE: what is wrong" (or "FILE: ..." for file-level problems) in err. */
int cc_parse(const char *path, struct cc_conf *c, char *err, size_t err_len);

/* The OSS that serves OST index ost, or NULL. */
const struct cc_oss *cc_oss_of_ost(const struct cc_conf *c, int ost);

/* "LISTEN" or "LISTEN,FAILOVER_LISTEN": where clients and OSSes reach the MDS. */
void cc_mds_addrs(const struct cc_conf *c, char *out, size_t len);

/* Splits "host:port" (or "[v6]:port") into host and port; 0 or -EINVAL. */
int cc_split_addr(const char *addr, char *host, size_t host_len, int *port);

#endif
