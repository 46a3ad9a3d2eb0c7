// SPDX-License-Identifier: GPL-2.0
/*
 * zc_rx: one TCP stream received the normal way (recv() into a buffer)
 * or zero-copy (io_uring zcrx: the payload lands in a user area the
 * card's RX queue fills, the receiver hands each buffer back unread).
 * Same loop, same batching (one io_uring wait per batch of completions,
 * one recv() per 256 KiB), so the difference is the copy. The receiver
 * does not touch the data in either mode; what is measured is what it
 * costs to get the bytes into the process.
 *
 *   zc_rx -s -p PORT [-i IFNAME -q QUEUE]   receive until the peer closes
 *   zc_rx -c HOST -p PORT -n BYTES           send BYTES of zeroes
 *
 * The server prints one JSON line: mode, bytes, seconds (first byte to
 * EOF) and its own CPU seconds (user + system, getrusage), in which the
 * copy of recv() is counted (it runs in the receiver's syscalls).
 * Needs the flow on QUEUE (ethtool -N) and header/data split with
 * hds-thresh 0 for -i/-q, as the kernel's iou-zcrx test does.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <error.h>
#include <liburing.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256 * 1024)
#define AREA_PAGES 8192
#define RQ_ENTRIES 4096
#define DATA_ACCEPT 1
#define DATA_RECV 2

static const char *cfg_host;
static const char *cfg_ifname;
static int cfg_port = 5300;
static int cfg_queue = -1;
static long long cfg_bytes;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static struct sockaddr_in6 addr_of(const char *host)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(cfg_port) };

	if (host && inet_pton(AF_INET6, host, &a.sin6_addr) != 1)
		error(1, 0, "not an IPv6 address: %s", host);
	if (!host)
		a.sin6_addr = in6addr_any;
	return a;
}

static int listen_one(void)
{
	struct sockaddr_in6 a = addr_of(NULL);
	int one = 1, fd;

	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1))
		error(1, errno, "listen on port %d", cfg_port);
	return fd;
}

static void report(const char *mode, long long bytes, double t0, double t1, double c0)
{
	printf("{\"mode\": \"%s\", \"bytes\": %lld, \"seconds\": %.6f, \"rx_cpu_s\": %.6f}\n",
	       mode, bytes, t1 - t0, cpu_seconds() - c0);
}

/* recv() into one buffer until EOF. */
static void serve_socket(void)
{
	int lfd = listen_one(), fd;
	long long got = 0;
	double t0 = 0, c0 = 0;
	char *buf = malloc(CHUNK);
	ssize_t n;

	if (!buf)
		error(1, 0, "malloc");
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		error(1, errno, "accept");
	while ((n = recv(fd, buf, CHUNK, 0)) > 0) {
		if (!got) {
			t0 = now();
			c0 = cpu_seconds();
		}
		got += n;
	}
	if (n < 0)
		error(1, errno, "recv");
	report("socket", got, t0, now(), c0);
}

/* The zcrx area, its refill ring, and where the refill ring's tail is. */
struct zc {
	void *area;
	struct io_uring_zcrx_rq rq;
	uint64_t area_token;
};

static void zc_register(struct io_uring *ring, struct zc *zc)
{
	size_t page = sysconf(_SC_PAGESIZE), area_len = AREA_PAGES * page;
	size_t rq_len = page + RQ_ENTRIES * sizeof(struct io_uring_zcrx_rqe);
	unsigned int ifindex = if_nametoindex(cfg_ifname);
	void *rq_mem;
	int ret;

	if (!ifindex)
		error(1, 0, "no interface %s", cfg_ifname);
	zc->area = mmap(NULL, area_len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	rq_len = (rq_len + page - 1) & ~(page - 1);
	rq_mem = mmap(NULL, rq_len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (zc->area == MAP_FAILED || rq_mem == MAP_FAILED)
		error(1, errno, "mmap");

	struct io_uring_region_desc region = {
		.size = rq_len,
		.user_addr = (uint64_t)(uintptr_t)rq_mem,
		.flags = IORING_MEM_REGION_TYPE_USER,
	};
	struct io_uring_zcrx_area_reg area = {
		.addr = (uint64_t)(uintptr_t)zc->area,
		.len = area_len,
	};
	struct io_uring_zcrx_ifq_reg reg = {
		.if_idx = ifindex,
		.if_rxq = cfg_queue,
		.rq_entries = RQ_ENTRIES,
		.area_ptr = (uint64_t)(uintptr_t)&area,
		.region_ptr = (uint64_t)(uintptr_t)&region,
	};

	ret = io_uring_register_ifq(ring, &reg);
	if (ret)
		error(1, -ret, "io_uring_register_ifq(%s, queue %d)", cfg_ifname, cfg_queue);
	zc->rq.khead = (unsigned int *)((char *)rq_mem + reg.offsets.head);
	zc->rq.ktail = (unsigned int *)((char *)rq_mem + reg.offsets.tail);
	zc->rq.rqes = (struct io_uring_zcrx_rqe *)((char *)rq_mem + reg.offsets.rqes);
	zc->rq.rq_tail = 0;
	zc->rq.ring_entries = reg.rq_entries;
	zc->area_token = area.rq_area_token;
}

static void zc_arm(struct io_uring *ring, int fd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_rw(IORING_OP_RECV_ZC, sqe, fd, NULL, 0, 0);
	sqe->ioprio |= IORING_RECV_MULTISHOT;
	sqe->user_data = DATA_RECV;
}

/* io_uring zcrx until EOF: each completion's buffer goes straight back
 * on the refill ring, unread; one wait per batch of completions. */
static void serve_zcrx(void)
{
	struct io_uring ring;
	struct zc zc;
	int lfd = listen_one(), fd = -1;
	long long got = 0;
	double t0 = 0, c0 = 0;
	bool done = false;
	unsigned int mask;

	if (io_uring_queue_init(512, &ring, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
						   IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE32))
		error(1, 0, "io_uring_queue_init");
	zc_register(&ring, &zc);
	mask = zc.rq.ring_entries - 1;
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		error(1, errno, "accept");
	zc_arm(&ring, fd);
	while (!done) {
		struct io_uring_cqe *cqe;
		unsigned int head, count = 0;

		io_uring_submit_and_wait(&ring, 1);
		io_uring_for_each_cqe(&ring, head, cqe) {
			struct io_uring_zcrx_cqe *rcqe = (struct io_uring_zcrx_cqe *)(cqe + 1);
			struct io_uring_zcrx_rqe *rqe;

			count++;
			if (cqe->res < 0)
				error(1, -cqe->res, "recvzc");
			if (cqe->res == 0) {
				done = true;
				break;
			}
			if (!got) {
				t0 = now();
				c0 = cpu_seconds();
			}
			got += cqe->res;
			rqe = &zc.rq.rqes[zc.rq.rq_tail & mask];
			rqe->off = (rcqe->off & ~IORING_ZCRX_AREA_MASK) | zc.area_token;
			rqe->len = cqe->res;
			zc.rq.rq_tail++;
			if (!(cqe->flags & IORING_CQE_F_MORE))
				zc_arm(&ring, fd);
		}
		io_uring_smp_store_release(zc.rq.ktail, zc.rq.rq_tail);
		io_uring_cq_advance(&ring, count);
	}
	report("zcrx", got, t0, now(), c0);
}

static void send_all(void)
{
	struct sockaddr_in6 a = addr_of(cfg_host);
	char *buf = calloc(1, CHUNK);
	long long left = cfg_bytes;
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (!buf || fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		error(1, errno, "connect to [%s]:%d", cfg_host, cfg_port);
	while (left > 0) {
		ssize_t n = send(fd, buf, left < CHUNK ? left : CHUNK, 0);

		if (n < 0)
			error(1, errno, "send");
		left -= n;
	}
	close(fd);
}

int main(int argc, char **argv)
{
	bool server = false;
	int c;

	while ((c = getopt(argc, argv, "sc:p:i:q:n:")) != -1) {
		switch (c) {
		case 's': server = true; break;
		case 'c': cfg_host = optarg; break;
		case 'p': cfg_port = atoi(optarg); break;
		case 'i': cfg_ifname = optarg; break;
		case 'q': cfg_queue = atoi(optarg); break;
		case 'n': cfg_bytes = atoll(optarg); break;
		default: error(2, 0, "usage: zc_rx -s -p PORT [-i IF -q QUEUE] | -c HOST -p PORT -n BYTES");
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (server && cfg_ifname && cfg_queue >= 0)
		serve_zcrx();
	else if (server)
		serve_socket();
	else if (cfg_host && cfg_bytes > 0)
		send_all();
	else
		error(2, 0, "usage: zc_rx -s -p PORT [-i IF -q QUEUE] | -c HOST -p PORT -n BYTES");
	return 0;
}
