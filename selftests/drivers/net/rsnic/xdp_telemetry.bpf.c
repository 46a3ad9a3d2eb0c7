// SPDX-License-Identifier: GPL-2.0
/*
 * The program of xdp_offload.sh, and the example of
 * Documentation/networking/device_drivers/ethernet/rsnic/xdp_offload.rst:
 * telemetry and a filter the card runs on every frame from the wire.
 *
 *   flows     (hash) per IPv4 UDP source address and port: frames and
 *             bytes (the telemetry);
 *   verdicts  (array) frames per XDP action the program returned;
 *   cfg       (array) [0] a UDP destination port to drop, [1] one to send
 *             back to its sender (XDP_TX, MAC addresses swapped); 0: none.
 *
 * Everything else passes. It uses the three helpers the card runs (map
 * lookup, update and delete), 64-bit atomic adds and byte swaps of
 * values read at run time. Built with -DREFUSED it calls
 * bpf_xdp_adjust_head too, which the card does not offer.
 *
 * Self-contained (no libbpf headers): built in the guest with clang
 * -target bpf.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_lookup_elem;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value,
				   __u64 flags) = (void *)BPF_FUNC_map_update_elem;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_delete_elem;
#ifdef REFUSED
static long (*bpf_xdp_adjust_head)(struct xdp_md *ctx, int delta) = (void *)BPF_FUNC_xdp_adjust_head;
#endif

struct flow_key {
	__u32 saddr;
	__u16 sport;
	__u16 pad;
};

struct flow_stats {
	__u64 frames;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct flow_key);
	__type(value, struct flow_stats);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} verdicts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} cfg SEC(".maps");

static int verdict(__u32 act)
{
	__u64 *n = bpf_map_lookup_elem(&verdicts, &act);

	if (n)
		__sync_fetch_and_add(n, 1);
	return act;
}

static __u32 cfg_get(__u32 key)
{
	__u32 *v = bpf_map_lookup_elem(&cfg, &key);

	return v ? *v : 0;
}

SEC("xdp")
int xdp_telemetry(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct flow_key key = {};
	struct flow_stats *stats;
	__u16 dport;

#ifdef REFUSED
	if (bpf_xdp_adjust_head(ctx, 0))
		return XDP_ABORTED;
#endif
	if ((void *)(udp + 1) > data_end || eth->h_proto != __builtin_bswap16(ETH_P_IP) ||
	    ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return verdict(XDP_PASS);

	key.saddr = ip->saddr;
	key.sport = __builtin_bswap16(udp->source);
	stats = bpf_map_lookup_elem(&flows, &key);
	if (stats) {
		__sync_fetch_and_add(&stats->frames, 1);
		__sync_fetch_and_add(&stats->bytes, data_end - data);
	} else {
		struct flow_stats first = { 1, data_end - data };

		bpf_map_update_elem(&flows, &key, &first, BPF_NOEXIST);
	}
	/* Source port 0: a request to forget the flow (exercises delete). */
	if (key.sport == 0)
		bpf_map_delete_elem(&flows, &key);

	dport = __builtin_bswap16(udp->dest);
	if (dport && dport == cfg_get(0))
		return verdict(XDP_DROP);
	if (dport && dport == cfg_get(1)) {
		unsigned char mac[ETH_ALEN];

		__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
		__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
		__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
		return verdict(XDP_TX);
	}
	return verdict(XDP_PASS);
}

char _license[] SEC("license") = "GPL";
