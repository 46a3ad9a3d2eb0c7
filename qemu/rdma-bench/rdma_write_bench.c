// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA WRITE throughput between two RDMA devices of this host, for
 * `make bench`: one doorbell per WQE against one per batch of WQEs.
 *
 * There is no user-space verbs provider for rsnic, so this small kernel
 * ULP stands in for perftest's ib_write_bw. On load it connects an RC QP
 * on the RDMA device of netdev @src to one on that of netdev @dst
 * (directly, no CM: both are local), posts
 * @count RDMA WRITEs of @size bytes, @batch work requests per
 * ib_post_send() call (the driver rings one doorbell per call), keeps at
 * most @depth outstanding, and prints the time taken. Every 32nd WR is
 * signalled whatever the batch, so the two modes differ only in
 * doorbells. It then stays loaded doing nothing; rmmod it.
 *
 * Not part of rsnic.ko: a benchmark tool, in C because it is an ib_core
 * client, which the Rust abstractions in rsnic do not cover.
 */

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

static char *src = "eth0";
module_param(src, charp, 0444);
MODULE_PARM_DESC(src, "netdev whose RDMA device writes");
static char *dst = "eth1";
module_param(dst, charp, 0444);
MODULE_PARM_DESC(dst, "netdev whose RDMA device is written to");
static unsigned int size = 4096;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "bytes per RDMA WRITE");
static unsigned int count = 4096;
module_param(count, uint, 0444);
MODULE_PARM_DESC(count, "RDMA WRITEs in all");
static unsigned int batch = 1;
module_param(batch, uint, 0444);
MODULE_PARM_DESC(batch, "work requests per ib_post_send (doorbell)");
static unsigned int depth = 128;
module_param(depth, uint, 0444);
MODULE_PARM_DESC(depth, "work requests outstanding at most");

#define SIGNAL_EVERY 32
#define MAX_BATCH 64
#define PORT 1

struct end {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	union ib_gid gid;
	u32 gid_index;
	u8 mac[ETH_ALEN];
	void *buf;
	u64 dma;
};

/* The first RoCEv2 GID with an IPv4 address. */
static int find_gid(struct end *e)
{
	u32 i;

	for (i = 0; i < e->dev->port_data[PORT].immutable.gid_tbl_len; i++) {
		const struct ib_gid_attr *attr = rdma_get_gid_attr(e->dev, PORT, i);
		bool found;

		if (IS_ERR(attr))
			continue;
		found = attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
			ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw);
		if (found) {
			e->gid = attr->gid;
			e->gid_index = i;
		}
		rdma_put_gid_attr(attr);
		if (found)
			return 0;
	}
	return -ENOENT;
}

static int open_end(struct end *e, const char *name, enum dma_data_direction dir)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = depth,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct net_device *ndev;
	int ret;

	ndev = dev_get_by_name(&init_net, name);
	if (!ndev) {
		pr_err("rdma_write_bench: no netdev %s\n", name);
		return -ENODEV;
	}
	e->dev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
	ether_addr_copy(e->mac, ndev->dev_addr);
	dev_put(ndev);
	if (!e->dev) {
		pr_err("rdma_write_bench: no RDMA device on %s\n", name);
		return -ENODEV;
	}
	ret = find_gid(e);
	if (ret) {
		pr_err("rdma_write_bench: %s has no RoCEv2 IPv4 GID\n", name);
		return ret;
	}
	e->pd = ib_alloc_pd(e->dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(e->pd))
		return PTR_ERR(e->pd);
	e->cq = ib_alloc_cq(e->dev, NULL, depth + 1, 0, IB_POLL_DIRECT);
	if (IS_ERR(e->cq))
		return PTR_ERR(e->cq);
	init.send_cq = e->cq;
	init.recv_cq = e->cq;
	e->qp = ib_create_qp(e->pd, &init);
	if (IS_ERR(e->qp))
		return PTR_ERR(e->qp);
	e->buf = kzalloc(size, GFP_KERNEL);
	if (!e->buf)
		return -ENOMEM;
	e->dma = ib_dma_map_single(e->dev, e->buf, size, dir);
	if (ib_dma_mapping_error(e->dev, e->dma)) {
		e->dma = 0;
		return -ENOMEM;
	}
	return 0;
}

static void close_end(struct end *e, enum dma_data_direction dir)
{
	if (e->dma)
		ib_dma_unmap_single(e->dev, e->dma, size, dir);
	kfree(e->buf);
	if (!IS_ERR_OR_NULL(e->qp))
		ib_destroy_qp(e->qp);
	if (!IS_ERR_OR_NULL(e->cq))
		ib_free_cq(e->cq);
	if (!IS_ERR_OR_NULL(e->pd))
		ib_dealloc_pd(e->pd);
	if (e->dev)
		ib_device_put(e->dev);
}

/* INIT, RTR towards @peer (at the other end of the cable), RTS. */
static int connect_end(struct end *e, struct end *peer)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = PORT,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE,
	};
	int ret;

	ret = ib_modify_qp(e->qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, PORT);
	rdma_ah_set_grh(&a.ah_attr, &peer->gid, 0, e->gid_index, 64, 0);
	/* Kernel ULPs resolve the next hop themselves: the cable's other end. */
	ether_addr_copy(a.ah_attr.roce.dmac, peer->mac);
	ret = ib_modify_qp(e->qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			   IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(e->qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

/* Waits for one signalled completion; -EIO if it failed. */
static int reap(struct end *e, unsigned int *done)
{
	unsigned long deadline = jiffies + 10 * HZ;
	struct ib_wc wc;
	int n;

	while ((n = ib_poll_cq(e->cq, 1, &wc)) == 0) {
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		cond_resched();
	}
	if (n < 0)
		return n;
	if (wc.status != IB_WC_SUCCESS) {
		pr_err("rdma_write_bench: completion %s\n", ib_wc_status_msg(wc.status));
		return -EIO;
	}
	*done += SIGNAL_EVERY;
	return 0;
}

static int post_all(struct end *a, struct end *b, struct ib_rdma_wr *wrs)
{
	struct ib_sge sge = {
		.addr = a->dma,
		.length = size,
		.lkey = a->pd->local_dma_lkey,
	};
	unsigned int posted = 0, done = 0, i;
	const struct ib_send_wr *bad;
	u64 start, ns;
	int ret;

	for (i = 0; i < batch; i++) {
		wrs[i].wr.opcode = IB_WR_RDMA_WRITE;
		wrs[i].wr.sg_list = &sge;
		wrs[i].wr.num_sge = 1;
		wrs[i].remote_addr = b->dma;
		wrs[i].rkey = b->pd->unsafe_global_rkey;
		wrs[i].wr.next = i + 1 < batch ? &wrs[i + 1].wr : NULL;
	}
	start = ktime_get_ns();
	while (posted < count) {
		while (posted - done + batch > depth) {
			ret = reap(a, &done);
			if (ret)
				return ret;
		}
		for (i = 0; i < batch; i++) {
			wrs[i].wr.wr_id = posted + i;
			wrs[i].wr.send_flags =
				(posted + i + 1) % SIGNAL_EVERY == 0 ? IB_SEND_SIGNALED : 0;
		}
		ret = ib_post_send(a->qp, &wrs[0].wr, &bad);
		if (ret)
			return ret;
		posted += batch;
	}
	while (done < posted) {
		ret = reap(a, &done);
		if (ret)
			return ret;
	}
	ns = ktime_get_ns() - start;
	pr_info("rdma_write_bench: %s/%s->%s/%s batch=%u size=%u count=%u doorbells=%u ns=%llu wqe_per_s=%llu mib_per_s=%llu\n",
		src, dev_name(&a->dev->dev), dst, dev_name(&b->dev->dev), batch, size, count, count / batch, ns,
		div64_u64((u64)count * NSEC_PER_SEC, ns),
		div64_u64((u64)count * size * NSEC_PER_SEC, ns << 20));
	return 0;
}

static int run(struct end *a, struct end *b)
{
	struct ib_rdma_wr *wrs = kcalloc(batch, sizeof(*wrs), GFP_KERNEL);
	int ret;

	if (!wrs)
		return -ENOMEM;
	ret = post_all(a, b, wrs);
	kfree(wrs);
	return ret;
}

static int __init rdma_write_bench_init(void)
{
	struct end a = {}, b = {};
	int ret;

	if (!batch || batch > MAX_BATCH || count % SIGNAL_EVERY || count % batch ||
	    (SIGNAL_EVERY % batch && batch % SIGNAL_EVERY) || depth < batch + SIGNAL_EVERY) {
		pr_err("rdma_write_bench: batch 1..%u dividing count, count a multiple of %u, depth >= batch + %u\n",
		       MAX_BATCH, SIGNAL_EVERY, SIGNAL_EVERY);
		return -EINVAL;
	}
	ret = open_end(&a, src, DMA_TO_DEVICE);
	if (!ret)
		ret = open_end(&b, dst, DMA_FROM_DEVICE);
	if (!ret)
		ret = connect_end(&a, &b);
	if (!ret)
		ret = connect_end(&b, &a);
	if (!ret)
		ret = run(&a, &b);
	if (ret)
		pr_err("rdma_write_bench: %s->%s failed: %d\n", src, dst, ret);
	close_end(&b, DMA_FROM_DEVICE);
	close_end(&a, DMA_TO_DEVICE);
	return ret;
}

static void __exit rdma_write_bench_exit(void)
{
}

module_init(rdma_write_bench_init);
module_exit(rdma_write_bench_exit);
MODULE_DESCRIPTION("RDMA WRITE throughput, one doorbell per WQE vs per batch");
MODULE_LICENSE("GPL");
