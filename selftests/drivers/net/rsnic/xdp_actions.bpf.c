// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP program of xdp.sh and xsk.sh. It applies one action, set in map "cfg", to
 * the IPv4 UDP frames for one port, and counts them in map "seen";
 * everything else (ARP, the test's own control traffic) passes. Map
 * "per_queue" counts every frame the program ran on, by RX queue: what
 * the driver handed to XDP on each queue, whatever it was.
 *
 *   cfg[0]  the action: an XDP_* value, or ACT_CPUMAP / ACT_DEVMAP to
 *           redirect to entry 0 of map "cpus" / "devs", or ACT_XSKMAP
 *           to the AF_XDP socket of the frame's RX queue in map "xsks"
 *           (none there: XDP_PASS)
 *   cfg[1]  the UDP destination port
 *
 * XDP_TX swaps the MAC and IP addresses and the UDP ports, so the frame
 * goes back to its sender as a reply (checksums stay valid: a swap does
 * not change a ones' complement sum).
 *
 * Self-contained (no libbpf headers): built in the guest by xdp.sh with
 * clang -target bpf.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

#define ACT_CPUMAP 10
#define ACT_DEVMAP 11
#define ACT_XSKMAP 12

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_lookup_elem;
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)BPF_FUNC_redirect_map;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} per_queue SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

static __u32 cfg_get(__u32 key)
{
	__u32 *v = bpf_map_lookup_elem(&cfg, &key);

	return v ? *v : 0;
}

static void swap_bytes(unsigned char *a, unsigned char *b, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned char t = a[i];

		a[i] = b[i];
		b[i] = t;
	}
}

SEC("xdp")
int xdp_actions(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u32 zero = 0, queue = ctx->rx_queue_index, act;
	__u64 *count;

	count = bpf_map_lookup_elem(&per_queue, &queue);
	if (count)
		__sync_fetch_and_add(count, 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != __builtin_bswap16(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP ||
	    __builtin_bswap16(udp->dest) != cfg_get(1))
		return XDP_PASS;

	count = bpf_map_lookup_elem(&seen, &zero);
	if (count)
		__sync_fetch_and_add(count, 1);

	act = cfg_get(0);
	switch (act) {
	case XDP_TX:
		swap_bytes(eth->h_dest, eth->h_source, ETH_ALEN);
		swap_bytes((void *)&ip->saddr, (void *)&ip->daddr, 4);
		swap_bytes((void *)&udp->source, (void *)&udp->dest, 2);
		return XDP_TX;
	case ACT_CPUMAP:
		return bpf_redirect_map(&cpus, 0, 0);
	case ACT_DEVMAP:
		return bpf_redirect_map(&devs, 0, 0);
	case ACT_XSKMAP:
		return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
	default:
		return act;
	}
}

char _license[] SEC("license") = "GPL";
