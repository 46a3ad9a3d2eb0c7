// SPDX-License-Identifier: GPL-2.0
/*
 * The AF_XDP socket of xsk.sh: binds to one queue of a device, in
 * zero-copy or copy mode, enters itself in an XSKMAP, and sends every
 * IPv4 UDP frame it receives back to its sender from the same umem
 * buffer (MAC and IP addresses and UDP ports swapped: the checksums
 * stay valid).
 *
 *   xsk_echo IFINDEX QUEUE z|c XSKMAP_ID COUNT SECONDS
 *
 * Prints "mode zerocopy|copy" once bound (the kernel's XDP_OPTIONS),
 * then, after COUNT frames, a second without one, or SECONDS, "received
 * R intact I echoed E completed C": I of the R frames were whole IPv4
 * UDP frames (header checksum right, IP length matching the frame's), E
 * were put on the TX ring, C of those the kernel reported sent.
 *
 * Raw system calls only (no libxdp): built in the guest by xsk.sh.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_xdp.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FRAME_SIZE 2048
#define RING_SIZE 2048 /* every ring; also the umem's frame count */

struct ring {
	__u32 *producer, *consumer, *flags;
	void *descs;
	__u32 cached; /* our side's index */
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void map_ring(int fd, struct ring *r, const struct xdp_ring_offset *off, __u64 pgoff,
		     size_t desc_size, int producer_side)
{
	size_t len = off->desc + RING_SIZE * desc_size;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);

	if (m == MAP_FAILED)
		die("mmap ring");
	r->producer = (void *)(m + off->producer);
	r->consumer = (void *)(m + off->consumer);
	r->flags = (void *)(m + off->flags);
	r->descs = m + off->desc;
	r->cached = producer_side ? *r->producer : *r->consumer;
}

static long bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static __u16 ip_csum(const void *hdr)
{
	const __u16 *p = hdr;
	__u32 sum = 0;

	for (int i = 0; i < 10; i++)
		sum += p[i];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* A whole IPv4 UDP frame of len bytes? */
static int intact(const unsigned char *f, __u32 len)
{
	const struct ethhdr *eth = (const void *)f;
	const struct iphdr *ip = (const void *)(eth + 1);

	if (len < sizeof(*eth) + sizeof(*ip) + sizeof(struct udphdr))
		return 0;
	return eth->h_proto == htons(ETH_P_IP) && ip->ihl == 5 && ip->protocol == IPPROTO_UDP &&
	       ip_csum(ip) == 0 && ntohs(ip->tot_len) + sizeof(*eth) == len;
}

static void swap(void *a, void *b, size_t n)
{
	unsigned char t[ETH_ALEN];

	memcpy(t, a, n);
	memcpy(a, b, n);
	memcpy(b, t, n);
}

/* Makes the frame a reply to its sender. */
static void turn_around(unsigned char *f)
{
	struct ethhdr *eth = (void *)f;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);

	swap(eth->h_dest, eth->h_source, ETH_ALEN);
	swap(&ip->saddr, &ip->daddr, 4);
	swap(&udp->source, &udp->dest, 2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct xdp_mmap_offsets off;
	struct xdp_umem_reg umem = { 0 };
	struct sockaddr_xdp sxdp = { 0 };
	struct xdp_options opts;
	struct ring fill, comp, rx, tx;
	unsigned long received = 0, whole = 0, echoed = 0, completed = 0;
	socklen_t optlen;
	union bpf_attr attr;
	int fd, map_fd, ring = RING_SIZE;
	__u32 queue, count;
	double deadline, last_rx = 0;
	unsigned char *area;

	if (argc != 7 || (strcmp(argv[3], "z") && strcmp(argv[3], "c"))) {
		fprintf(stderr, "usage: %s IFINDEX QUEUE z|c XSKMAP_ID COUNT SECONDS\n", argv[0]);
		return 2;
	}
	queue = atoi(argv[2]);
	count = atoi(argv[5]);

	fd = socket(AF_XDP, SOCK_RAW, 0);
	if (fd < 0)
		die("socket");
	area = mmap(NULL, (size_t)RING_SIZE * FRAME_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		die("mmap umem");
	umem.addr = (unsigned long)area;
	umem.len = (__u64)RING_SIZE * FRAME_SIZE;
	umem.chunk_size = FRAME_SIZE;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &umem, sizeof(umem)) ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &ring, sizeof(ring)) ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &ring, sizeof(ring)) ||
	    setsockopt(fd, SOL_XDP, XDP_RX_RING, &ring, sizeof(ring)) ||
	    setsockopt(fd, SOL_XDP, XDP_TX_RING, &ring, sizeof(ring)))
		die("setsockopt");
	optlen = sizeof(off);
	if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &optlen))
		die("XDP_MMAP_OFFSETS");
	map_ring(fd, &fill, &off.fr, XDP_UMEM_PGOFF_FILL_RING, sizeof(__u64), 1);
	map_ring(fd, &comp, &off.cr, XDP_UMEM_PGOFF_COMPLETION_RING, sizeof(__u64), 0);
	map_ring(fd, &rx, &off.rx, XDP_PGOFF_RX_RING, sizeof(struct xdp_desc), 0);
	map_ring(fd, &tx, &off.tx, XDP_PGOFF_TX_RING, sizeof(struct xdp_desc), 1);

	/* Every frame of the umem to the fill ring. */
	for (__u32 i = 0; i < RING_SIZE; i++)
		((__u64 *)fill.descs)[(fill.cached + i) & (RING_SIZE - 1)] = (__u64)i * FRAME_SIZE;
	fill.cached += RING_SIZE;
	__atomic_store_n(fill.producer, fill.cached, __ATOMIC_RELEASE);

	sxdp.sxdp_family = AF_XDP;
	sxdp.sxdp_ifindex = atoi(argv[1]);
	sxdp.sxdp_queue_id = queue;
	sxdp.sxdp_flags = XDP_USE_NEED_WAKEUP | (argv[3][0] == 'z' ? XDP_ZEROCOPY : XDP_COPY);
	if (bind(fd, (struct sockaddr *)&sxdp, sizeof(sxdp)))
		die("bind");
	optlen = sizeof(opts);
	if (getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opts, &optlen))
		die("XDP_OPTIONS");

	memset(&attr, 0, sizeof(attr));
	attr.map_id = atoi(argv[4]);
	map_fd = bpf(BPF_MAP_GET_FD_BY_ID, &attr);
	if (map_fd < 0)
		die("BPF_MAP_GET_FD_BY_ID");
	memset(&attr, 0, sizeof(attr));
	attr.map_fd = map_fd;
	attr.key = (unsigned long)&queue;
	attr.value = (unsigned long)&fd;
	if (bpf(BPF_MAP_UPDATE_ELEM, &attr))
		die("BPF_MAP_UPDATE_ELEM");

	printf("mode %s\n", opts.flags & XDP_OPTIONS_ZEROCOPY ? "zerocopy" : "copy");
	fflush(stdout);

	deadline = now() + atoi(argv[6]);
	while (now() < deadline && (received < count || completed < echoed)) {
		if (received && completed == echoed && now() - last_rx > 1)
			break;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		__u32 rx_prod, comp_prod, n = 0;

		if (__atomic_load_n(fill.flags, __ATOMIC_ACQUIRE) & XDP_RING_NEED_WAKEUP)
			recvfrom(fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		if (received < count)
			poll(&pfd, 1, 10);

		/* Received frames go back out from their own buffers. */
		rx_prod = __atomic_load_n(rx.producer, __ATOMIC_ACQUIRE);
		for (; rx.cached != rx_prod; rx.cached++, n++) {
			struct xdp_desc d = ((struct xdp_desc *)rx.descs)[rx.cached & (RING_SIZE - 1)];
			unsigned char *f = area + d.addr;

			received++;
			if (intact(f, d.len)) {
				whole++;
				turn_around(f);
			}
			/* The TX ring has room: as many frames as the umem. */
			((struct xdp_desc *)tx.descs)[tx.cached++ & (RING_SIZE - 1)] = d;
			echoed++;
		}
		if (n) {
			last_rx = now();
			__atomic_store_n(rx.consumer, rx.cached, __ATOMIC_RELEASE);
			__atomic_store_n(tx.producer, tx.cached, __ATOMIC_RELEASE);
		}
		if (completed < echoed &&
		    __atomic_load_n(tx.flags, __ATOMIC_ACQUIRE) & XDP_RING_NEED_WAKEUP)
			sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0);

		/* Sent frames' buffers back to the fill ring. */
		comp_prod = __atomic_load_n(comp.producer, __ATOMIC_ACQUIRE);
		n = 0;
		for (; comp.cached != comp_prod; comp.cached++, n++) {
			((__u64 *)fill.descs)[fill.cached++ & (RING_SIZE - 1)] =
				((__u64 *)comp.descs)[comp.cached & (RING_SIZE - 1)];
			completed++;
		}
		if (n) {
			__atomic_store_n(comp.consumer, comp.cached, __ATOMIC_RELEASE);
			__atomic_store_n(fill.producer, fill.cached, __ATOMIC_RELEASE);
		}
		if (received >= count && completed < echoed)
			usleep(1000);
	}
	printf("received %lu intact %lu echoed %lu completed %lu\n", received, whole, echoed,
	       completed);
	return 0;
}
