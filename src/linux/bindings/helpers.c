// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line copies of static inline kernel functions and macros that
 * bindgen cannot turn into callable symbols, as upstream's rust/helpers/:
 * each helper is one call of one kernel inline, nothing more. The Rust
 * abstraction layer (src/linux/) is their only caller.
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/pci.h>
#include <linux/if_vlan.h>
#include <linux/udp.h>
#include <linux/rtnetlink.h>
#include <linux/siphash.h>
#include <linux/workqueue.h>
#include <linux/dma-mapping.h>
#include <net/gro.h>
#include <net/netdev_lock.h>
#include <net/sch_generic.h>
#include <net/page_pool/helpers.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <linux/mmu_notifier.h>
#include <rdma/iter.h>
#include <rdma/uverbs_ioctl.h>
#include <net/devlink.h>
#include <net/flow_offload.h>
#include <net/pkt_cls.h>
#include <linux/bpf.h>
#include <linux/bpf_verifier.h>
#include <net/vxlan.h>
#include <net/route.h>
#include <net/neighbour.h>
#include <net/ip_tunnels.h>
#include <linux/ptp_clock_kernel.h>
#include <net/xdp.h>
#include <net/xdp_sock_drv.h>
#include <linux/filter.h>
#include <trace/events/xdp.h>
#include "helpers.h"

/* hashing */

u64 rust_ext_siphash(const void *data, size_t len, u64 key0, u64 key1)
{
	const siphash_key_t key = { .key = { key0, key1 } };

	return siphash(data, len, &key);
}

/* net devices */

void *rust_ext_netdev_priv(const struct net_device *dev)
{
	return netdev_priv(dev);
}

void rust_ext_set_netdev_dev(struct net_device *dev, struct device *parent)
{
	SET_NETDEV_DEV(dev, parent);
}

void rust_ext_netdev_lockdep_set_classes(struct net_device *dev)
{
	netdev_lockdep_set_classes(dev);
}

void rust_ext_eth_random_addr(u8 *addr)
{
	eth_random_addr(addr);
}

void rust_ext_eth_hw_addr_set(struct net_device *dev, const u8 *addr)
{
	eth_hw_addr_set(dev, addr);
}

bool rust_ext_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}

bool rust_ext_netif_carrier_ok(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

void rust_ext_netif_tx_start_all_queues(struct net_device *dev)
{
	netif_tx_start_all_queues(dev);
}

void rust_ext_netif_tx_disable(struct net_device *dev)
{
	netif_tx_disable(dev);
}

struct netdev_queue *rust_ext_netdev_get_tx_queue(const struct net_device *dev, unsigned int index)
{
	return netdev_get_tx_queue(dev, index);
}

void rust_ext_netif_tx_stop_queue(struct netdev_queue *txq)
{
	netif_tx_stop_queue(txq);
}

bool rust_ext_netif_tx_queue_stopped(const struct netdev_queue *txq)
{
	return netif_tx_queue_stopped(txq);
}

bool rust_ext_netdev_tx_sent_queue(struct netdev_queue *txq, unsigned int bytes,
				   bool xmit_more)
{
	return __netdev_tx_sent_queue(txq, bytes, xmit_more);
}

void rust_ext_netdev_tx_completed_queue(struct netdev_queue *txq,
					unsigned int pkts, unsigned int bytes)
{
	netdev_tx_completed_queue(txq, pkts, bytes);
}

void rust_ext_netdev_tx_reset_queue(struct netdev_queue *txq)
{
	netdev_tx_reset_queue(txq);
}

bool rust_ext_netdev_xmit_more(void)
{
	return netdev_xmit_more();
}

void rust_ext_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rust_ext_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

struct net *rust_ext_dev_net(const struct net_device *dev)
{
	return dev_net(dev);
}

bool rust_ext_same_netns(const struct net_device *a, const struct net_device *b)
{
	return net_eq(dev_net(a), dev_net(b));
}

struct net_device *rust_ext_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info)
{
	return netdev_notifier_info_to_dev(info);
}

struct net *rust_ext_first_net_rcu(void)
{
	return list_first_or_null_rcu(&net_namespace_list, struct net, list);
}

struct net *rust_ext_next_net_rcu(struct net *net)
{
	return list_next_or_null_rcu(&net_namespace_list, &net->list, struct net, list);
}

struct net_device *rust_ext_first_net_device_rcu(struct net *net)
{
	return list_first_or_null_rcu(&net->dev_base_head, struct net_device, dev_list);
}

struct net_device *rust_ext_next_net_device_rcu(struct net_device *dev)
{
	return next_net_device_rcu(dev);
}

void *rust_ext_rx_handler_data(const struct net_device *dev)
{
	return rcu_dereference(dev->rx_handler_data);
}

/* NAPI */

void rust_ext_netif_napi_add_config_locked(struct net_device *dev, struct napi_struct *napi,
					int (*poll)(struct napi_struct *, int), int index)
{
	netif_napi_add_config_locked(dev, napi, poll, index);
}

void rust_ext_netif_napi_del(struct napi_struct *napi)
{
	netif_napi_del(napi);
}

void rust_ext_netif_napi_del_locked(struct napi_struct *napi)
{
	netif_napi_del_locked(napi);
}

void rust_ext_netdev_lock(struct net_device *dev)
{
	netdev_lock(dev);
}

void rust_ext_netdev_unlock(struct net_device *dev)
{
	netdev_unlock(dev);
}

void rust_ext_netif_napi_set_irq(struct napi_struct *napi, int irq)
{
	netif_napi_set_irq(napi, irq);
}

void rust_ext_napi_schedule(struct napi_struct *napi)
{
	napi_schedule(napi);
}

gro_result_t rust_ext_napi_gro_receive(struct napi_struct *napi, struct sk_buff *skb)
{
	return napi_gro_receive(napi, skb);
}

/* socket buffers */

struct net_device *rust_ext_skb_dev(const struct sk_buff *skb)
{
	return skb->dev;
}

void rust_ext_skb_set_dev(struct sk_buff *skb, struct net_device *dev)
{
	skb->dev = dev;
}

void rust_ext_skb_set_iif(struct sk_buff *skb, int ifindex)
{
	skb->skb_iif = ifindex;
}

int rust_ext_skb_cow_head(struct sk_buff *skb, unsigned int headroom)
{
	return skb_cow_head(skb, headroom);
}

void rust_ext_skb_set_protocol(struct sk_buff *skb, __be16 protocol)
{
	skb->protocol = protocol;
}

struct skb_shared_info *rust_ext_skb_shinfo(const struct sk_buff *skb)
{
	return skb_shinfo(skb);
}

unsigned int rust_ext_skb_headlen(const struct sk_buff *skb)
{
	return skb_headlen(skb);
}

int rust_ext_skb_linearize(struct sk_buff *skb)
{
	return skb_linearize(skb);
}

bool rust_ext_skb_is_gso(const struct sk_buff *skb)
{
	return skb_is_gso(skb);
}

bool rust_ext_skb_is_gso_tcp(const struct sk_buff *skb)
{
	return skb_is_gso_tcp(skb);
}

int rust_ext_skb_tcp_all_headers(const struct sk_buff *skb)
{
	return skb_tcp_all_headers(skb);
}

bool rust_ext_skb_is_gso_udp_l4(const struct sk_buff *skb)
{
	return skb_shinfo(skb)->gso_type & SKB_GSO_UDP_L4;
}

int rust_ext_skb_udp_all_headers(const struct sk_buff *skb)
{
	return skb_transport_offset(skb) + sizeof(struct udphdr);
}

bool rust_ext_skb_encapsulation(const struct sk_buff *skb)
{
	return skb->encapsulation;
}

int rust_ext_skb_inner_network_offset(const struct sk_buff *skb)
{
	return skb_inner_network_offset(skb);
}

int rust_ext_skb_inner_tcp_all_headers(const struct sk_buff *skb)
{
	return skb_inner_tcp_all_headers(skb);
}

u8 rust_ext_skb_ip_summed(const struct sk_buff *skb)
{
	return skb->ip_summed;
}

void rust_ext_skb_set_ip_summed(struct sk_buff *skb, u8 ip_summed)
{
	skb->ip_summed = ip_summed;
}

int rust_ext_skb_checksum_start_offset(const struct sk_buff *skb)
{
	return skb_checksum_start_offset(skb);
}

u16 rust_ext_skb_csum_offset(const struct sk_buff *skb)
{
	return skb->csum_offset;
}

u16 rust_ext_skb_get_queue_mapping(const struct sk_buff *skb)
{
	return skb_get_queue_mapping(skb);
}

void rust_ext_skb_set_queue_mapping(struct sk_buff *skb, u16 queue)
{
	skb_set_queue_mapping(skb, queue);
}


void rust_ext_skb_record_rx_queue(struct sk_buff *skb, u16 queue)
{
	skb_record_rx_queue(skb, queue);
}

void rust_ext_skb_set_hash(struct sk_buff *skb, u32 hash, enum pkt_hash_types type)
{
	skb_set_hash(skb, hash, type);
}

void rust_ext_skb_reset_network_header(struct sk_buff *skb)
{
	skb_reset_network_header(skb);
}

void rust_ext_skb_set_transport_header(struct sk_buff *skb, int offset)
{
	skb_set_transport_header(skb, offset);
}

void rust_ext_napi_gro_cb_set_count(struct sk_buff *skb, u16 count)
{
	NAPI_GRO_CB(skb)->count = count;
}

void rust_ext_skb_reserve(struct sk_buff *skb, int len)
{
	skb_reserve(skb, len);
}

void rust_ext_skb_mark_for_recycle(struct sk_buff *skb)
{
	skb_mark_for_recycle(skb);
}

void rust_ext_dev_kfree_skb_any(struct sk_buff *skb)
{
	dev_kfree_skb_any(skb);
}

void rust_ext_dev_consume_skb_any(struct sk_buff *skb)
{
	dev_consume_skb_any(skb);
}

void rust_ext_skb_queue_head_init(struct sk_buff_head *list)
{
	skb_queue_head_init(list);
}

u32 rust_ext_skb_queue_len(const struct sk_buff_head *list)
{
	return skb_queue_len_lockless(list);
}

void rust_ext_skb_queue_purge(struct sk_buff_head *list)
{
	skb_queue_purge(list);
}

/* Headroom in front of a received frame: what the stack wants, and what
 * an XDP program may grow into (bpf_xdp_adjust_head). */
u32 rust_ext_rx_headroom(void)
{
	return max(NET_SKB_PAD, XDP_PACKET_HEADROOM) + NET_IP_ALIGN;
}

/* Bytes at the end of a buffer build_skb needs for skb_shared_info. */
u32 rust_ext_skb_shinfo_room(void)
{
	return SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
}

/* DMA mappings of skbs */

dma_addr_t rust_ext_dma_map_single_to_device(struct device *dev, void *ptr, u32 len)
{
	return dma_map_single(dev, ptr, len, DMA_TO_DEVICE);
}

u32 rust_ext_skb_frag_size(const struct sk_buff *skb, unsigned int i)
{
	return skb_frag_size(&skb_shinfo(skb)->frags[i]);
}

dma_addr_t rust_ext_skb_frag_dma_map(struct device *dev, const struct sk_buff *skb, unsigned int i)
{
	return skb_frag_dma_map(dev, &skb_shinfo(skb)->frags[i]);
}

bool rust_ext_skb_frag_is_net_iov(const struct sk_buff *skb, unsigned int i)
{
	return skb_frag_is_net_iov(&skb_shinfo(skb)->frags[i]);
}

bool rust_ext_skb_frags_readable(const struct sk_buff *skb)
{
	return skb_frags_readable(skb);
}

void rust_ext_netdev_set_netmem_tx_dma(struct net_device *dev)
{
	dev->netmem_tx = NETMEM_TX_DMA;
}

int rust_ext_dma_mapping_error(struct device *dev, dma_addr_t addr)
{
	return dma_mapping_error(dev, addr);
}

void rust_ext_dma_unmap_single_to_device(struct device *dev, dma_addr_t addr, u32 len)
{
	dma_unmap_single(dev, addr, len, DMA_TO_DEVICE);
}

void rust_ext_dma_unmap_page_to_device(struct device *dev, dma_addr_t addr, u32 len)
{
	dma_unmap_page(dev, addr, len, DMA_TO_DEVICE);
}

void rust_ext_dma_rmb(void)
{
	dma_rmb();
}

/* page pools */

/*
 * page_pool_dev_alloc_pages(), through the exported allocator itself so
 * that fail_function's page_pool_alloc_netmems injection reaches it.
 */
struct page *rust_ext_page_pool_dev_alloc_pages(struct page_pool *pool)
{
	return netmem_to_page(page_pool_alloc_netmems(pool, GFP_ATOMIC | __GFP_NOWARN));
}

unsigned long rust_ext_page_pool_alloc_netmem(struct page_pool *pool)
{
	return (__force unsigned long)page_pool_alloc_netmems(pool, GFP_ATOMIC | __GFP_NOWARN);
}

void rust_ext_page_pool_put_full_netmem(struct page_pool *pool, unsigned long netmem)
{
	page_pool_put_full_netmem(pool, (__force netmem_ref)netmem, false);
}

dma_addr_t rust_ext_page_pool_get_dma_addr_netmem(unsigned long netmem)
{
	return page_pool_get_dma_addr_netmem((__force netmem_ref)netmem);
}

void rust_ext_page_pool_dma_sync_netmem_for_cpu(const struct page_pool *pool,
					      unsigned long netmem, u32 len)
{
	page_pool_dma_sync_netmem_for_cpu(pool, (__force netmem_ref)netmem, 0, len);
}

void rust_ext_skb_add_rx_frag_netmem(struct sk_buff *skb, unsigned long netmem, u32 size,
				     u32 truesize)
{
	skb_add_rx_frag_netmem(skb, skb_shinfo(skb)->nr_frags, (__force netmem_ref)netmem, 0,
			       size, truesize);
}

void rust_ext_page_pool_put_full_page(struct page_pool *pool, struct page *page)
{
	page_pool_put_full_page(pool, page, false);
}

dma_addr_t rust_ext_page_pool_get_dma_addr(const struct page *page)
{
	return page_pool_get_dma_addr(page);
}

void rust_ext_page_pool_dma_sync_for_cpu(const struct page_pool *pool, struct page *page,
				      u32 offset, u32 len)
{
	page_pool_dma_sync_for_cpu(pool, page, offset, len);
}

void *rust_ext_page_address(const struct page *page)
{
	return page_address(page);
}

struct page *rust_ext_alloc_chunk(unsigned int order, bool atomic)
{
	return alloc_pages((atomic ? GFP_ATOMIC : GFP_KERNEL) | __GFP_COMP | __GFP_NOWARN, order);
}

void rust_ext_get_page(struct page *page)
{
	get_page(page);
}

void rust_ext_put_page(struct page *page)
{
	put_page(page);
}

int rust_ext_page_ref_count(const struct page *page)
{
	return page_ref_count(page);
}

dma_addr_t rust_ext_dma_map_chunk(struct device *dev, struct page *page, size_t size)
{
	return dma_map_page(dev, page, 0, size, DMA_BIDIRECTIONAL);
}

void rust_ext_dma_unmap_chunk(struct device *dev, dma_addr_t addr, size_t size)
{
	dma_unmap_page(dev, addr, size, DMA_BIDIRECTIONAL);
}

void rust_ext_dma_sync_chunk_for_cpu(struct device *dev, dma_addr_t addr, u32 len)
{
	dma_sync_single_for_cpu(dev, addr, len, DMA_BIDIRECTIONAL);
}

void rust_ext_dma_sync_chunk_for_device(struct device *dev, dma_addr_t addr, u32 len)
{
	dma_sync_single_for_device(dev, addr, len, DMA_BIDIRECTIONAL);
}

void rust_ext_skb_add_rx_frag(struct sk_buff *skb, struct page *page, u32 offset, u32 size,
			      u32 truesize)
{
	skb_add_rx_frag(skb, skb_shinfo(skb)->nr_frags, page, offset, size, truesize);
}

void rust_ext_page_pool_dma_sync_for_device(const struct page_pool *pool, struct page *page,
					 u32 offset, u32 len)
{
	dma_sync_single_for_device(pool->p.dev, page_pool_get_dma_addr(page) + offset, len,
				   page_pool_get_dma_dir(pool));
}

/* XDP */

void rust_ext_xdp_buff_init(struct xdp_buff *xdp, struct xdp_rxq_info *rxq, void *hard_start,
			    u32 frame_sz, u32 headroom, u32 len)
{
	xdp_init_buff(xdp, frame_sz, rxq);
	xdp_prepare_buff(xdp, hard_start, headroom, len, false);
}

u32 rust_ext_bpf_prog_run_xdp(const struct bpf_prog *prog, struct xdp_buff *xdp)
{
	return bpf_prog_run_xdp(prog, xdp);
}

void rust_ext_trace_xdp_exception(const struct net_device *dev, const struct bpf_prog *prog,
				  u32 act)
{
	trace_xdp_exception(dev, prog, act);
}

int rust_ext_xdp_rxq_info_reg(struct xdp_rxq_info *rxq, struct net_device *dev, u32 queue,
			      struct napi_struct *napi)
{
	return xdp_rxq_info_reg(rxq, dev, queue, napi->napi_id);
}

struct xdp_frame *rust_ext_xdp_convert_buff_to_frame(struct xdp_buff *xdp)
{
	return xdp_convert_buff_to_frame(xdp);
}

/* AF_XDP zero copy */

int rust_ext_xsk_pool_dma_map(struct xsk_buff_pool *pool, struct device *dev)
{
	return xsk_pool_dma_map(pool, dev, 0);
}

void rust_ext_xsk_pool_dma_unmap(struct xsk_buff_pool *pool)
{
	xsk_pool_dma_unmap(pool, 0);
}

u32 rust_ext_xsk_pool_get_rx_frame_size(struct xsk_buff_pool *pool)
{
	return xsk_pool_get_rx_frame_size(pool);
}

void rust_ext_xsk_pool_set_rxq_info(struct xsk_buff_pool *pool, struct xdp_rxq_info *rxq)
{
	xsk_pool_set_rxq_info(pool, rxq);
}

struct xdp_buff *rust_ext_xsk_buff_alloc(struct xsk_buff_pool *pool)
{
	return xsk_buff_alloc(pool);
}

dma_addr_t rust_ext_xsk_buff_xdp_get_dma(struct xdp_buff *xdp)
{
	return xsk_buff_xdp_get_dma(xdp);
}

/* The device wrote a frame of len bytes into the buffer: its size set
 * and made visible to the CPU. */
void rust_ext_xsk_buff_received(struct xdp_buff *xdp, u32 len)
{
	xsk_buff_set_size(xdp, len);
	xsk_buff_dma_sync_for_cpu(xdp);
}

void rust_ext_xsk_buff_free(struct xdp_buff *xdp)
{
	xsk_buff_free(xdp);
}

/* The bus address of a TX descriptor's frame (umem address addr, len
 * bytes), made visible to the device. */
dma_addr_t rust_ext_xsk_buff_raw_get_dma(struct xsk_buff_pool *pool, u64 addr)
{
	return xsk_buff_raw_get_dma(pool, addr);
}

void rust_ext_xsk_buff_raw_dma_sync_for_device(struct xsk_buff_pool *pool, dma_addr_t dma,
					       size_t len)
{
	xsk_buff_raw_dma_sync_for_device(pool, dma, len);
}

/* work items */

void rust_ext_init_delayed_work(struct delayed_work *dw, void (*fn)(struct work_struct *))
{
	INIT_DELAYED_WORK(dw, fn);
}

/* The unbound workqueue for work that may run on any CPU, else the per-CPU one. */
static struct workqueue_struct *rust_ext_work_queue(bool any_cpu)
{
	return any_cpu ? system_dfl_wq : system_percpu_wq;
}

bool rust_ext_mod_delayed_work(struct delayed_work *dw, unsigned long delay, bool any_cpu)
{
	return mod_delayed_work(rust_ext_work_queue(any_cpu), dw, delay);
}

bool rust_ext_queue_delayed_work(struct delayed_work *dw, unsigned long delay, bool any_cpu)
{
	return queue_delayed_work(rust_ext_work_queue(any_cpu), dw, delay);
}

/* locking and context */

void rust_ext_local_bh_disable(void)
{
	local_bh_disable();
}

void rust_ext_local_bh_enable(void)
{
	local_bh_enable();
}

unsigned long rust_ext_local_irq_save(void)
{
	unsigned long flags;

	local_irq_save(flags);
	return flags;
}

void rust_ext_local_irq_restore(unsigned long flags)
{
	local_irq_restore(flags);
}

/* RDMA */

/* ib_alloc_device() without its container macro. */
struct ib_device *rust_ext_ib_alloc_device(size_t size)
{
	return _ib_alloc_device(size, &init_net);
}

/* The ib_device's struct device sits in a union with its core device. */
void rust_ext_ib_set_parent(struct ib_device *ibdev, struct device *parent)
{
	ibdev->dev.parent = parent;
}

/* The user context of a verb call from user space. */
struct ib_ucontext *rust_ext_udata_ucontext(struct ib_udata *udata)
{
	return rdma_udata_to_uverbs_attr_bundle(udata)->context;
}

/* The driver data of a call carrying an attribute bundle (create_cq). */
struct ib_udata *rust_ext_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return &attrs->driver_udata;
}

u64 rust_ext_mmap_entry_offset(const struct rdma_user_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(entry);
}

/* Device registers into user space: uncached, zapped on disassociation. */
int rust_ext_mmap_io(struct ib_ucontext *uctx, struct vm_area_struct *vma,
		     phys_addr_t phys, size_t len, struct rdma_user_mmap_entry *entry)
{
	return rdma_user_mmap_io(uctx, vma, PHYS_PFN(phys), len,
				 pgprot_noncached(vma->vm_page_prot), entry);
}

struct page *rust_ext_alloc_zeroed_pages(unsigned int order)
{
	return alloc_pages(GFP_KERNEL | __GFP_COMP | __GFP_ZERO | __GFP_NOWARN, order);
}

struct ib_umem *rust_ext_umem_get(struct ib_device *dev, u64 addr, size_t len, int access)
{
	return ib_umem_get_va(dev, addr, len, access);
}

size_t rust_ext_umem_num_dma_blocks(struct ib_umem *umem, unsigned long pgsz)
{
	return ib_umem_num_dma_blocks(umem, pgsz);
}

void rust_ext_umem_block_iter_start(struct ib_block_iter *biter, struct ib_umem *umem,
				    unsigned long pgsz)
{
	__rdma_umem_block_iter_start(biter, umem, pgsz);
}

bool rust_ext_umem_block_iter_next(struct ib_block_iter *biter)
{
	return __rdma_umem_block_iter_next(biter);
}

dma_addr_t rust_ext_block_iter_dma_address(struct ib_block_iter *biter)
{
	return rdma_block_iter_dma_address(biter);
}

unsigned long rust_ext_umem_odp_start(struct ib_umem_odp *umem_odp)
{
	return ib_umem_start(umem_odp);
}

unsigned long rust_ext_umem_odp_end(struct ib_umem_odp *umem_odp)
{
	return ib_umem_end(umem_odp);
}

bool rust_ext_mmu_notifier_range_blockable(const struct mmu_notifier_range *range)
{
	return mmu_notifier_range_blockable(range);
}

unsigned long rust_ext_mmu_notifier_range_start(const struct mmu_notifier_range *range)
{
	return range->start;
}

unsigned long rust_ext_mmu_notifier_range_end(const struct mmu_notifier_range *range)
{
	return range->end;
}

void rust_ext_mmu_interval_set_seq(struct mmu_interval_notifier *mni, unsigned long cur_seq)
{
	mmu_interval_set_seq(mni, cur_seq);
}

void rust_ext_mutex_lock(struct mutex *lock)
{
	mutex_lock(lock);
}

bool rust_ext_ib_dma_mapping_error(struct ib_device *dev, u64 dma_addr)
{
	return ib_dma_mapping_error(dev, dma_addr);
}

u32 *rust_ext_ethtool_rxfh_context_indir(struct ethtool_rxfh_context *ctx)
{
	return ethtool_rxfh_context_indir(ctx);
}

u8 *rust_ext_ethtool_rxfh_context_key(struct ethtool_rxfh_context *ctx)
{
	return ethtool_rxfh_context_key(ctx);
}

/* time stamps */

void rust_ext_ptp_read_system_prets(struct ptp_system_timestamp *sts)
{
	ptp_read_system_prets(sts);
}

void rust_ext_ptp_read_system_postts(struct ptp_system_timestamp *sts)
{
	ptp_read_system_postts(sts);
}

bool rust_ext_skb_hw_tstamp_requested(struct sk_buff *skb)
{
	return skb_shinfo(skb)->tx_flags & SKBTX_HW_TSTAMP;
}

void rust_ext_skb_hw_tstamp_in_progress(struct sk_buff *skb)
{
	skb_shinfo(skb)->tx_flags |= SKBTX_IN_PROGRESS;
}

void rust_ext_skb_tx_timestamp(struct sk_buff *skb)
{
	skb_tx_timestamp(skb);
}

void rust_ext_skb_tstamp_tx_hw(struct sk_buff *skb, u64 ns)
{
	struct skb_shared_hwtstamps hwts = { .hwtstamp = ns_to_ktime(ns) };

	skb_tstamp_tx(skb, &hwts);
}

void rust_ext_skb_set_hwtstamp(struct sk_buff *skb, u64 ns)
{
	skb_hwtstamps(skb)->hwtstamp = ns_to_ktime(ns);
}

u64 rust_ext_ktime_get_real_ns(void)
{
	return ktime_get_real_ns();
}

/* devlink */

struct devlink *rust_ext_devlink_alloc(const struct devlink_ops *ops,
				       size_t priv_size, struct device *dev)
{
	return devlink_alloc(ops, priv_size, dev);
}

/* number: the physical port's number, or the VF's; switch_id: 8 bytes,
 * or NULL for a port on no switch. */
void rust_ext_devlink_port_attrs_set(struct devlink_port *port,
				     enum devlink_port_flavour flavour, u32 number,
				     const u8 *switch_id)
{
	struct devlink_port_attrs attrs = {
		.flavour = flavour,
		.phys.port_number = number,
	};

	/* Before the flavour is set: that makes it a switch port. */
	if (switch_id) {
		attrs.switch_id.id_len = 8;
		memcpy(attrs.switch_id.id, switch_id, 8);
	}
	if (flavour == DEVLINK_PORT_FLAVOUR_PCI_VF) {
		port->attrs.switch_id = attrs.switch_id;
		devlink_port_attrs_pci_vf_set(port, 0, 0, number, false);
	} else {
		devlink_port_attrs_set(port, &attrs);
	}
}

bool rust_ext_netdev_pci_slot(const struct net_device *dev, u32 *serial)
{
	struct device *parent = dev->dev.parent;
	struct pci_dev *pdev;
	int depth;

	/* The PCI function under the netdev: its parent for most drivers,
	 * further up for those on a bus of their own (virtio-net's parent is
	 * the virtio device, whose parent is the PCI function). */
	for (depth = 0; parent && !dev_is_pci(parent) && depth < 3; depth++)
		parent = parent->parent;
	if (!parent || !dev_is_pci(parent))
		return false;
	pdev = to_pci_dev(parent);
	return pdev->slot && !kstrtou32(pci_slot_name(pdev->slot), 10, serial);
}

bool rust_ext_netdev_is_vlan(const struct net_device *dev)
{
	return is_vlan_dev(dev);
}

bool rust_ext_netdev_has_master(struct net_device *dev)
{
	return netdev_master_upper_dev_get(dev) != NULL;
}

bool rust_ext_netdev_is_ether(const struct net_device *dev)
{
	return dev->type == ARPHRD_ETHER && dev->addr_len == ETH_ALEN;
}

bool rust_ext_netdev_is_aggregate_member(const struct net_device *dev)
{
	return (dev->flags & IFF_MASTER) || netif_is_failover_slave(dev) ||
	       netif_is_failover(dev);
}

void rust_ext_sync_addr_lists(struct net_device *to, struct net_device *from)
{
	netif_addr_lock_bh(from);
	dev_uc_sync(to, from);
	dev_mc_sync(to, from);
	netif_addr_unlock_bh(from);
}

/* A slave from before its registration, as netvsc's prepare_bonding:
 * IFF_SLAVE for user space, IFF_NO_ADDRCONF so addrconf gives it no
 * address when it comes up; cleared again when released (on = false). */
void rust_ext_netdev_mark_slave(struct net_device *dev, bool on)
{
	if (on) {
		dev->flags |= IFF_SLAVE;
		dev->priv_flags |= IFF_NO_ADDRCONF;
	} else {
		dev->flags &= ~IFF_SLAVE;
		dev->priv_flags &= ~IFF_NO_ADDRCONF;
	}
}

/* Unlike the syncs, the unsyncs take from's address lock themselves. */
void rust_ext_unsync_addr_lists(struct net_device *to, struct net_device *from)
{
	dev_uc_unsync(to, from);
	dev_mc_unsync(to, from);
}

/* tc flower offload. The kernel's own flow_rule_match_* read each key;
 * this flattens what the driver can offload into one struct, and says
 * which keys the rule uses that it did not flatten. */
#define FLOWER_FLATTENED (BIT_ULL(FLOW_DISSECTOR_KEY_CONTROL) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_BASIC) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_ETH_ADDRS) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_VLAN) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_IPV4_ADDRS) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_IPV6_ADDRS) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_IP) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_PORTS) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_TCP) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_ENC_KEYID) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_ENC_CONTROL) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_ENC_IPV4_ADDRS) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_ENC_IPV6_ADDRS) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_ENC_PORTS) | \
	BIT_ULL(FLOW_DISSECTOR_KEY_ENC_IP))

void rust_ext_flower_match(const struct flow_cls_offload *f,
			   struct rust_ext_flower_match *m)
{
	const struct flow_rule *rule = f->rule;

	memset(m, 0, sizeof(*m));
	m->used_keys = rule->match.dissector->used_keys;
	m->unsupported = m->used_keys & ~FLOWER_FLATTENED;
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_CONTROL)) {
		struct flow_match_control c;

		flow_rule_match_control(rule, &c);
		m->addr_type = c.key->addr_type;
		m->ctrl_flags = c.key->flags;
		m->ctrl_flags_mask = c.mask->flags;
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_BASIC)) {
		struct flow_match_basic b;

		flow_rule_match_basic(rule, &b);
		m->n_proto = ntohs(b.key->n_proto);
		m->n_proto_mask = ntohs(b.mask->n_proto);
		m->ip_proto = b.key->ip_proto;
		m->ip_proto_mask = b.mask->ip_proto;
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_ETH_ADDRS)) {
		struct flow_match_eth_addrs e;

		flow_rule_match_eth_addrs(rule, &e);
		memcpy(m->eth_dst, e.key->dst, 6);
		memcpy(m->eth_dst_mask, e.mask->dst, 6);
		memcpy(m->eth_src, e.key->src, 6);
		memcpy(m->eth_src_mask, e.mask->src, 6);
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_VLAN)) {
		struct flow_match_vlan v;

		flow_rule_match_vlan(rule, &v);
		m->vlan_id = v.key->vlan_id;
		m->vlan_id_mask = v.mask->vlan_id;
		m->vlan_prio = v.key->vlan_priority;
		m->vlan_prio_mask = v.mask->vlan_priority;
	}
	if (m->addr_type == FLOW_DISSECTOR_KEY_IPV4_ADDRS) {
		struct flow_match_ipv4_addrs a;

		flow_rule_match_ipv4_addrs(rule, &a);
		memcpy(m->src, &a.key->src, 4);
		memcpy(m->src_mask, &a.mask->src, 4);
		memcpy(m->dst, &a.key->dst, 4);
		memcpy(m->dst_mask, &a.mask->dst, 4);
	} else if (m->addr_type == FLOW_DISSECTOR_KEY_IPV6_ADDRS) {
		struct flow_match_ipv6_addrs a;

		flow_rule_match_ipv6_addrs(rule, &a);
		memcpy(m->src, &a.key->src, 16);
		memcpy(m->src_mask, &a.mask->src, 16);
		memcpy(m->dst, &a.key->dst, 16);
		memcpy(m->dst_mask, &a.mask->dst, 16);
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IP)) {
		struct flow_match_ip ip;

		flow_rule_match_ip(rule, &ip);
		m->tos = ip.key->tos;
		m->tos_mask = ip.mask->tos;
		m->ttl = ip.key->ttl;
		m->ttl_mask = ip.mask->ttl;
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_PORTS)) {
		struct flow_match_ports p;

		flow_rule_match_ports(rule, &p);
		m->sport = ntohs(p.key->src);
		m->sport_mask = ntohs(p.mask->src);
		m->dport = ntohs(p.key->dst);
		m->dport_mask = ntohs(p.mask->dst);
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_TCP)) {
		struct flow_match_tcp t;

		flow_rule_match_tcp(rule, &t);
		m->tcp_flags = ntohs(t.key->flags);
		m->tcp_flags_mask = ntohs(t.mask->flags);
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_ENC_IP)) {
		struct flow_match_ip ip;

		flow_rule_match_enc_ip(rule, &ip);
		m->enc_tos = ip.key->tos;
		m->enc_tos_mask = ip.mask->tos;
		m->enc_ttl = ip.key->ttl;
		m->enc_ttl_mask = ip.mask->ttl;
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_ENC_KEYID)) {
		struct flow_match_enc_keyid k;

		flow_rule_match_enc_keyid(rule, &k);
		m->enc_key_id = be32_to_cpu(k.key->keyid);
		m->enc_key_id_mask = be32_to_cpu(k.mask->keyid);
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_ENC_CONTROL)) {
		struct flow_match_control c;

		flow_rule_match_enc_control(rule, &c);
		m->enc_addr_type = c.key->addr_type;
	}
	if (m->enc_addr_type == FLOW_DISSECTOR_KEY_IPV4_ADDRS) {
		struct flow_match_ipv4_addrs a;

		flow_rule_match_enc_ipv4_addrs(rule, &a);
		memcpy(m->enc_src, &a.key->src, 4);
		memcpy(m->enc_src_mask, &a.mask->src, 4);
		memcpy(m->enc_dst, &a.key->dst, 4);
		memcpy(m->enc_dst_mask, &a.mask->dst, 4);
	} else if (m->enc_addr_type == FLOW_DISSECTOR_KEY_IPV6_ADDRS) {
		struct flow_match_ipv6_addrs a;

		flow_rule_match_enc_ipv6_addrs(rule, &a);
		memcpy(m->enc_src, &a.key->src, 16);
		memcpy(m->enc_src_mask, &a.mask->src, 16);
		memcpy(m->enc_dst, &a.key->dst, 16);
		memcpy(m->enc_dst_mask, &a.mask->dst, 16);
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_ENC_PORTS)) {
		struct flow_match_ports p;

		flow_rule_match_enc_ports(rule, &p);
		m->enc_sport = ntohs(p.key->src);
		m->enc_sport_mask = ntohs(p.mask->src);
		m->enc_dport = ntohs(p.key->dst);
		m->enc_dport_mask = ntohs(p.mask->dst);
	}
}

unsigned int rust_ext_flower_num_actions(const struct flow_cls_offload *f)
{
	return f->rule->action.num_entries;
}

void rust_ext_flower_action(const struct flow_cls_offload *f, unsigned int i,
			    struct rust_ext_flower_action *a)
{
	const struct flow_action_entry *e = &f->rule->action.entries[i];

	memset(a, 0, sizeof(*a));
	a->id = e->id;
	switch (e->id) {
	case FLOW_ACTION_VLAN_PUSH:
	case FLOW_ACTION_VLAN_MANGLE:
		a->vlan_id = e->vlan.vid;
		a->vlan_proto = ntohs(e->vlan.proto);
		a->vlan_prio = e->vlan.prio;
		break;
	case FLOW_ACTION_MANGLE:
	case FLOW_ACTION_ADD:
		a->mangle_htype = e->mangle.htype;
		a->mangle_offset = e->mangle.offset;
		a->mangle_mask = e->mangle.mask;
		a->mangle_val = e->mangle.val;
		break;
	case FLOW_ACTION_CSUM:
		a->csum_flags = e->csum_flags;
		break;
	case FLOW_ACTION_REDIRECT:
	case FLOW_ACTION_MIRRED:
	case FLOW_ACTION_REDIRECT_INGRESS:
	case FLOW_ACTION_MIRRED_INGRESS:
		a->ifindex = e->dev ? e->dev->ifindex : 0;
		a->to_vxlan = e->dev && netif_is_vxlan(e->dev);
		break;
	case FLOW_ACTION_TUNNEL_ENCAP:
		if (e->tunnel) {
			const struct ip_tunnel_key *k = &e->tunnel->key;

			a->tun_ipv4 = ip_tunnel_info_af(e->tunnel) == AF_INET;
			a->tun_id = be64_to_cpu(k->tun_id);
			a->tun_dport = ntohs(k->tp_dst);
			if (a->tun_ipv4) {
				memcpy(a->tun_src, &k->u.ipv4.src, 4);
				memcpy(a->tun_dst, &k->u.ipv4.dst, 4);
			}
		}
		break;
	case FLOW_ACTION_POLICE:
		a->police_rate_bytes_ps = e->police.rate_bytes_ps;
		a->police_burst = e->police.burst;
		a->police_rate_pkt_ps = e->police.rate_pkt_ps;
		a->police_exceed = e->police.exceed.act_id;
		a->police_notexceed = e->police.notexceed.act_id;
		a->police_extras = e->police.peakrate_bytes_ps ||
				   e->police.avrate || e->police.overhead;
		break;
	default:
		break;
	}
}

/* Tunnel devices' ingress blocks, which belong to no driver (indirect
 * blocks): a registration per PF in switchdev mode; each VXLAN device's
 * ingress block gets `cb` with `priv`, as a device's own block would. */
struct rust_ext_indr {
	flow_setup_cb_t *cb;
	void *priv;
	struct net_device *dev;	/* the driver's device, held by the caller */
};

static LIST_HEAD(rust_ext_indr_cb_list);

static void rust_ext_indr_block_release(void *cb_priv)
{
}

static int rust_ext_indr_setup(struct net_device *dev, struct Qdisc *sch,
			       void *cb_priv, enum tc_setup_type type,
			       void *type_data, void *data,
			       void (*cleanup)(struct flow_block_cb *block_cb))
{
	struct rust_ext_indr *reg = cb_priv;
	struct flow_block_offload *f = type_data;
	struct flow_block_cb *block_cb;

	/* Only tunnel devices of the driver's device's namespace: one of
	 * another host's (namespace's) stack is not this card's. */
	if (type != TC_SETUP_BLOCK || !netif_is_vxlan(dev) ||
	    !net_eq(dev_net(dev), dev_net(reg->dev)) ||
	    f->binder_type != FLOW_BLOCK_BINDER_TYPE_CLSACT_INGRESS)
		return -EOPNOTSUPP;
	f->unlocked_driver_cb = true;
	f->driver_block_list = &rust_ext_indr_cb_list;
	switch (f->command) {
	case FLOW_BLOCK_BIND:
		if (flow_block_cb_is_busy(reg->cb, dev, &rust_ext_indr_cb_list))
			return -EBUSY;
		block_cb = flow_indr_block_cb_alloc(reg->cb, dev, reg->priv,
						    rust_ext_indr_block_release,
						    f, dev, sch, data, reg, cleanup);
		if (IS_ERR(block_cb))
			return PTR_ERR(block_cb);
		flow_block_cb_add(block_cb, f);
		list_add_tail(&block_cb->driver_list, &rust_ext_indr_cb_list);
		return 0;
	case FLOW_BLOCK_UNBIND:
		block_cb = flow_block_cb_lookup(f->block, reg->cb, dev);
		if (!block_cb)
			return -ENOENT;
		flow_indr_block_cb_remove(block_cb, f);
		list_del(&block_cb->driver_list);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

void *rust_ext_indr_register(flow_setup_cb_t *cb, void *priv,
			     struct net_device *dev)
{
	struct rust_ext_indr *reg = kzalloc(sizeof(*reg), GFP_KERNEL);
	int err;

	if (!reg)
		return ERR_PTR(-ENOMEM);
	reg->cb = cb;
	reg->priv = priv;
	reg->dev = dev;
	err = flow_indr_dev_register(rust_ext_indr_setup, reg);
	if (err) {
		kfree(reg);
		return ERR_PTR(err);
	}
	return reg;
}

/* The tunnel devices' rules go first (tc removes them through `cb`). */
void rust_ext_indr_unregister(void *reg)
{
	flow_indr_dev_unregister(rust_ext_indr_setup, reg,
				 rust_ext_indr_block_release);
	kfree(reg);
}

/* An IPv4 tunnel's outer Ethernet and IP source towards dst, in dev's
 * namespace: the route's source address if *src is 0, the device it
 * leaves by (its ifindex and MAC), and the next hop's MAC. -EAGAIN if
 * the next hop is not resolved (resolution is then started). */
int rust_ext_tunnel_route4(struct net_device *dev, __be32 dst, __be32 *src,
			   int *ifindex, u8 *smac, u8 *dmac)
{
	struct flowi4 fl4 = {
		.daddr = dst,
		.saddr = *src,
		.flowi4_proto = IPPROTO_UDP,
	};
	struct neighbour *n;
	struct rtable *rt;
	bool valid;
	int err = 0;

	rt = ip_route_output_key(dev_net(dev), &fl4);
	if (IS_ERR(rt))
		return PTR_ERR(rt);
	*src = fl4.saddr;
	*ifindex = rt->dst.dev->ifindex;
	memcpy(smac, rt->dst.dev->dev_addr, ETH_ALEN);
	n = dst_neigh_lookup(&rt->dst, &fl4.daddr);
	if (!n) {
		err = -ENOENT;
		goto out;
	}
	read_lock_bh(&n->lock);
	valid = n->nud_state & NUD_VALID;
	memcpy(dmac, n->ha, ETH_ALEN);
	read_unlock_bh(&n->lock);
	if (!valid) {
		neigh_event_send(n, NULL);
		err = -EAGAIN;
	}
	neigh_release(n);
out:
	ip_rt_put(rt);
	return err;
}

/* extack's message must outlive the request: callers pass static strings. */
void rust_ext_extack_msg(struct netlink_ext_ack *extack, const char *msg)
{
	if (extack)
		extack->_msg = msg;
}

static LIST_HEAD(rust_ext_block_cb_list);

int rust_ext_flow_block_cb_setup_simple(struct flow_block_offload *f,
					flow_setup_cb_t *cb, void *priv)
{
	return flow_block_cb_setup_simple(f, &rust_ext_block_cb_list, cb, priv,
					  priv, true);
}

bool rust_ext_tc_can_offload_chain0(const struct net_device *dev,
				    const struct flow_cls_offload *f)
{
	return tc_cls_can_offload_and_chain0(dev,
		(struct flow_cls_common_offload *)&f->common);
}

/* idle_ms: since the rule's last packet, U32_MAX if none came. */
void rust_ext_flow_stats_update(struct flow_cls_offload *f, u64 bytes,
				u64 pkts, u64 drops, u32 idle_ms)
{
	u64 lastused = idle_ms == U32_MAX ? 0 : jiffies - msecs_to_jiffies(idle_ms);

	flow_stats_update(&f->stats, bytes, pkts, drops, lastused,
			  FLOW_ACTION_HW_STATS_DELAYED);
}

s64 rust_ext_dm_alloc_handle(struct uverbs_attr_bundle *attrs)
{
	const struct uverbs_attr *attr =
		uverbs_attr_get(attrs, UVERBS_ATTR_ALLOC_DM_HANDLE);

	if (IS_ERR(attr))
		return PTR_ERR(attr);
	return attr->obj_attr.uobject->id;
}

struct bpf_prog *rust_ext_bpf_verifier_prog(struct bpf_verifier_env *env)
{
	return env->prog;
}

struct bpf_insn *rust_ext_bpf_prog_insns(struct bpf_prog *prog)
{
	return prog->insnsi;
}

void rust_ext_bpf_verifier_log(struct bpf_verifier_env *env, const char *line)
{
	bpf_verifier_log_write(env, "%s", line);
}

#define RUST_EXT_BPF_HELPER_NAME(x) "bpf_" #x
static const char *const rust_ext_bpf_helper_names[] = {
	__BPF_FUNC_MAPPER(RUST_EXT_BPF_HELPER_NAME)
};

const char *rust_ext_bpf_helper_name(s32 id)
{
	BUILD_BUG_ON(ARRAY_SIZE(rust_ext_bpf_helper_names) != __BPF_FUNC_MAX_ID);
	if (id <= 0 || id >= ARRAY_SIZE(rust_ext_bpf_helper_names))
		return NULL;
	return rust_ext_bpf_helper_names[id];
}

bool rust_ext_bpf_map_offload_neutral(struct bpf_map *map)
{
	return bpf_map_offload_neutral(map);
}
