// SPDX-License-Identifier: GPL-2.0
/*
 * UD multicast through libibverbs (ibv_attach_mcast, ibv_detach_mcast):
 * rdma_mcast.sh's and rdma_rxe.sh's tool. pyverbs cannot attach a QP to a
 * group, so this is C, built in the guest against rdma-core's headers.
 *
 * Usage: rdma_mcast IBDEV GID_INDEX CASE [ARGS]
 *   local            two UD QPs in group 239.255.1.1 each receive the 20
 *                    SENDs a third QP of the device sends to it; detached,
 *                    one of them receives nothing more, the other all
 *   refusals         an RC QP, a unicast GID and a detach of a QP not in
 *                    the group are refused (EINVAL); a second attach is
 *                    no error, and one detach undoes both
 *   limits           max_mcast_qp_attach QPs join one group, one more is
 *                    ENOMEM; one QP joins max_mcast_grp groups, one more is
 *                    ENOMEM; max_total_mcast_qp_attach attachments, one
 *                    more (to a new group) is ENOMEM; then a SEND to a
 *                    full group still reaches every member
 *   recv GROUP N     joins 239.255.GROUP (one byte: 239.255.1.GROUP),
 *                    prints "ready", and receives N SENDs, checking each
 *   send GROUP N     sends N SENDs to it, 20 ms apart
 * Exit status 0 when the case holds; every step is printed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define QKEY 0x01234567u
#define MSG 64
#define SLOT (40 + MSG)
#define DEPTH 64
#define MCAST_QPN 0xffffffu

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static int gid_index;
static union ibv_gid own_gid;

#define fail(...)                                                   \
	do {                                                        \
		fprintf(stderr, "rdma_mcast: " __VA_ARGS__);        \
		fputc('\n', stderr);                                \
		exit(1);                                            \
	} while (0)

/* A UD QP with its own CQ and a buffer of DEPTH receive slots. */
struct ud {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	unsigned int posted;
};

static void group_gid(union ibv_gid *gid, unsigned int group)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	gid->raw[12] = 239;
	gid->raw[13] = 255;
	gid->raw[14] = 1 + group / 256;
	gid->raw[15] = group % 256;
}

static void to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		fail("QP %u to INIT: %s", qp->qp_num, strerror(errno));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		fail("QP %u to RTR: %s", qp->qp_num, strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		fail("QP %u to RTS: %s", qp->qp_num, strerror(errno));
}

static void ud_open(struct ud *u, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.qp_type = type,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	u->cq = ibv_create_cq(ctx, 2 * DEPTH, NULL, NULL, 0);
	if (!u->cq)
		fail("create CQ: %s", strerror(errno));
	init.send_cq = init.recv_cq = u->cq;
	u->qp = ibv_create_qp(pd, &init);
	if (!u->qp)
		fail("create QP: %s", strerror(errno));
	u->buf = calloc(DEPTH, SLOT);
	u->mr = ibv_reg_mr(pd, u->buf, DEPTH * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!u->buf || !u->mr)
		fail("MR: %s", strerror(errno));
	u->posted = 0;
	if (type == IBV_QPT_UD)
		to_rts(u->qp);
}

static void ud_close(struct ud *u)
{
	ibv_destroy_qp(u->qp);
	ibv_destroy_cq(u->cq);
	ibv_dereg_mr(u->mr);
	free(u->buf);
}

static void post_recvs(struct ud *u, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++, u->posted++) {
		unsigned int slot = u->posted % DEPTH;
		struct ibv_sge sge = {
			.addr = (uintptr_t)(u->buf + slot * SLOT),
			.length = SLOT, .lkey = u->mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(u->qp, &wr, &bad))
			fail("post recv: %s", strerror(errno));
	}
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The next completion of `u`'s CQ, or 0 after `timeout` seconds. */
static int next_wc(struct ud *u, struct ibv_wc *wc, double timeout)
{
	double end = now() + timeout;

	while (now() < end) {
		int n = ibv_poll_cq(u->cq, 1, wc);

		if (n < 0)
			fail("poll CQ: %d", n);
		if (n)
			return 1;
		usleep(200);
	}
	return 0;
}

static void fill(char *msg, unsigned int seq, unsigned int qpn)
{
	memset(msg, 0, MSG);
	snprintf(msg, MSG, "mcast %u from QP %u", seq, qpn);
}

/*
 * Receives `n` SENDs of `sender` (any QP if 0) on `u`, each its seq;
 * says so if `who` is not NULL.
 */
static void receive(struct ud *u, unsigned int n, unsigned int sender,
		    const char *who)
{
	const char *name = who ? who : "a member";

	for (unsigned int seq = 0; seq < n; seq++) {
		struct ibv_wc wc;
		char want[MSG];
		const char *got;

		if (!next_wc(u, &wc, 10))
			fail("%s: %u of %u received, then none in 10 s", name,
			     seq, n);
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
			fail("%s: completion status %s, opcode %d", name,
			     ibv_wc_status_str(wc.status), wc.opcode);
		if (!(wc.wc_flags & IBV_WC_GRH) || wc.byte_len != SLOT)
			fail("%s: flags %#x, %u bytes (want a GRH and %u)", name,
			     wc.wc_flags, wc.byte_len, SLOT);
		got = u->buf + wc.wr_id * SLOT + 40;
		fill(want, seq, sender ? sender : wc.src_qp);
		if (memcmp(got, want, MSG))
			fail("%s: got \"%.40s\", want \"%s\"", name, got, want);
		if (sender && wc.src_qp != sender)
			fail("%s: from QP %u, want %u", name, wc.src_qp, sender);
	}
	if (who)
		printf("# %s: %u SENDs received in order, data and source QP right\n",
		       who, n);
}

static void none_more(struct ud *u, const char *who)
{
	struct ibv_wc wc;

	if (next_wc(u, &wc, 0.5))
		fail("%s: a completion (status %s) after it left the group", who,
		     ibv_wc_status_str(wc.status));
	printf("# %s: nothing received in 0.5 s\n", who);
}

static void send_to(struct ud *u, struct ibv_ah *ah, unsigned int n,
		    useconds_t gap)
{
	for (unsigned int seq = 0; seq < n; seq++) {
		char *msg = u->buf;
		struct ibv_sge sge = { .addr = (uintptr_t)msg, .length = MSG,
				       .lkey = u->mr->lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = MCAST_QPN,
				   .remote_qkey = QKEY },
		}, *bad;
		struct ibv_wc wc;

		fill(msg, seq, u->qp->qp_num);
		if (ibv_post_send(u->qp, &wr, &bad))
			fail("post send: %s", strerror(errno));
		if (!next_wc(u, &wc, 10) || wc.status != IBV_WC_SUCCESS)
			fail("send %u did not complete", seq);
		if (gap)
			usleep(gap);
	}
	printf("# QP %u: %u SENDs to the group completed\n", u->qp->qp_num, n);
}

static struct ibv_ah *group_ah(unsigned int group)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .sgid_index = gid_index, .hop_limit = 64 },
	};
	struct ibv_ah *ah;

	group_gid(&a.grh.dgid, group);
	ah = ibv_create_ah(pd, &a);
	if (!ah)
		fail("AH for the group: %s", strerror(errno));
	return ah;
}

static int attach(struct ud *u, unsigned int group)
{
	union ibv_gid gid;

	group_gid(&gid, group);
	return ibv_attach_mcast(u->qp, &gid, 0);
}

static int detach(struct ud *u, unsigned int group)
{
	union ibv_gid gid;

	group_gid(&gid, group);
	return ibv_detach_mcast(u->qp, &gid, 0);
}

static void must(int ret, const char *what)
{
	if (ret)
		fail("%s: %s", what, strerror(ret));
}

static void refused(int ret, int want, const char *what)
{
	if (ret != want)
		fail("%s: %s, want %s", what, ret ? strerror(ret) : "accepted",
		     strerror(want));
	printf("# %s: refused, %s\n", what, strerror(ret));
}

static void case_local(void)
{
	struct ud s, r1, r2;
	struct ibv_ah *ah;

	ud_open(&s, IBV_QPT_UD);
	ud_open(&r1, IBV_QPT_UD);
	ud_open(&r2, IBV_QPT_UD);
	must(attach(&r1, 1), "attach QP 1");
	must(attach(&r2, 1), "attach QP 2");
	post_recvs(&r1, 40);
	post_recvs(&r2, 40);
	ah = group_ah(1);
	send_to(&s, ah, 20, 0);
	receive(&r1, 20, s.qp->qp_num, "member 1");
	receive(&r2, 20, s.qp->qp_num, "member 2");
	must(detach(&r2, 1), "detach QP 2");
	send_to(&s, ah, 20, 0);
	receive(&r1, 20, s.qp->qp_num, "member 1, still in the group");
	none_more(&r2, "member 2, detached");
	ibv_destroy_ah(ah);
	ud_close(&s);
	ud_close(&r1);
	ud_close(&r2);
}

static void case_refusals(void)
{
	struct ud rc, u;

	ud_open(&rc, IBV_QPT_RC);
	ud_open(&u, IBV_QPT_UD);
	refused(attach(&rc, 1), EINVAL, "an RC QP joining a group");
	refused(ibv_attach_mcast(u.qp, &own_gid, 0), EINVAL,
		"a UD QP joining a unicast GID");
	refused(detach(&u, 1), EINVAL, "a detach of a QP not in the group");
	must(attach(&u, 1), "attach");
	must(attach(&u, 1), "attach again");
	must(detach(&u, 1), "detach");
	refused(detach(&u, 1), EINVAL, "a second detach");
	printf("# attach twice, detach once: the QP is out\n");
	ud_close(&rc);
	ud_close(&u);
}

static void case_limits(void)
{
	struct ibv_device_attr a;
	unsigned int per, groups, total, full, i, g;
	struct ud *qps, s;
	struct ibv_ah *ah;

	must(ibv_query_device(ctx, &a), "query device");
	per = a.max_mcast_qp_attach;
	groups = a.max_mcast_grp;
	total = a.max_total_mcast_qp_attach;
	printf("# max_mcast_grp %u, max_mcast_qp_attach %u, max_total_mcast_qp_attach %u\n",
	       groups, per, total);
	if (!per || !groups || total % per || total / per + 1 > groups)
		fail("limits this check cannot reach one by one");
	qps = calloc(per + 1, sizeof(*qps));
	for (i = 0; i <= per; i++)
		ud_open(&qps[i], IBV_QPT_UD);

	for (i = 0; i < per; i++)
		must(attach(&qps[i], 0), "attach up to max_mcast_qp_attach");
	refused(attach(&qps[per], 0), ENOMEM,
		"QP max_mcast_qp_attach + 1 joining one group");
	for (i = 0; i < per; i++)
		must(detach(&qps[i], 0), "detach");

	for (g = 0; g < groups; g++)
		must(attach(&qps[0], g), "attach up to max_mcast_grp");
	refused(attach(&qps[0], groups), ENOMEM, "group max_mcast_grp + 1");
	for (g = 0; g < groups; g++)
		must(detach(&qps[0], g), "detach");

	full = total / per;
	for (g = 0; g < full; g++)
		for (i = 0; i < per; i++)
			must(attach(&qps[i], g),
			     "attach up to max_total_mcast_qp_attach");
	refused(attach(&qps[0], full), ENOMEM,
		"attachment max_total_mcast_qp_attach + 1, to a new group");
	printf("# %u QPs in each of %u groups\n", per, full);

	/* Full everywhere, the groups still work. */
	ud_open(&s, IBV_QPT_UD);
	ah = group_ah(0);
	for (i = 0; i < per; i++)
		post_recvs(&qps[i], 1);
	send_to(&s, ah, 1, 0);
	for (i = 0; i < per; i++)
		receive(&qps[i], 1, s.qp->qp_num, NULL);
	printf("# each of the %u members of the full group received it\n", per);
	ibv_destroy_ah(ah);
	ud_close(&s);
	for (i = 0; i <= per; i++)
		ud_close(&qps[i]);
	free(qps);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	const char *what;
	int i;

	if (argc < 4)
		fail("usage: rdma_mcast IBDEV GID_INDEX CASE [GROUP N]");
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			break;
	if (!list || !list[i])
		fail("no device %s", argv[1]);
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		fail("open %s: %s", argv[1], strerror(errno));
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		fail("PD: %s", strerror(errno));
	gid_index = atoi(argv[2]);
	must(ibv_query_gid(ctx, 1, gid_index, &own_gid), "query GID");
	what = argv[3];
	if (!strcmp(what, "local")) {
		case_local();
	} else if (!strcmp(what, "refusals")) {
		case_refusals();
	} else if (!strcmp(what, "limits")) {
		case_limits();
	} else if ((!strcmp(what, "recv") || !strcmp(what, "send")) &&
		   argc == 6) {
		unsigned int group = atoi(argv[4]), n = atoi(argv[5]);
		struct ud u;

		if (!n || n > DEPTH)
			fail("N is 1 to %u", DEPTH);
		ud_open(&u, IBV_QPT_UD);
		if (what[0] == 'r') {
			must(attach(&u, group), "attach");
			post_recvs(&u, n);
			printf("ready\n");
			receive(&u, n, 0, "member");
			must(detach(&u, group), "detach");
		} else {
			struct ibv_ah *ah = group_ah(group);

			send_to(&u, ah, n, 20000);
			ibv_destroy_ah(ah);
		}
		ud_close(&u);
	} else {
		fail("unknown case %s", what);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
