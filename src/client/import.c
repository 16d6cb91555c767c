/* import.c - a mount's connections as lctl's import files show them (nacre_fs_import). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/oss.h"
#include "common/net.h"
#include "common/util.h"
#include "proto/rpc.h"
#include "proto/sec.h"
#include "proto/wire.h"

static const char *state_name(int state)
{
	switch (state) {
	case RPC_STATE_NEW: return "NEW";
	case RPC_STATE_CONNECTING: return "CONNECTING";
	case RPC_STATE_REPLAY: return "REPLAY";
	case RPC_STATE_FULL: return "FULL";
	case RPC_STATE_CLOSED: return "CLOSED";
	default: return "DISCONN";
	}
}

NACRE_API int nacre_fs_import(struct nacre_fs *fs, int ost, struct nacre_import *out)
{
	struct rpc_conn *c = fs->mds;
	struct rpc_conn_info in;

	if (ost < -1 || ost > 0xffff)
		return -EINVAL;
	if (ost >= 0 && cl_oss_get(fs, (uint32_t)ost, &c) < 0)
		return -ENOENT;
	rpc_conn_info(c, &in);
	memset(out, 0, sizeof(*out));
	str_copy(out->state, state_name(in.state), sizeof(out->state));
	str_copy(out->current, in.current, sizeof(out->current));
	str_copy(out->addrs, in.addrs, sizeof(out->addrs));
	str_copy(out->server, in.server, sizeof(out->server));
	str_copy(out->sec, sec_flavour_name(in.sec), sizeof(out->sec));
	out->connect_bits = in.features;
	out->generation = in.gen;
	out->last_committed = in.last_committed;
	out->heard_ms_ago = in.heard_ms ? net_now_ms() - in.heard_ms : -1;
	size_t o = 0;
	for (unsigned b = 0; b < 64; b++) {
		const char *n = (in.features >> b) & 1 ? wire_feature_name(b) : NULL;
		if (n && o + strlen(n) + 2 < sizeof(out->connect_flags))
			o += (size_t)snprintf(out->connect_flags + o, sizeof(out->connect_flags) - o,
					      "%s%s", o ? ", " : "", n);
	}
	return 0;
}
