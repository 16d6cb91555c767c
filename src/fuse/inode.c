/* inode.c - the inode table: kernel inode numbers (node ids) <-> FIDs, with lookup counts.
 *
 * The kernel names an inode by a 64-bit number it got from us in a lookup-like reply and
 * gives back the count of those replies with forget. As in libfuse's passthrough_ll, the
 * object lives until forget brings its count to zero. One FID always maps to one object, so
 * that hard links and repeated lookups give the kernel one inode.
 *
 * The number is not the object's address but the FID itself, folded into 64 bits without
 * loss (fz_fid_nodeid): a file handle (name_to_handle_at, an NFS re-export) carries the node
 * id, and the kernel asks for "." of it once the inode left its cache, which may be long
 * after the forget, or in another process: after nacre-mount --upgrade or a new mount. A
 * FID that does not fold (none the MDS makes today) gets a counter from the upper half,
 * never reused, that dies with the process. The root is FUSE_ROOT_ID.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fid.h"
#include "common/log.h"
#include "fuse/fz.h"

#define ITABLE_INITIAL 1024

/* Folded node ids: (seq - NODEID_SEQ_BASE) << 32 | oid, for ver 0 and a sequence above the
 * base and below base + 2^31 (Lustre's normal FIDs, and every FID nacre's MDS allocates:
 * NACRE_FIRST_SEQ and up). They fall in [2^32, 2^63): apart from FUSE_ROOT_ID, from the small
 * counters older nacre-mount versions gave (an upgrade imports them), and from the counters
 * of NODEID_COUNTER_BASE and up given to FIDs that do not fold. */
#define NODEID_SEQ_BASE 0x200000000ULL
#define NODEID_SEQ_SPAN (1ULL << 31)
#define NODEID_COUNTER_BASE (1ULL << 63)

uint64_t fz_fid_nodeid(const struct nacre_fid *fid)
{
	if (fid->ver != 0 || fid->oid == 0 || fid->seq <= NODEID_SEQ_BASE ||
	    fid->seq - NODEID_SEQ_BASE >= NODEID_SEQ_SPAN)
		return 0;
	return (fid->seq - NODEID_SEQ_BASE) << 32 | fid->oid;
}

int fz_nodeid_fid(uint64_t ino, struct nacre_fid *fid)
{
	if (ino >= NODEID_COUNTER_BASE || (ino >> 32) == 0 || (uint32_t)ino == 0)
		return -ESTALE;
	fid->seq = (ino >> 32) + NODEID_SEQ_BASE;
	fid->oid = (uint32_t)ino;
	fid->ver = 0;
	return 0;
}

static size_t ino_hash(uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h ^ (h >> 32));
}

static void inode_init(struct fz_inode *in, const struct nacre_fid *fid)
{
	memset(in, 0, sizeof(*in));
	in->fid = *fid;
	in->parent = *fid;
	pthread_mutex_init(&in->lock, NULL);
}

int fz_itable_init(struct fz_itable *t, const struct nacre_fid *root)
{
	memset(t, 0, sizeof(*t));
	t->nbuckets = ITABLE_INITIAL;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	t->ibuckets = calloc(t->nbuckets, sizeof(*t->ibuckets));
	if (!t->buckets || !t->ibuckets) {
		free(t->buckets);
		free(t->ibuckets);
		t->buckets = t->ibuckets = NULL;
		return -ENOMEM;
	}
	t->next_ino = NODEID_COUNTER_BASE;
	pthread_mutex_init(&t->lock, NULL);
	inode_init(&t->root, root);
	t->root.ino = FUSE_ROOT_ID;
	/* The kernel holds the root without a lookup; never let forget reach zero. */
	t->root.nlookup = 2;
	t->buckets[fid_hash(root) & (t->nbuckets - 1)] = &t->root;
	t->count = 1;
	return 0;
}

void fz_itable_fini(struct fz_itable *t)
{
	size_t i;

	if (!t->buckets)
		return;
	for (i = 0; i < t->nbuckets; i++) {
		struct fz_inode *in = t->buckets[i];

		while (in) {
			struct fz_inode *next = in->hnext;

			pthread_mutex_destroy(&in->lock);
			free(in->dattr);
			if (in != &t->root)
				free(in);
			in = next;
		}
	}
	free(t->buckets);
	free(t->ibuckets);
	t->buckets = t->ibuckets = NULL;
	pthread_mutex_destroy(&t->lock);
}

/* Called with t->lock held. */
static struct fz_inode *find_ino(struct fz_itable *t, uint64_t ino)
{
	struct fz_inode *in = t->ibuckets[ino_hash(ino) & (t->nbuckets - 1)];

	while (in && in->ino != ino)
		in = in->inext;
	return in;
}

struct fz_inode *fz_inode_get(struct fz_mount *m, fuse_ino_t ino)
{
	struct fz_itable *t = &m->itab;
	struct fz_inode *in;

	if (ino == FUSE_ROOT_ID)
		return &t->root;
	pthread_mutex_lock(&t->lock);
	in = find_ino(t, ino);
	pthread_mutex_unlock(&t->lock);
	if (!in)
		LOG_RATELIMITED(LOG_LVL_ERR, "inode", "the kernel sent unknown inode %llu",
				(unsigned long long)ino);
	return in;
}

/* Doubles both bucket arrays; on ENOMEM keeps the old ones (chains just get longer). Called
 * with t->lock held. */
static void itable_grow(struct fz_itable *t)
{
	size_t n = t->nbuckets * 2, i;
	struct fz_inode **nb = calloc(n, sizeof(*nb));
	struct fz_inode **ni = calloc(n, sizeof(*ni));

	if (!nb || !ni) {
		free(nb);
		free(ni);
		return;
	}
	for (i = 0; i < t->nbuckets; i++) {
		struct fz_inode *in = t->buckets[i];

		while (in) {
			struct fz_inode *next = in->hnext;
			size_t b = fid_hash(&in->fid) & (n - 1);

			in->hnext = nb[b];
			nb[b] = in;
			in = next;
		}
		in = t->ibuckets[i];
		while (in) {
			struct fz_inode *next = in->inext;
			size_t b = ino_hash(in->ino) & (n - 1);

			in->inext = ni[b];
			ni[b] = in;
			in = next;
		}
	}
	free(t->buckets);
	free(t->ibuckets);
	t->buckets = nb;
	t->ibuckets = ni;
	t->nbuckets = n;
}

/* Links a new inode into both hashes. Called with t->lock held. */
static void insert_locked(struct fz_itable *t, struct fz_inode *in)
{
	size_t b = fid_hash(&in->fid) & (t->nbuckets - 1);
	size_t ib = ino_hash(in->ino) & (t->nbuckets - 1);

	in->hnext = t->buckets[b];
	t->buckets[b] = in;
	in->inext = t->ibuckets[ib];
	t->ibuckets[ib] = in;
	if (++t->count > t->nbuckets * 2)
		itable_grow(t);
}

int fz_inode_import(struct fz_mount *m, fuse_ino_t ino, const struct nacre_fid *fid,
		    const struct nacre_fid *parent, uint64_t nlookup)
{
	struct fz_itable *t = &m->itab;
	struct fz_inode *in;

	if (ino == FUSE_ROOT_ID) {
		if (!nacre_fid_eq(fid, &t->root.fid))
			return -EINVAL;
		/* never below the floor fz_itable_init set */
		t->root.nlookup = nlookup > 2 ? nlookup : 2;
		return 0;
	}
	if (ino == 0 || nlookup == 0)
		return -EINVAL;
	if (find_ino(t, ino))
		return -EEXIST;
	for (in = t->buckets[fid_hash(fid) & (t->nbuckets - 1)]; in; in = in->hnext)
		if (nacre_fid_eq(&in->fid, fid))
			return -EEXIST;
	in = malloc(sizeof(*in));
	if (!in)
		return -ENOMEM;
	inode_init(in, fid);
	in->ino = ino;
	in->nlookup = nlookup;
	in->parent = *parent;
	insert_locked(t, in);
	if (ino >= NODEID_COUNTER_BASE && ino >= t->next_ino)
		t->next_ino = ino + 1;
	return 0;
}

int fz_itable_walk(struct fz_mount *m, int (*fn)(struct fz_inode *in, void *arg), void *arg)
{
	struct fz_itable *t = &m->itab;
	int rc;

	pthread_mutex_lock(&t->lock);
	rc = fn(&t->root, arg);
	for (size_t i = 0; i < t->nbuckets && !rc; i++)
		for (struct fz_inode *in = t->buckets[i]; in && !rc; in = in->hnext)
			if (in != &t->root)
				rc = fn(in, arg);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

static fuse_ino_t find(struct fz_mount *m, const struct nacre_fid *fid, int stale)
{
	struct fz_itable *t = &m->itab;
	fuse_ino_t ino = 0;

	pthread_mutex_lock(&t->lock);
	for (struct fz_inode *in = t->buckets[fid_hash(fid) & (t->nbuckets - 1)]; in;
	     in = in->hnext) {
		if (nacre_fid_eq(&in->fid, fid)) {
			ino = in->ino;
			if (stale)
				fz_dattr_drop(in);
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return ino;
}

fuse_ino_t fz_inode_find(struct fz_mount *m, const struct nacre_fid *fid)
{
	return find(m, fid, 0);
}

fuse_ino_t fz_inode_find_stale(struct fz_mount *m, const struct nacre_fid *fid)
{
	return find(m, fid, 1);
}

struct fz_inode *fz_inode_ref(struct fz_mount *m, const struct nacre_fid *fid,
			      const struct nacre_fid *parent)
{
	struct fz_itable *t = &m->itab;
	struct fz_inode *in;
	size_t b;

	pthread_mutex_lock(&t->lock);
	b = fid_hash(fid) & (t->nbuckets - 1);
	for (in = t->buckets[b]; in; in = in->hnext)
		if (nacre_fid_eq(&in->fid, fid))
			break;
	if (!in) {
		in = malloc(sizeof(*in));
		if (!in) {
			pthread_mutex_unlock(&t->lock);
			return NULL;
		}
		inode_init(in, fid);
		in->ino = fz_fid_nodeid(fid);
		/* taken only by a counter an older version gave (an upgrade imported it) */
		if (!in->ino || find_ino(t, in->ino))
			in->ino = t->next_ino++;
		insert_locked(t, in);
	}
	in->nlookup++;
	if (parent && in != &t->root)
		in->parent = *parent;
	pthread_mutex_unlock(&t->lock);
	return in;
}

void fz_inode_forget(struct fz_mount *m, struct fz_inode *in, uint64_t n)
{
	struct fz_itable *t = &m->itab;
	struct fz_inode **pp;

	if (!in)
		return;
	pthread_mutex_lock(&t->lock);
	if (n > in->nlookup) {
		LOG_WARN("inode", "forget of %llu lookups, only %llu held",
			 (unsigned long long)n, (unsigned long long)in->nlookup);
		n = in->nlookup;
	}
	in->nlookup -= n;
	if (in->nlookup > 0 || in == &t->root) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	pp = &t->buckets[fid_hash(&in->fid) & (t->nbuckets - 1)];
	while (*pp && *pp != in)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = in->hnext;
	pp = &t->ibuckets[ino_hash(in->ino) & (t->nbuckets - 1)];
	while (*pp && *pp != in)
		pp = &(*pp)->inext;
	if (*pp)
		*pp = in->inext;
	t->count--;
	pthread_mutex_unlock(&t->lock);
	/* The kernel releases every file before it forgets the inode. */
	if (in->files)
		LOG_WARN("inode", "inode forgotten with open files");
	pthread_mutex_destroy(&in->lock);
	free(in->dattr);
	free(in);
}

int fz_inode_fid(struct fz_mount *m, fuse_ino_t ino, struct nacre_fid *fid)
{
	struct fz_itable *t = &m->itab;
	struct fz_inode *in;

	if (ino == FUSE_ROOT_ID) {
		*fid = t->root.fid;
		return 0;
	}
	pthread_mutex_lock(&t->lock);
	in = find_ino(t, ino);
	if (in)
		*fid = in->fid;
	pthread_mutex_unlock(&t->lock);
	return in ? 0 : fz_nodeid_fid(ino, fid);
}

void fz_inode_set_parent(struct fz_mount *m, struct fz_inode *in, const struct nacre_fid *parent)
{
	pthread_mutex_lock(&m->itab.lock);
	if (in != &m->itab.root)
		in->parent = *parent;
	pthread_mutex_unlock(&m->itab.lock);
}

struct nacre_fid fz_inode_parent(struct fz_mount *m, struct fz_inode *in)
{
	struct nacre_fid p;

	pthread_mutex_lock(&m->itab.lock);
	p = in->parent;
	pthread_mutex_unlock(&m->itab.lock);
	return p;
}

void fz_inode_add_file(struct fz_inode *in, struct fz_file *f)
{
	pthread_mutex_lock(&in->lock);
	f->prev = NULL;
	f->next = in->files;
	if (in->files)
		in->files->prev = f;
	in->files = f;
	pthread_mutex_unlock(&in->lock);
}

void fz_inode_del_file(struct fz_inode *in, struct fz_file *f)
{
	pthread_mutex_lock(&in->lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		in->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	f->next = f->prev = NULL;
	pthread_mutex_unlock(&in->lock);
}

void fz_inode_size_for_kernel(struct fz_inode *in, uint64_t *size)
{
	struct fz_file *f;
	uint64_t mds = *size;

	pthread_mutex_lock(&in->lock);
	for (f = in->files; f; f = f->next) {
		/* The kernel will ask these handles for what it is told is there. */
		if (!f->closing)
			nacre_file_size_seen(f->nf, mds);
		if (f->written_end > *size)
			*size = f->written_end;
	}
	in->kernel_size_valid = 1;
	in->kernel_size = *size;
	pthread_mutex_unlock(&in->lock);
}

int fz_inode_kernel_size_differs(struct fz_inode *in)
{
	int differs;

	pthread_mutex_lock(&in->lock);
	differs = !in->kernel_size_valid || !in->cache_valid || in->kernel_size != in->cache_size;
	pthread_mutex_unlock(&in->lock);
	return differs;
}

void fz_inode_clamp_size(struct fz_inode *in, uint64_t size)
{
	struct fz_file *f;

	pthread_mutex_lock(&in->lock);
	for (f = in->files; f; f = f->next)
		if (f->written_end > size)
			f->written_end = size;
	pthread_mutex_unlock(&in->lock);
}

void fz_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fz_mount *m = fz_mnt(req);

	fz_inode_forget(m, fz_inode_get(m, ino), nlookup);
	fuse_reply_none(req);
}

void fz_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fz_mount *m = fz_mnt(req);
	size_t i;

	for (i = 0; i < count; i++)
		fz_inode_forget(m, fz_inode_get(m, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}
