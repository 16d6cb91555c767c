/* cap_check.c - verify the capability of an object request: one HMAC per request. */
#include "oss/cap_check.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "common/fid.h"
#include "common/log.h"

uint32_t oss_cap_needed(uint16_t opcode)
{
	switch (opcode) {
	case WIRE_OP_OST_READ:
		return CAP_READ;
	case WIRE_OP_OST_WRITE:
		return CAP_WRITE;
	case WIRE_OP_OST_PUNCH:
		return CAP_PUNCH;
	case WIRE_OP_OST_DESTROY:
	case WIRE_OP_OST_DESTROY_BATCH:
		return CAP_DESTROY;
	case WIRE_OP_OST_FALLOCATE:
		return CAP_WRITE;
	case WIRE_OP_OST_GETATTR:
	case WIRE_OP_OST_SYNC:
	case WIRE_OP_OST_SEEK:
		return CAP_READ | CAP_WRITE;
	default:
		return 0;
	}
}

static int refuse(const struct rpc_request *req, uint16_t opcode, const struct nacre_fid *fid,
		  uint32_t stripe, const char *why)
{
	char fs[NACRE_FID_STR_MAX];
	fid_format(fid, fs, sizeof(fs));
	LOG_RATELIMITED(LOG_LVL_WARN, "cap",
			"refused %s of %s stripe %u from %s (%s, client %016llx): %s",
			wire_opcode_name(opcode), fs, stripe,
			req->peer, req->peer_name ? req->peer_name : "?",
			(unsigned long long)req->client_id, why);
	return -EACCES;
}

/* The checks every capability gets before its MAC: rights, then expiry. */
static const char *check_common(const struct wire_cap *cap, uint32_t need, char *buf,
				size_t len)
{
	char have[32];
	if (!(cap->rights & need)) {
		snprintf(buf, len, "the capability grants %s only",
			 cap_rights_str(cap->rights, have, sizeof(have)));
		return buf;
	}
	int64_t now = (int64_t)time(NULL);
	if (cap->expiry < (uint64_t)now) {
		snprintf(buf, len, "capability expired %lld s ago",
			 (long long)(now - (int64_t)cap->expiry));
		return buf;
	}
	return NULL;
}

int oss_cap_check(const struct cap_key *k, const struct rpc_request *req, uint16_t opcode,
		  const struct wire_ost_io_req *m)
{
	uint32_t need = oss_cap_needed(opcode);
	uint8_t mac[CAP_MAC_LEN];
	char buf[96];
	const char *why;

	if (!need)
		return 0;
	if (!m->has_cap)
		return refuse(req, opcode, &m->fid, m->stripe_idx, "no capability");
	if (m->cap.stripe != CAP_STRIPE_ALL && m->cap.stripe != m->stripe_idx)
		return refuse(req, opcode, &m->fid, m->stripe_idx,
			      "the capability is for another stripe");
	why = check_common(&m->cap, need, buf, sizeof(buf));
	if (why)
		return refuse(req, opcode, &m->fid, m->stripe_idx, why);
	cap_mint(k, &m->fid, m->layout_gen, m->cap.stripe, m->cap.rights, req->client_id,
		 m->cap.expiry, mac);
	if (!cap_mac_eq(mac, m->cap.mac))
		return refuse(req, opcode, &m->fid, m->stripe_idx,
			      "bad capability (not minted for this object, layout generation "
			      "and client)");
	return 0;
}

int oss_cap_check_list(const struct cap_key *k, const struct rpc_request *req,
		       const struct wire_ost_destroy_req *m, const void *objs, size_t len)
{
	const uint16_t op = WIRE_OP_OST_DESTROY_BATCH;
	const struct nacre_fid none = {0, 0, 0};
	uint8_t mac[CAP_MAC_LEN];
	char buf[96];
	const char *why;

	if (!(m->flags & WIRE_OST_DESTROY_CAP))
		return refuse(req, op, &none, 0, "no capability");
	why = check_common(&m->cap, CAP_DESTROY, buf, sizeof(buf));
	if (why)
		return refuse(req, op, &none, 0, why);
	cap_mint_list(k, m->ost_idx, objs, len, m->cap.rights, req->client_id, m->cap.expiry,
		      mac);
	if (!cap_mac_eq(mac, m->cap.mac))
		return refuse(req, op, &none, 0, "bad capability for this list of objects");
	return 0;
}
