/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Out-of-line copies of static inline kernel functions (and macros) the
 * Rust side needs. Each helper forwards to exactly one kernel inline; see
 * helpers.c.
 */
#ifndef RUST_EXT_HELPERS_H
#define RUST_EXT_HELPERS_H

#include <linux/types.h>
#include <linux/skbuff.h>
#include <linux/netdevice.h>
#include <net/flow_offload.h>

struct device;
struct napi_struct;
struct net;
struct net_device;
struct netdev_notifier_info;
struct netdev_queue;
struct page;
struct page_pool;
struct sk_buff;
struct sk_buff_head;
struct skb_shared_info;
struct work_struct;
struct delayed_work;
struct ib_device;

/* hashing */
u64 rust_ext_siphash(const void *data, size_t len, u64 key0, u64 key1);

/* net devices */
void *rust_ext_netdev_priv(const struct net_device *dev);
void rust_ext_set_netdev_dev(struct net_device *dev, struct device *parent);
void rust_ext_netdev_lockdep_set_classes(struct net_device *dev);
void rust_ext_eth_random_addr(u8 *addr);
void rust_ext_eth_hw_addr_set(struct net_device *dev, const u8 *addr);
bool rust_ext_netif_running(const struct net_device *dev);
bool rust_ext_netif_carrier_ok(const struct net_device *dev);
void rust_ext_netif_tx_start_all_queues(struct net_device *dev);
void rust_ext_netif_tx_disable(struct net_device *dev);
struct netdev_queue *rust_ext_netdev_get_tx_queue(const struct net_device *dev, unsigned int index);
void rust_ext_netif_tx_stop_queue(struct netdev_queue *txq);
bool rust_ext_netif_tx_queue_stopped(const struct netdev_queue *txq);
bool rust_ext_netdev_tx_sent_queue(struct netdev_queue *txq, unsigned int bytes,
				   bool xmit_more);
void rust_ext_netdev_tx_completed_queue(struct netdev_queue *txq,
					unsigned int pkts, unsigned int bytes);
void rust_ext_netdev_tx_reset_queue(struct netdev_queue *txq);
bool rust_ext_netdev_xmit_more(void);
void rust_ext_dev_hold(struct net_device *dev);
void rust_ext_dev_put(struct net_device *dev);
struct net *rust_ext_dev_net(const struct net_device *dev);
bool rust_ext_same_netns(const struct net_device *a, const struct net_device *b);
struct net_device *rust_ext_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info);
struct net *rust_ext_first_net_rcu(void);
struct net *rust_ext_next_net_rcu(struct net *net);
struct net_device *rust_ext_first_net_device_rcu(struct net *net);
struct net_device *rust_ext_next_net_device_rcu(struct net_device *dev);
void *rust_ext_rx_handler_data(const struct net_device *dev);

/* NAPI */
void rust_ext_netif_napi_add_config_locked(struct net_device *dev, struct napi_struct *napi,
					int (*poll)(struct napi_struct *, int), int index);
void rust_ext_netif_napi_del(struct napi_struct *napi);
void rust_ext_netif_napi_del_locked(struct napi_struct *napi);
void rust_ext_netdev_lock(struct net_device *dev);
void rust_ext_netdev_unlock(struct net_device *dev);
void rust_ext_netif_napi_set_irq(struct napi_struct *napi, int irq);
u32 *rust_ext_ethtool_rxfh_context_indir(struct ethtool_rxfh_context *ctx);
u8 *rust_ext_ethtool_rxfh_context_key(struct ethtool_rxfh_context *ctx);
void rust_ext_napi_schedule(struct napi_struct *napi);
gro_result_t rust_ext_napi_gro_receive(struct napi_struct *napi, struct sk_buff *skb);

/* socket buffers */
struct net_device *rust_ext_skb_dev(const struct sk_buff *skb);
void rust_ext_skb_set_dev(struct sk_buff *skb, struct net_device *dev);
void rust_ext_skb_set_iif(struct sk_buff *skb, int ifindex);
int rust_ext_skb_cow_head(struct sk_buff *skb, unsigned int headroom);
void rust_ext_skb_set_protocol(struct sk_buff *skb, __be16 protocol);
struct skb_shared_info *rust_ext_skb_shinfo(const struct sk_buff *skb);
unsigned int rust_ext_skb_headlen(const struct sk_buff *skb);
int rust_ext_skb_linearize(struct sk_buff *skb);
bool rust_ext_skb_is_gso(const struct sk_buff *skb);
bool rust_ext_skb_is_gso_tcp(const struct sk_buff *skb);
int rust_ext_skb_tcp_all_headers(const struct sk_buff *skb);
bool rust_ext_skb_is_gso_udp_l4(const struct sk_buff *skb);
int rust_ext_skb_udp_all_headers(const struct sk_buff *skb);
bool rust_ext_skb_encapsulation(const struct sk_buff *skb);
int rust_ext_skb_inner_network_offset(const struct sk_buff *skb);
int rust_ext_skb_inner_tcp_all_headers(const struct sk_buff *skb);
u8 rust_ext_skb_ip_summed(const struct sk_buff *skb);
void rust_ext_skb_set_ip_summed(struct sk_buff *skb, u8 ip_summed);
int rust_ext_skb_checksum_start_offset(const struct sk_buff *skb);
u16 rust_ext_skb_csum_offset(const struct sk_buff *skb);
u16 rust_ext_skb_get_queue_mapping(const struct sk_buff *skb);
void rust_ext_skb_set_queue_mapping(struct sk_buff *skb, u16 queue);
void rust_ext_skb_record_rx_queue(struct sk_buff *skb, u16 queue);
void rust_ext_skb_set_hash(struct sk_buff *skb, u32 hash, enum pkt_hash_types type);
void rust_ext_skb_reset_network_header(struct sk_buff *skb);
void rust_ext_skb_set_transport_header(struct sk_buff *skb, int offset);
void rust_ext_napi_gro_cb_set_count(struct sk_buff *skb, u16 count);
void rust_ext_skb_reserve(struct sk_buff *skb, int len);
void rust_ext_skb_mark_for_recycle(struct sk_buff *skb);
void rust_ext_dev_kfree_skb_any(struct sk_buff *skb);
void rust_ext_dev_consume_skb_any(struct sk_buff *skb);
void rust_ext_skb_queue_head_init(struct sk_buff_head *list);
u32 rust_ext_skb_queue_len(const struct sk_buff_head *list);
void rust_ext_skb_queue_purge(struct sk_buff_head *list);
u32 rust_ext_rx_headroom(void);
u32 rust_ext_skb_shinfo_room(void);

/* DMA mappings of skbs */
dma_addr_t rust_ext_dma_map_single_to_device(struct device *dev, void *ptr, u32 len);
u32 rust_ext_skb_frag_size(const struct sk_buff *skb, unsigned int i);
dma_addr_t rust_ext_skb_frag_dma_map(struct device *dev, const struct sk_buff *skb, unsigned int i);
bool rust_ext_skb_frag_is_net_iov(const struct sk_buff *skb, unsigned int i);
bool rust_ext_skb_frags_readable(const struct sk_buff *skb);
void rust_ext_netdev_set_netmem_tx_dma(struct net_device *dev);
int rust_ext_dma_mapping_error(struct device *dev, dma_addr_t addr);
void rust_ext_dma_unmap_single_to_device(struct device *dev, dma_addr_t addr, u32 len);
void rust_ext_dma_unmap_page_to_device(struct device *dev, dma_addr_t addr, u32 len);
void rust_ext_dma_rmb(void);

/* page pools */
struct page *rust_ext_page_pool_dev_alloc_pages(struct page_pool *pool);
void rust_ext_page_pool_put_full_page(struct page_pool *pool, struct page *page);
unsigned long rust_ext_page_pool_alloc_netmem(struct page_pool *pool);
void rust_ext_page_pool_put_full_netmem(struct page_pool *pool, unsigned long netmem);
dma_addr_t rust_ext_page_pool_get_dma_addr_netmem(unsigned long netmem);
void rust_ext_page_pool_dma_sync_netmem_for_cpu(const struct page_pool *pool,
					      unsigned long netmem, u32 len);
void rust_ext_skb_add_rx_frag_netmem(struct sk_buff *skb, unsigned long netmem, u32 size,
				     u32 truesize);
dma_addr_t rust_ext_page_pool_get_dma_addr(const struct page *page);
void rust_ext_page_pool_dma_sync_for_cpu(const struct page_pool *pool, struct page *page,
				      u32 offset, u32 len);
void *rust_ext_page_address(const struct page *page);

/* RX stream chunks: compound pages mapped both ways */
struct page *rust_ext_alloc_chunk(unsigned int order, bool atomic);
void rust_ext_get_page(struct page *page);
void rust_ext_put_page(struct page *page);
int rust_ext_page_ref_count(const struct page *page);
dma_addr_t rust_ext_dma_map_chunk(struct device *dev, struct page *page, size_t size);
void rust_ext_dma_unmap_chunk(struct device *dev, dma_addr_t addr, size_t size);
void rust_ext_dma_sync_chunk_for_cpu(struct device *dev, dma_addr_t addr, u32 len);
void rust_ext_dma_sync_chunk_for_device(struct device *dev, dma_addr_t addr, u32 len);
void rust_ext_skb_add_rx_frag(struct sk_buff *skb, struct page *page, u32 offset, u32 size,
			      u32 truesize);
void rust_ext_page_pool_dma_sync_for_device(const struct page_pool *pool, struct page *page,
					 u32 offset, u32 len);

/* XDP */
struct bpf_prog;
struct xdp_buff;
struct xdp_rxq_info;
void rust_ext_xdp_buff_init(struct xdp_buff *xdp, struct xdp_rxq_info *rxq, void *hard_start,
			    u32 frame_sz, u32 headroom, u32 len);
u32 rust_ext_bpf_prog_run_xdp(const struct bpf_prog *prog, struct xdp_buff *xdp);
void rust_ext_trace_xdp_exception(const struct net_device *dev, const struct bpf_prog *prog,
				  u32 act);
int rust_ext_xdp_rxq_info_reg(struct xdp_rxq_info *rxq, struct net_device *dev, u32 queue,
			      struct napi_struct *napi);
struct xdp_frame *rust_ext_xdp_convert_buff_to_frame(struct xdp_buff *xdp);

/* AF_XDP zero copy */
struct xsk_buff_pool;
int rust_ext_xsk_pool_dma_map(struct xsk_buff_pool *pool, struct device *dev);
void rust_ext_xsk_pool_dma_unmap(struct xsk_buff_pool *pool);
u32 rust_ext_xsk_pool_get_rx_frame_size(struct xsk_buff_pool *pool);
void rust_ext_xsk_pool_set_rxq_info(struct xsk_buff_pool *pool, struct xdp_rxq_info *rxq);
struct xdp_buff *rust_ext_xsk_buff_alloc(struct xsk_buff_pool *pool);
dma_addr_t rust_ext_xsk_buff_xdp_get_dma(struct xdp_buff *xdp);
void rust_ext_xsk_buff_received(struct xdp_buff *xdp, u32 len);
void rust_ext_xsk_buff_free(struct xdp_buff *xdp);
dma_addr_t rust_ext_xsk_buff_raw_get_dma(struct xsk_buff_pool *pool, u64 addr);
void rust_ext_xsk_buff_raw_dma_sync_for_device(struct xsk_buff_pool *pool, dma_addr_t dma,
					       size_t len);

/* work items */
void rust_ext_init_delayed_work(struct delayed_work *dw, void (*fn)(struct work_struct *));
bool rust_ext_mod_delayed_work(struct delayed_work *dw, unsigned long delay, bool any_cpu);
bool rust_ext_queue_delayed_work(struct delayed_work *dw, unsigned long delay, bool any_cpu);

/* locking and context */
void rust_ext_local_bh_disable(void);
void rust_ext_local_bh_enable(void);
unsigned long rust_ext_local_irq_save(void);
void rust_ext_local_irq_restore(unsigned long flags);

/* RDMA */
struct ib_block_iter;
struct ib_device *rust_ext_ib_alloc_device(size_t size);
void rust_ext_ib_set_parent(struct ib_device *ibdev, struct device *parent);
struct ib_ucontext *rust_ext_udata_ucontext(struct ib_udata *udata);
struct ib_udata *rust_ext_attrs_udata(struct uverbs_attr_bundle *attrs);
u64 rust_ext_mmap_entry_offset(const struct rdma_user_mmap_entry *entry);
int rust_ext_mmap_io(struct ib_ucontext *uctx, struct vm_area_struct *vma,
		     phys_addr_t phys, size_t len, struct rdma_user_mmap_entry *entry);
struct page *rust_ext_alloc_zeroed_pages(unsigned int order);
struct ib_umem *rust_ext_umem_get(struct ib_device *dev, u64 addr, size_t len, int access);
size_t rust_ext_umem_num_dma_blocks(struct ib_umem *umem, unsigned long pgsz);
void rust_ext_umem_block_iter_start(struct ib_block_iter *biter, struct ib_umem *umem,
				    unsigned long pgsz);
bool rust_ext_umem_block_iter_next(struct ib_block_iter *biter);
dma_addr_t rust_ext_block_iter_dma_address(struct ib_block_iter *biter);
struct ib_umem_odp;
struct mmu_interval_notifier;
struct mmu_notifier_range;
struct mutex;
unsigned long rust_ext_umem_odp_start(struct ib_umem_odp *umem_odp);
unsigned long rust_ext_umem_odp_end(struct ib_umem_odp *umem_odp);
bool rust_ext_mmu_notifier_range_blockable(const struct mmu_notifier_range *range);
unsigned long rust_ext_mmu_notifier_range_start(const struct mmu_notifier_range *range);
unsigned long rust_ext_mmu_notifier_range_end(const struct mmu_notifier_range *range);
void rust_ext_mmu_interval_set_seq(struct mmu_interval_notifier *mni, unsigned long cur_seq);
void rust_ext_mutex_lock(struct mutex *lock);
bool rust_ext_ib_dma_mapping_error(struct ib_device *dev, u64 dma_addr);

/* time stamps */
struct ptp_system_timestamp;
void rust_ext_ptp_read_system_prets(struct ptp_system_timestamp *sts);
void rust_ext_ptp_read_system_postts(struct ptp_system_timestamp *sts);
bool rust_ext_skb_hw_tstamp_requested(struct sk_buff *skb);
void rust_ext_skb_hw_tstamp_in_progress(struct sk_buff *skb);
void rust_ext_skb_tx_timestamp(struct sk_buff *skb);
void rust_ext_skb_tstamp_tx_hw(struct sk_buff *skb, u64 ns);
void rust_ext_skb_set_hwtstamp(struct sk_buff *skb, u64 ns);
u64 rust_ext_ktime_get_real_ns(void);

/* devlink */
struct devlink *rust_ext_devlink_alloc(const struct devlink_ops *ops,
				       size_t priv_size, struct device *dev);
void rust_ext_devlink_port_attrs_set(struct devlink_port *port,
				     enum devlink_port_flavour flavour, u32 number,
				     const u8 *switch_id);

bool rust_ext_netdev_pci_slot(const struct net_device *dev, u32 *serial);
bool rust_ext_netdev_is_vlan(const struct net_device *dev);
bool rust_ext_netdev_has_master(struct net_device *dev);
bool rust_ext_netdev_is_ether(const struct net_device *dev);
bool rust_ext_netdev_is_aggregate_member(const struct net_device *dev);
void rust_ext_sync_addr_lists(struct net_device *to, struct net_device *from);
void rust_ext_netdev_mark_slave(struct net_device *dev, bool on);
void rust_ext_unsync_addr_lists(struct net_device *to, struct net_device *from);

/* tc flower offload: a rule's matches and actions, flattened */
struct flow_cls_offload;
struct flow_block_offload;
struct netlink_ext_ack;
struct rust_ext_flower_match {
	u64 used_keys;		/* BIT(FLOW_DISSECTOR_KEY_*) the rule uses */
	u64 unsupported;	/* of those, the ones not flattened here */
	u16 n_proto, n_proto_mask;	/* host order */
	u8 ip_proto, ip_proto_mask;
	u8 eth_dst[6], eth_dst_mask[6], eth_src[6], eth_src_mask[6];
	u16 vlan_id, vlan_id_mask;
	u8 vlan_prio, vlan_prio_mask;
	u16 addr_type;		/* FLOW_DISSECTOR_KEY_IPV4_ADDRS or _IPV6_ADDRS, or 0 */
	u8 src[16], src_mask[16], dst[16], dst_mask[16];
	u8 tos, tos_mask, ttl, ttl_mask;
	u16 sport, sport_mask, dport, dport_mask;	/* host order */
	u16 tcp_flags, tcp_flags_mask;			/* host order */
	u32 ctrl_flags, ctrl_flags_mask;		/* FLOW_DIS_* */
	u32 enc_key_id, enc_key_id_mask;		/* host order */
	u16 enc_addr_type;
	u8 enc_src[16], enc_src_mask[16], enc_dst[16], enc_dst_mask[16];
	u16 enc_sport, enc_sport_mask, enc_dport, enc_dport_mask;
	u8 enc_tos, enc_tos_mask, enc_ttl, enc_ttl_mask;
};
struct rust_ext_flower_action {
	u32 id;			/* enum flow_action_id */
	u16 vlan_id;
	u16 vlan_proto;		/* host order */
	u8 vlan_prio;
	u32 mangle_htype, mangle_offset, mangle_mask, mangle_val;
	u32 csum_flags;
	int ifindex;		/* redirect/mirred target, or 0 */
	u64 police_rate_bytes_ps;
	u32 police_burst;
	u64 police_rate_pkt_ps;
	u32 police_exceed;	/* enum flow_action_id */
	u32 police_notexceed;	/* enum flow_action_id */
	bool police_extras;	/* peakrate, avrate or overhead given */
	bool to_vxlan;		/* the redirect's target is a VXLAN device */
	bool tun_ipv4;		/* tunnel encap: IPv4 (else IPv6) */
	u64 tun_id;		/* host order */
	u8 tun_src[16], tun_dst[16];	/* network order */
	u16 tun_dport;		/* host order */
};
void rust_ext_flower_match(const struct flow_cls_offload *f,
			   struct rust_ext_flower_match *m);
unsigned int rust_ext_flower_num_actions(const struct flow_cls_offload *f);
void rust_ext_flower_action(const struct flow_cls_offload *f, unsigned int i,
			    struct rust_ext_flower_action *a);
void rust_ext_extack_msg(struct netlink_ext_ack *extack, const char *msg);
void *rust_ext_indr_register(flow_setup_cb_t *cb, void *priv,
			     struct net_device *dev);
void rust_ext_indr_unregister(void *reg);
int rust_ext_tunnel_route4(struct net_device *dev, __be32 dst, __be32 *src,
			   int *ifindex, u8 *smac, u8 *dmac);
int rust_ext_flow_block_cb_setup_simple(struct flow_block_offload *f,
					flow_setup_cb_t *cb, void *priv);
bool rust_ext_tc_can_offload_chain0(const struct net_device *dev,
				    const struct flow_cls_offload *f);
void rust_ext_flow_stats_update(struct flow_cls_offload *f, u64 bytes,
				u64 pkts, u64 drops, u32 idle_ms);

struct bpf_verifier_env;
struct bpf_map;
struct bpf_prog;
struct bpf_insn;
struct uverbs_attr_bundle;
/* The handle (uobject id) of the device memory a DM_ALLOC call creates,
 * negative if the attribute is missing. */
s64 rust_ext_dm_alloc_handle(struct uverbs_attr_bundle *attrs);
/* The program a verifier run checks (bpf_verifier.h is not bound). */
struct bpf_prog *rust_ext_bpf_verifier_prog(struct bpf_verifier_env *env);
/* prog->insnsi: a flexible array inside an anonymous union. */
struct bpf_insn *rust_ext_bpf_prog_insns(struct bpf_prog *prog);
/* bpf_verifier_log_write() is variadic: the line comes whole. */
void rust_ext_bpf_verifier_log(struct bpf_verifier_env *env, const char *line);
/* The name of BPF helper @id (uapi's __BPF_FUNC_MAPPER), NULL if none. */
const char *rust_ext_bpf_helper_name(s32 id);
/* A map the programs of any device may use (not offloaded). */
bool rust_ext_bpf_map_offload_neutral(struct bpf_map *map);

#endif
