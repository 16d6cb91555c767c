/* fuzz_mds_msgs.c - MDS and connection message decoders. The first input byte selects the
 * message type; the rest is its body. See fuzz_roundtrip.h for what is checked. */
#include <errno.h>

#include "fuzz_roundtrip.h"

FZ_MSG(connect_req)
FZ_MSG(connect_rep)
FZ_MSG(auth_req)
FZ_MSG(fid_req)
FZ_MSG(name_req)
FZ_MSG(setattr_req)
FZ_MSG(create_req)
FZ_MSG(rename_req)
FZ_MSG(link_req)
FZ_MSG(readdir_req)
FZ_MSG(open_req)
FZ_MSG(open_rep)
FZ_MSG(close_req)
FZ_MSG(xattr_req)
FZ_MSG(layout_set_req)
FZ_MSG(target_reg)
FZ_MSG(attr_rep)
FZ_MSG(layout_rep)
FZ_GROUP(dirent, struct nacre_dirent, wire_dirent_put, wire_dirent_get)
/* A READDIR entry with attributes, as one message. */
struct fz_direntplus {
	struct nacre_dirent d;
	struct nacre_attr a;
	int has;
};
static void fz_direntplus_put(struct wire_cursor *c, const struct fz_direntplus *m)
{
	wire_direntplus_put(c, &m->d, m->has ? &m->a : NULL);
}
static void fz_direntplus_get(struct wire_cursor *c, struct fz_direntplus *m)
{
	wire_direntplus_get(c, &m->d, &m->a, &m->has);
}
FZ_GROUP(direntplus, struct fz_direntplus, fz_direntplus_put, fz_direntplus_get)
FZ_GROUP(target, struct nacre_target, wire_target_put, wire_target_get)
FZ_MSG(cred_req)
FZ_MSG(path_rep)
FZ_MSG(hsm_state)
FZ_MSG(hsm_state_set)
FZ_MSG(hsm_list_req)
FZ_MSG(hsm_agent_reg)
FZ_MSG(hsm_poll_req)
FZ_MSG(hsm_progress)
FZ_MSG(hsm_import_req)
FZ_GROUP(hsm_action, struct nacre_hsm_action, wire_hsm_action_put, wire_hsm_action_get)
FZ_MSG(lock_req)
FZ_MSG(lock_rep)
FZ_MSG(create_rep)
FZ_MSG(xattr_rep)
FZ_MSG(xattr_len_rep)
FZ_MSG(hsm_progress_rep)
FZ_MSG(req_env)
FZ_MSG(rep_env)
FZ_MSG(fault_set_req)
FZ_MSG(fault_set_rep)
FZ_MSG(recovery_done_req)
FZ_MSG(recovery_status)
FZ_MSG(append_req)
FZ_MSG(append_rep)
FZ_MSG(cap_req)
FZ_MSG(cap_rep)
FZ_MSG(key_req)
FZ_MSG(notify_req)
FZ_MSG(nodemap_req)
FZ_MSG(nodemap_rep)
FZ_MSG(links_req)
FZ_MSG(find_req)
FZ_MSG(changelog_req)
FZ_MSG(quota_req)
FZ_MSG(fid_grant_rep)
FZ_MSG(batch_req)
FZ_MSG(batch_rep)
FZ_MSG(lease_req)
FZ_MSG(lease_rep)

/* HSM_REQUEST: the header, then exactly nfids fids. */
struct fz_hsm_req {
	struct wire_hsm_request h;
	struct nacre_fid fids[WIRE_HSM_FIDS_MAX];
};
static void enc_hsm_request(struct wire_cursor *c, const void *m)
{
	const struct fz_hsm_req *r = m;
	wire_hsm_request_encode(c, &r->h);
	for (uint32_t i = 0; i < r->h.nfids && i < WIRE_HSM_FIDS_MAX; i++)
		wire_fid_put(c, &r->fids[i]);
}
static void dec_hsm_request(struct wire_cursor *c, void *m)
{
	struct fz_hsm_req *r = m;
	wire_hsm_request_decode(c, &r->h);
	for (uint32_t i = 0; wire_cursor_ok(c) && i < r->h.nfids; i++)
		wire_fid_get(c, &r->fids[i]);
}

/* The list replies: a header, then as many items as its field nfield says, at most max (as
 * many as a server may send; the wrapper refuses a longer list, as a client does). */
#define FZ_LIST(name, nfield, item_t, max, put, get)                                        \
	struct fz_##name {                                                                  \
		struct wire_##name h;                                                       \
		item_t items[max];                                                          \
	};                                                                                  \
	static void enc_##name(struct wire_cursor *c, const void *m)                        \
	{                                                                                   \
		const struct fz_##name *r = m;                                              \
		wire_##name##_encode(c, &r->h);                                             \
		for (uint32_t i = 0; i < r->h.nfield && i < (max); i++)                     \
			put(c, &r->items[i]);                                               \
	}                                                                                   \
	static void dec_##name(struct wire_cursor *c, void *m)                              \
	{                                                                                   \
		struct fz_##name *r = m;                                                    \
		wire_##name##_decode(c, &r->h);                                             \
		if (r->h.nfield > (max))                                                    \
			wire_cursor_fail(c, -EPROTO);                                       \
		for (uint32_t i = 0; wire_cursor_ok(c) && i < r->h.nfield; i++)             \
			get(c, &r->items[i]);                                               \
	}

/* NOTIFY_WAIT's reply: the perm-change FIDs, then with WIRE_NOTIFY_RECALL the recalled
 * directories. */
struct fz_notify_rep {
	struct wire_notify_rep h;
	struct nacre_fid items[WIRE_NOTIFY_MAX];
	uint32_t nrecall;
	struct nacre_fid recall[WIRE_NOTIFY_MAX];
};
static void enc_notify_rep(struct wire_cursor *c, const void *m)
{
	const struct fz_notify_rep *r = m;

	wire_notify_rep_encode(c, &r->h);
	for (uint32_t i = 0; i < r->h.count && i < WIRE_NOTIFY_MAX; i++)
		wire_fid_put(c, &r->items[i]);
	if (!(r->h.flags & WIRE_NOTIFY_RECALL))
		return;
	wire_put_u32(c, r->nrecall);
	for (uint32_t i = 0; i < r->nrecall && i < WIRE_NOTIFY_MAX; i++)
		wire_fid_put(c, &r->recall[i]);
}
static void dec_notify_rep(struct wire_cursor *c, void *m)
{
	struct fz_notify_rep *r = m;

	wire_notify_rep_decode(c, &r->h);
	for (uint32_t i = 0; wire_cursor_ok(c) && i < r->h.count; i++)
		wire_fid_get(c, &r->items[i]);
	if (wire_cursor_ok(c) && (r->h.flags & WIRE_NOTIFY_RECALL)) {
		int n = wire_notify_recall_get(c, r->recall, WIRE_NOTIFY_MAX);
		r->nrecall = n > 0 ? (uint32_t)n : 0;
	}
}

static void rc_put(struct wire_cursor *c, const int32_t *rc)
{
	wire_hsm_rc_put(c, *rc);
}

FZ_LIST(readdir_rep, count, struct nacre_dirent, WIRE_BODY_MAX / WIRE_DIRENT_MIN,
	wire_dirent_put, wire_dirent_get)
FZ_LIST(targets_rep, count, struct nacre_target, WIRE_BODY_MAX / WIRE_TARGET_MIN,
	wire_target_put, wire_target_get)
FZ_LIST(hsm_request_rep, nfids, int32_t, WIRE_HSM_FIDS_MAX, rc_put, wire_hsm_rc_get)
FZ_LIST(hsm_action_rep, has, struct nacre_hsm_action, 1, wire_hsm_action_put,
	wire_hsm_action_get)
FZ_LIST(hsm_list_rep, count, struct nacre_hsm_action, WIRE_HSM_POLL_MAX, wire_hsm_action_put,
	wire_hsm_action_get)
FZ_LIST(key_list, count, struct wire_key_entry, WIRE_KEY_LIST_MAX, wire_key_entry_put,
	wire_key_entry_get)
FZ_LIST(links_rep, count, struct wire_link_entry, WIRE_BODY_MAX / WIRE_LINK_ENTRY_MIN,
	wire_link_entry_put, wire_link_entry_get)
FZ_LIST(quota_rep, count, struct wire_quota_drift, WIRE_QUOTA_DRIFT_MAX, wire_quota_drift_put,
	wire_quota_drift_get)
FZ_LIST(find_rep, count, struct wire_find_ent, 32, wire_find_ent_put, wire_find_ent_get)
FZ_LIST(changelog_rep, count, struct nacre_changelog_rec, WIRE_BODY_MAX / WIRE_CL_REC_MIN,
	wire_cl_rec_put, wire_cl_rec_get)
FZ_LIST(hsm_poll_rep, count, struct nacre_hsm_action, WIRE_HSM_POLL_MAX, wire_hsm_action_put,
	wire_hsm_action_get)

/* The SETXATTR value is a view into the buffer it was decoded from: compare contents, then
 * point m1 at m2's copy so the struct compare can use memcmp. */
static void fix_xattr(void *a, void *b)
{
	struct wire_xattr_req *m1 = a, *m2 = b;

	if (m1->value_len != m2->value_len ||
	    (m1->value_len && memcmp(m1->value, m2->value, m1->value_len) != 0))
		fz_fail("xattr_req", "value differs");
	m1->value = m2->value;
}

/* A batch's bodies are views too: compared by content, then aligned. */
static void fix_batch_req(void *a, void *b)
{
	struct wire_batch_req *m1 = a, *m2 = b;

	for (uint32_t i = 0; i < m1->count && i < WIRE_BATCH_MAX; i++) {
		if (m1->ch[i].len != m2->ch[i].len ||
		    (m1->ch[i].len && memcmp(m1->ch[i].body, m2->ch[i].body, m1->ch[i].len)))
			fz_fail("batch_req", "a change's body differs");
		m1->ch[i].body = m2->ch[i].body;
	}
}

static void fix_batch_rep(void *a, void *b)
{
	struct wire_batch_rep *m1 = a, *m2 = b;

	for (uint32_t i = 0; i < m1->count && i < WIRE_BATCH_MAX; i++) {
		if (m1->r[i].len != m2->r[i].len ||
		    (m1->r[i].len && memcmp(m1->r[i].body, m2->r[i].body, m1->r[i].len)))
			fz_fail("batch_rep", "a result's body differs");
		m1->r[i].body = m2->r[i].body;
	}
}

/* The GETXATTR value is a view too. */
static void fix_xattr_rep(void *a, void *b)
{
	struct wire_xattr_rep *m1 = a, *m2 = b;

	if (m1->len != m2->len || (m1->len && memcmp(m1->value, m2->value, m1->len) != 0))
		fz_fail("xattr_rep", "value differs");
	m1->value = m2->value;
}

/* The NODEMAP reply's text is a view too. */
static void fix_nodemap_rep(void *a, void *b)
{
	struct wire_nodemap_rep *m1 = a, *m2 = b;

	if (m1->text_len != m2->text_len ||
	    (m1->text_len && memcmp(m1->text, m2->text, m1->text_len) != 0))
		fz_fail("nodemap_rep", "text differs");
	m1->text = m2->text;
}

static const struct fz_type types[] = {
	FZ_ROW(connect_req, struct wire_connect_req, NULL, 1),
	FZ_ROW(connect_rep, struct wire_connect_rep, NULL, 1),
	FZ_ROW(auth_req, struct wire_auth_req, NULL, 1),
	FZ_ROW(fid_req, struct wire_fid_req, NULL, 1),
	FZ_ROW(name_req, struct wire_name_req, NULL, 1),
	FZ_ROW(setattr_req, struct wire_setattr_req, NULL, 1),
	FZ_ROW(create_req, struct wire_create_req, NULL, 1),
	FZ_ROW(rename_req, struct wire_rename_req, NULL, 1),
	FZ_ROW(link_req, struct wire_link_req, NULL, 1),
	FZ_ROW(readdir_req, struct wire_readdir_req, NULL, 0), /* max_bytes is capped */
	FZ_ROW(open_req, struct wire_open_req, NULL, 1),
	FZ_ROW(open_rep, struct wire_open_rep, NULL, 1),
	FZ_ROW(close_req, struct wire_close_req, NULL, 1),
	FZ_ROW(xattr_req, struct wire_xattr_req, fix_xattr, 1),
	FZ_ROW(layout_set_req, struct wire_layout_set_req, NULL, 1),
	FZ_ROW(target_reg, struct wire_target_reg, NULL, 1),
	FZ_ROW(attr_rep, struct wire_attr_rep, NULL, 1),
	FZ_ROW(layout_rep, struct wire_layout_rep, NULL, 1),
	FZ_ROW(dirent, struct nacre_dirent, NULL, 1),
	FZ_ROW(target, struct nacre_target, NULL, 1),
	FZ_ROW(cred_req, struct wire_cred_req, NULL, 1),
	FZ_ROW(path_rep, struct wire_path_rep, NULL, 1),
	FZ_ROW(hsm_request, struct fz_hsm_req, NULL, 1),
	FZ_ROW(hsm_state, struct wire_hsm_state, NULL, 1),
	FZ_ROW(hsm_state_set, struct wire_hsm_state_set, NULL, 1),
	FZ_ROW(hsm_list_req, struct wire_hsm_list_req, NULL, 0), /* max is capped */
	FZ_ROW(hsm_agent_reg, struct wire_hsm_agent_reg, NULL, 1),
	FZ_ROW(hsm_poll_req, struct wire_hsm_poll_req, NULL, 0), /* wait_ms is capped */
	FZ_ROW(hsm_progress, struct wire_hsm_progress, NULL, 1),
	FZ_ROW(hsm_import_req, struct wire_hsm_import_req, NULL, 1),
	FZ_ROW(hsm_action, struct nacre_hsm_action, NULL, 1),
	/* new rows go at the end: a seed's first byte picks its row */
	FZ_ROW(lock_req, struct wire_lock_req, NULL, 1),
	FZ_ROW(lock_rep, struct wire_lock_rep, NULL, 1),
	FZ_ROW(create_rep, struct wire_create_rep, NULL, 1),
	FZ_ROW(xattr_rep, struct wire_xattr_rep, fix_xattr_rep, 1),
	FZ_ROW(xattr_len_rep, struct wire_xattr_len_rep, NULL, 1),
	FZ_ROW(readdir_rep, struct fz_readdir_rep, NULL, 1),
	FZ_ROW(targets_rep, struct fz_targets_rep, NULL, 1),
	FZ_ROW(hsm_request_rep, struct fz_hsm_request_rep, NULL, 1),
	FZ_ROW(hsm_action_rep, struct fz_hsm_action_rep, NULL, 1),
	FZ_ROW(hsm_list_rep, struct fz_hsm_list_rep, NULL, 1),
	FZ_ROW(hsm_poll_rep, struct fz_hsm_poll_rep, NULL, 1),
	FZ_ROW(hsm_progress_rep, struct wire_hsm_progress_rep, NULL, 1),
	FZ_ROW(req_env, struct wire_req_env, NULL, 1),
	FZ_ROW(rep_env, struct wire_rep_env, NULL, 1),
	FZ_ROW(fault_set_req, struct wire_fault_set_req, NULL, 1),
	FZ_ROW(fault_set_rep, struct wire_fault_set_rep, NULL, 1),
	FZ_ROW(recovery_done_req, struct wire_recovery_done_req, NULL, 1),
	FZ_ROW(recovery_status, struct wire_recovery_status, NULL, 1),
	FZ_ROW(append_req, struct wire_append_req, NULL, 1),
	FZ_ROW(append_rep, struct wire_append_rep, NULL, 1),
	FZ_ROW(cap_req, struct wire_cap_req, NULL, 1),
	FZ_ROW(cap_rep, struct wire_cap_rep, NULL, 1),
	FZ_ROW(key_req, struct wire_key_req, NULL, 1),
	FZ_ROW(key_list, struct fz_key_list, NULL, 1),
	FZ_ROW(notify_req, struct wire_notify_req, NULL, 1),
	FZ_ROW(notify_rep, struct fz_notify_rep, NULL, 1),
	FZ_ROW(nodemap_req, struct wire_nodemap_req, NULL, 1),
	FZ_ROW(nodemap_rep, struct wire_nodemap_rep, fix_nodemap_rep, 1),
	FZ_ROW(links_req, struct wire_links_req, NULL, 1),
	FZ_ROW(links_rep, struct fz_links_rep, NULL, 1),
	FZ_ROW(find_req, struct wire_find_req, NULL, 0), /* max_bytes is capped */
	FZ_ROW(find_rep, struct fz_find_rep, NULL, 1),
	FZ_ROW(changelog_req, struct wire_changelog_req, NULL, 1),
	FZ_ROW(changelog_rep, struct fz_changelog_rep, NULL, 1),
	FZ_ROW(quota_req, struct wire_quota_req, NULL, 1),
	FZ_ROW(quota_rep, struct fz_quota_rep, NULL, 1),
	FZ_ROW(fid_grant_rep, struct wire_fid_grant_rep, NULL, 1),
	FZ_ROW(batch_req, struct wire_batch_req, fix_batch_req, 1),
	FZ_ROW(batch_rep, struct wire_batch_rep, fix_batch_rep, 1),
	FZ_ROW(direntplus, struct fz_direntplus, NULL, 1),
	FZ_ROW(lease_req, struct wire_lease_req, NULL, 1),
	FZ_ROW(lease_rep, struct wire_lease_rep, NULL, 1),
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	fz_roundtrip(&types[data[0] % (sizeof(types) / sizeof(types[0]))], data + 1, size - 1);
	return 0;
}
