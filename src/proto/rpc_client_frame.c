/* rpc_client_frame.c - the client side's frames on a socket: a request frame out (sealed on
 * an integrity or privacy socket, proto/sec.h), a whole reply frame in synchronously (the
 * handshake and recovery, which read their own replies), the reply envelope split off, and
 * a reply message freed.
 * The reader of shared sockets, which reads replies into place, is in rpc_client.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/net.h"
#include "proto/rpc_client_int.h"

#define SUBSYS "rpc"

void rpc_msg_free(struct rpc_msg *m)
{
	if (!m)
		return;
	free(m->body);
	if (m->bulk_owned)
		free(m->bulk);
	free(m);
}

/* Writes a sealed frame (proto/sec.h): integrity authenticates the caller's buffers as they
 * are; privacy encrypts them through the session's buffer, a chunk at a time, the header
 * and the first chunk in one write. Returns 0 or a negative errno. */
static int send_sealed(int fd, struct sec_session *sess, const uint8_t *hdr, const uint8_t *env,
		       uint32_t env_len, const void *body, uint32_t body_len,
		       const struct iovec *bulk, int bulk_iovcnt)
{
	struct iovec iov[3 + 64 + 1];
	uint8_t tag[WIRE_TAG_LEN];
	uint8_t *buf;
	size_t pos;
	int i, n = 0, rc = sec_seal_begin(sess, hdr);

	if (rc < 0)
		return rc;
	if (!sec_session_encrypts(sess)) {
		iov[n].iov_base = (void *)hdr;
		iov[n++].iov_len = WIRE_HDR_LEN;
		if (env_len) {
			rc |= sec_seal_update(sess, env, NULL, env_len);
			iov[n].iov_base = (void *)env;
			iov[n++].iov_len = env_len;
		}
		if (body_len) {
			rc |= sec_seal_update(sess, body, NULL, body_len);
			iov[n].iov_base = (void *)body;
			iov[n++].iov_len = body_len;
		}
		for (i = 0; i < bulk_iovcnt; i++) {
			if (!bulk[i].iov_len)
				continue;
			rc |= sec_seal_update(sess, bulk[i].iov_base, NULL, bulk[i].iov_len);
			iov[n++] = bulk[i];
		}
		if (rc || sec_seal_final(sess, tag) < 0)
			return -EIO;
		iov[n].iov_base = tag;
		iov[n++].iov_len = WIRE_TAG_LEN;
		return net_writev_full(fd, iov, n);
	}
	buf = sec_seal_buf(sess);
	if (!buf)
		return -ENOMEM;
	rc = sec_seal_update(sess, env, buf, env_len);
	if (rc == 0 && body_len)
		rc = sec_seal_update(sess, body, buf + env_len, body_len);
	pos = env_len + body_len;
	iov[n].iov_base = (void *)hdr;
	iov[n++].iov_len = WIRE_HDR_LEN;
	for (i = 0; rc == 0 && i < bulk_iovcnt; i++) {
		const uint8_t *src = bulk[i].iov_base;
		size_t left = bulk[i].iov_len;

		while (rc == 0 && left > 0) {
			size_t take = SEC_SEAL_BUF - pos < left ? SEC_SEAL_BUF - pos : left;

			rc = sec_seal_update(sess, src, buf + pos, take);
			src += take;
			left -= take;
			pos += take;
			if (rc == 0 && pos == SEC_SEAL_BUF) {
				iov[n].iov_base = buf;
				iov[n++].iov_len = pos;
				rc = net_writev_full(fd, iov, n);
				n = 0;
				pos = 0;
			}
		}
	}
	if (rc == 0)
		rc = sec_seal_final(sess, tag);
	if (rc < 0)
		return rc;
	if (pos) {
		iov[n].iov_base = buf;
		iov[n++].iov_len = pos;
	}
	iov[n].iov_base = tag;
	iov[n++].iov_len = WIRE_TAG_LEN;
	return net_writev_full(fd, iov, n);
}

/* Writes one request frame; sess (NULL: none, or the null flavour) seals it. */
int rpc_send_frame(int fd, struct sec_session *sess, uint16_t opcode, uint64_t xid,
		   const struct wire_req_env *env, const void *body, uint32_t body_len,
		   const struct iovec *bulk, int bulk_iovcnt)
{
	struct iovec iov[3 + 64];
	uint8_t hdr_buf[WIRE_HDR_LEN], env_buf[WIRE_REQ_ENV_LEN];
	struct wire_hdr h = {
		.magic = WIRE_MAGIC,
		.version = WIRE_VERSION,
		.opcode = opcode,
		.xid = xid,
	};
	int i, n = 0;
	uint32_t crc = 0, env_len = 0;
	size_t bulk_len = 0;

	if (bulk_iovcnt > 64)
		return -EINVAL;
	for (i = 0; i < bulk_iovcnt; i++) {
		if (!sess) /* a sealed frame's tag covers the bulk */
			crc = crc32c(crc, bulk[i].iov_base, bulk[i].iov_len);
		bulk_len += bulk[i].iov_len;
	}
	if (env) {
		struct wire_cursor ec;
		wire_cursor_init_write(&ec, env_buf, sizeof(env_buf));
		wire_req_env_encode(&ec, env);
		env_len = (uint32_t)ec.pos;
	}
	if (bulk_len > WIRE_BULK_MAX || body_len + env_len > wire_op_body_max(opcode))
		return -E2BIG;
	h.body_len = body_len + env_len;
	h.bulk_len = (uint32_t)bulk_len;
	h.bulk_crc = bulk_len && !sess ? crc : 0;
	wire_hdr_encode(&h, hdr_buf);
	if (sess) {
		metrics_add(metrics_net_sent(), WIRE_HDR_LEN + h.body_len + bulk_len + WIRE_TAG_LEN);
		return send_sealed(fd, sess, hdr_buf, env_buf, env_len, body, body_len, bulk,
				   bulk_iovcnt);
	}
	iov[n].iov_base = hdr_buf;
	iov[n++].iov_len = WIRE_HDR_LEN;
	if (env_len) {
		iov[n].iov_base = env_buf;
		iov[n++].iov_len = env_len;
	}
	if (body_len) {
		iov[n].iov_base = (void *)body;
		iov[n++].iov_len = body_len;
	}
	for (i = 0; i < bulk_iovcnt; i++)
		if (bulk[i].iov_len)
			iov[n++] = bulk[i];
	metrics_add(metrics_net_sent(), WIRE_HDR_LEN + h.body_len + bulk_len);
	return net_writev_full(fd, iov, n);
}

/* Reads one whole reply frame synchronously (the handshake, and calls on a recovering socket
 * that nobody else reads): header, body into a heap buffer (*body, *body_len), bulk
 * discarded, until deadline; sess (may be NULL) opens a sealed frame. Returns 0 or a
 * negative error (-EPROTO for a frame that fails its tag); *h is the header. */
int rpc_read_frame_sync(int fd, struct sec_session *sess, int64_t deadline,
			struct wire_hdr *h, uint8_t **body)
{
	uint8_t hb[WIRE_HDR_LEN], tag[WIRE_TAG_LEN];
	int rc;

	*body = NULL;
	rc = net_read_full_deadline(fd, hb, sizeof(hb), deadline);
	if (rc < 0)
		return rc;
	rc = wire_hdr_decode(hb, h);
	if (rc < 0)
		return rc;
	if (!(h->flags & WIRE_FLAG_REPLY))
		return -EPROTO;
	*body = malloc(h->body_len + 1);
	if (!*body)
		return -ENOMEM;
	if (sess && sec_open_begin(sess, hb) < 0)
		rc = -EIO;
	else
		rc = net_read_full_deadline(fd, *body, h->body_len, deadline);
	if (rc == 0 && sess && sec_open_update(sess, *body, h->body_len) < 0)
		rc = -EIO;
	for (uint32_t left = h->bulk_len; rc == 0 && left > 0;) {
		uint8_t skip[4096];
		uint32_t n = left < sizeof(skip) ? left : (uint32_t)sizeof(skip);
		rc = net_read_full_deadline(fd, skip, n, deadline);
		if (rc == 0 && sess && sec_open_update(sess, skip, n) < 0)
			rc = -EIO;
		left -= n;
	}
	if (rc == 0 && sess) {
		rc = net_read_full_deadline(fd, tag, sizeof(tag), deadline);
		if (rc == 0 && sec_open_final(sess, tag) < 0) {
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
					"reply %s (xid %llu) failed sec verification; closing",
					wire_opcode_name(h->opcode), (unsigned long long)h->xid);
			rc = -EPROTO;
		}
	}
	if (rc < 0) {
		free(*body);
		*body = NULL;
	}
	return rc;
}

/* Splits a reply body read into m->body into its envelope and the message. */
int rpc_strip_rep_env(struct rpc_msg *m)
{
	struct wire_cursor ec;

	if (m->body_len < WIRE_REP_ENV_LEN)
		return -EPROTO;
	wire_cursor_init_read(&ec, m->body, WIRE_REP_ENV_LEN);
	wire_rep_env_decode(&ec, &m->env);
	if (!wire_cursor_ok(&ec))
		return -EPROTO;
	m->body_len -= WIRE_REP_ENV_LEN;
	memmove(m->body, m->body + WIRE_REP_ENV_LEN, m->body_len);
	return 0;
}
