// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device memory (ibv_alloc_dm): an allocation of the card's own memory,
 * mapped into the process (loads and stores reach the card directly) at
 * the offset the kernel gives each handle (rsnic-abi.h), and registered
 * as a zero-based memory region for RDMA (ibv_reg_dm_mr).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <kernel-abi/rsnic-abi.h>
#include "rsnic.h"

struct rsnic_dm {
	struct verbs_dm vdm;
	volatile uint32_t *map;	/* the allocation, mapped uncached */
	size_t map_len;		/* whole pages */
	size_t len;		/* bytes asked for: what may be copied */
};

static struct rsnic_dm *to_rdm(struct ibv_dm *dm)
{
	return container_of(dm, struct rsnic_dm, vdm.dm);
}

/* The card takes device memory in aligned 32-bit words, as mlx5's does. */
static int rsnic_dm_range(struct rsnic_dm *dm, uint64_t offset, size_t length)
{
	if ((offset | length) & 3 || offset > dm->len ||
	    length > dm->len - offset)
		return EINVAL;
	return 0;
}

static int rsnic_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t offset,
			      const void *host_addr, size_t length)
{
	struct rsnic_dm *dm = to_rdm(ibdm);
	const uint8_t *src = host_addr;
	size_t i;
	int ret;

	ret = rsnic_dm_range(dm, offset, length);
	if (ret)
		return ret;
	for (i = 0; i < length; i += 4) {
		uint32_t word;

		memcpy(&word, src + i, 4);
		dm->map[(offset + i) / 4] = word;
	}
	/*
	 * Stores to a BAR are posted; a load from the same BAR returns only
	 * once they reached the card, so what the peer reads next (an RDMA
	 * READ, a SEND from the region) is what was copied.
	 */
	if (length)
		(void)dm->map[offset / 4];
	return 0;
}

static int rsnic_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
				uint64_t offset, size_t length)
{
	struct rsnic_dm *dm = to_rdm(ibdm);
	uint8_t *dst = host_addr;
	size_t i;
	int ret;

	ret = rsnic_dm_range(dm, offset, length);
	if (ret)
		return ret;
	for (i = 0; i < length; i += 4) {
		uint32_t word = dm->map[(offset + i) / 4];

		memcpy(dst + i, &word, 4);
	}
	return 0;
}

struct ibv_dm *rsnic_alloc_dm(struct ibv_context *context,
			      struct ibv_alloc_dm_attr *attr)
{
	long page = sysconf(_SC_PAGESIZE);
	struct rsnic_dm *dm;
	void *map;
	int ret;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_dm(context, attr, &dm->vdm, NULL);
	if (ret) {
		free(dm);
		errno = ret;
		return NULL;
	}
	dm->len = attr->length;
	dm->map_len = (attr->length + page - 1) / page * page;
	map = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		   context->cmd_fd,
		   (off_t)RSNIC_DM_MMAP_PGOFF((uint64_t)dm->vdm.handle) * page);
	if (map == MAP_FAILED) {
		ret = errno;
		ibv_cmd_free_dm(&dm->vdm);
		free(dm);
		errno = ret;
		return NULL;
	}
	dm->map = map;
	dm->vdm.dm.memcpy_to_dm = rsnic_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = rsnic_memcpy_from_dm;
	return &dm->vdm.dm;
}

int rsnic_free_dm(struct ibv_dm *ibdm)
{
	struct rsnic_dm *dm = to_rdm(ibdm);
	int ret;

	ret = ibv_cmd_free_dm(&dm->vdm);
	if (ret)
		return ret;
	munmap((void *)dm->map, dm->map_len);
	free(dm);
	return 0;
}

struct ibv_mr *rsnic_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			       uint64_t offset, size_t length,
			       unsigned int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_reg_dm_mr(pd, &to_rdm(ibdm)->vdm, offset, length, access,
				vmr, NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}
