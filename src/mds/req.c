/* req.c - the current request (see req.h). */
#include "mds/req.h"

__thread struct mds_req *mds_req_current;

const struct mds_req *mds_req_of(const struct mds_txn *txn)
{
	return txn ? mds_txn_owner(txn) : NULL;
}
