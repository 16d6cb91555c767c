/* test_fuse_tables.c - nacre-mount's inode and handle tables: node ids are FIDs folded
 * into 64 bits, the same after a forget and in any process, and unfold to their FID; a FID
 * that does not fold gets a counter, never reused; numbers imported from a previous process
 * (an upgrade, counters of an older version included) are served as they were. Handle
 * numbers are counters. */
#include <errno.h>
#include <stdlib.h>

#include "fuse/fz.h"
#include "unit.h"

static struct nacre_fid fid(uint32_t oid)
{
	struct nacre_fid f = {0x200000400ULL, oid, 0};
	return f;
}

static void test_inode_numbers(void)
{
	struct fz_mount m;
	struct nacre_fid root = {0x200000007ULL, 1, 0}, a = fid(1), b = fid(2);

	memset(&m, 0, sizeof(m));
	CHECK_EQ(fz_itable_init(&m.itab, &root), 0);
	CHECK(fz_inode_get(&m, FUSE_ROOT_ID) == &m.itab.root);
	struct fz_inode *ia = fz_inode_ref(&m, &a, &root);
	struct fz_inode *ib = fz_inode_ref(&m, &b, &root);
	CHECK(ia && ib && ia != ib);
	CHECK(ia->ino != FUSE_ROOT_ID && ib->ino != FUSE_ROOT_ID && ia->ino != ib->ino);
	CHECK(fz_inode_ref(&m, &a, NULL) == ia); /* one FID, one inode */
	CHECK_EQ(ia->nlookup, 2);
	CHECK(fz_inode_get(&m, ia->ino) == ia);
	uint64_t old = ia->ino;
	CHECK_EQ(old, (0x400ULL << 32) | 1); /* (seq - 0x200000000) << 32 | oid */
	fz_inode_forget(&m, ia, 2);
	CHECK(fz_inode_get(&m, old) == NULL);
	/* forgotten, its number still names its FID (a file handle holds it) */
	struct nacre_fid back;
	CHECK_EQ(fz_inode_fid(&m, old, &back), 0);
	CHECK(nacre_fid_eq(&back, &a));
	ia = fz_inode_ref(&m, &a, NULL);
	CHECK_EQ(ia->ino, old); /* the same number again */
	CHECK_EQ(fz_inode_fid(&m, FUSE_ROOT_ID, &back), 0);
	CHECK(nacre_fid_eq(&back, &root));
	/* FIDs that do not fold: a counter from 2^63, never reused, unknown once forgotten */
	struct nacre_fid odd[] = {{0x200000400ULL, 9, 1}, {0x100000000ULL, 9, 0},
				  {0x200000000ULL + (1ULL << 31), 9, 0}, {0x200000400ULL, 0, 0}};
	uint64_t last = 0;
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		CHECK_EQ(fz_fid_nodeid(&odd[i]), 0);
		struct fz_inode *io = fz_inode_ref(&m, &odd[i], NULL);
		CHECK(io && io->ino >= (1ULL << 63) && io->ino > last);
		last = io->ino;
		fz_inode_forget(&m, io, 1);
		CHECK_EQ(fz_inode_fid(&m, last, &back), -ESTALE);
		io = fz_inode_ref(&m, &odd[i], NULL);
		CHECK(io->ino > last);
		last = io->ino;
	}
	/* unfolding: every folded number, nothing else */
	struct nacre_fid far = {0x200000000ULL + (1ULL << 31) - 1, UINT32_MAX, 0};
	CHECK_EQ(fz_nodeid_fid(fz_fid_nodeid(&far), &back), 0);
	CHECK(nacre_fid_eq(&back, &far) && fz_fid_nodeid(&far) < (1ULL << 63));
	CHECK_EQ(fz_nodeid_fid(5, &back), -ESTALE);           /* an old counter */
	CHECK_EQ(fz_nodeid_fid(7ULL << 32, &back), -ESTALE);  /* oid 0 */
	CHECK_EQ(fz_nodeid_fid(1ULL << 63, &back), -ESTALE);  /* a counter */
	/* many inodes: the tables grow and every number still finds its inode */
	uint64_t inos[5000];
	for (uint32_t i = 0; i < 5000; i++) {
		struct nacre_fid f = fid(100 + i);
		inos[i] = fz_inode_ref(&m, &f, NULL)->ino;
	}
	int ok = 1;
	for (uint32_t i = 0; i < 5000; i++) {
		struct fz_inode *in = fz_inode_get(&m, inos[i]);
		ok &= in && in->fid.oid == 100 + i;
	}
	CHECK(ok);
	fz_itable_fini(&m.itab);
}

static void test_inode_import(void)
{
	struct fz_mount m;
	struct nacre_fid root = {0x200000007ULL, 1, 0}, a = fid(1), b = fid(2), c = fid(3);

	memset(&m, 0, sizeof(m));
	CHECK_EQ(fz_itable_init(&m.itab, &root), 0);
	CHECK_EQ(fz_inode_import(&m, FUSE_ROOT_ID, &root, &root, 5), 0);
	CHECK_EQ(m.itab.root.nlookup, 5);
	CHECK_EQ(fz_inode_import(&m, FUSE_ROOT_ID, &a, &root, 5), -EINVAL); /* another root */
	CHECK_EQ(fz_inode_import(&m, 4000, &a, &root, 3), 0);
	CHECK_EQ(fz_inode_import(&m, 4000, &b, &root, 1), -EEXIST);
	CHECK_EQ(fz_inode_import(&m, 4001, &a, &root, 1), -EEXIST);
	CHECK_EQ(fz_inode_import(&m, 17, &b, &a, 1), 0);
	struct fz_inode *ia = fz_inode_get(&m, 4000);
	CHECK(ia && nacre_fid_eq(&ia->fid, &a) && ia->nlookup == 3);
	CHECK(fz_inode_ref(&m, &a, NULL) == ia);
	struct fz_inode *ic = fz_inode_ref(&m, &c, NULL);
	CHECK(ic && ic->ino == fz_fid_nodeid(&c)); /* new inodes fold, whatever came before */
	struct nacre_fid p = fz_inode_parent(&m, fz_inode_get(&m, 17));
	CHECK(nacre_fid_eq(&p, &a));
	/* a forgotten imported counter names nothing any more */
	struct nacre_fid back;
	CHECK_EQ(fz_inode_fid(&m, 17, &back), 0);
	fz_inode_forget(&m, fz_inode_get(&m, 17), 1);
	CHECK_EQ(fz_inode_fid(&m, 17, &back), -ESTALE);
	fz_itable_fini(&m.itab);
}

static void test_handles(void)
{
	struct fz_mount m;
	int x, y, z;
	uint64_t h1, h2;

	memset(&m, 0, sizeof(m));
	CHECK_EQ(fz_htable_init(&m.htab), 0);
	CHECK_EQ(fz_handle_add(&m, FZ_H_FILE, &x, &h1), 0);
	CHECK_EQ(fz_handle_add(&m, FZ_H_DIR, &y, &h2), 0);
	CHECK(h1 != 0 && h2 != 0 && h1 != h2);
	CHECK(fz_handle_get(&m, h1, FZ_H_FILE) == &x);
	CHECK(fz_handle_get(&m, h1, FZ_H_DIR) == NULL); /* kinds are not confused */
	CHECK(fz_handle_get(&m, h2, FZ_H_DIR) == &y);
	CHECK(fz_handle_get(&m, 0, FZ_H_FILE) == NULL);
	CHECK(fz_handle_del(&m, h1, FZ_H_FILE) == &x);
	CHECK(fz_handle_get(&m, h1, FZ_H_FILE) == NULL);
	CHECK_EQ(fz_handle_import(&m, 900, FZ_H_FILE, &z), 0);
	CHECK_EQ(fz_handle_import(&m, 900, FZ_H_FILE, &x), -EEXIST);
	CHECK_EQ(fz_handle_import(&m, 0, FZ_H_FILE, &x), -EINVAL);
	CHECK(fz_handle_get(&m, 900, FZ_H_FILE) == &z);
	CHECK_EQ(fz_handle_add(&m, FZ_H_FILE, &x, &h1), 0);
	CHECK(h1 > 900); /* new numbers continue above the imported ones */
	fz_htable_fini(&m.htab);
}

int main(void)
{
	test_inode_numbers();
	test_inode_import();
	test_handles();
	return unit_done();
}
