// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line copies of static inline kernel functions and macros that
 * bindgen cannot turn into callable symbols. One kernel inline each; the
 * Rust abstraction layer (src/linux/) is their only caller.
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/rtnetlink.h>
#include <linux/workqueue.h>
#include <linux/dma-mapping.h>
#include <net/gro.h>
#include <net/netdev_lock.h>
#include <net/sch_generic.h>
#include <net/page_pool/helpers.h>
#include <rdma/ib_verbs.h>
#include "helpers.h"

void *rsnic_netdev_priv(const struct net_device *dev)
{
	return netdev_priv(dev);
}

void rsnic_set_netdev_dev(struct net_device *dev, struct device *parent)
{
	SET_NETDEV_DEV(dev, parent);
}

void rsnic_eth_random_addr(u8 *addr)
{
	eth_random_addr(addr);
}

void rsnic_eth_hw_addr_set(struct net_device *dev, const u8 *addr)
{
	eth_hw_addr_set(dev, addr);
}

bool rsnic_netif_carrier_ok(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

bool rsnic_netdev_promisc(const struct net_device *dev)
{
	return READ_ONCE(dev->flags) & IFF_PROMISC;
}

bool rsnic_netdev_allmulti(const struct net_device *dev)
{
	return READ_ONCE(dev->flags) & IFF_ALLMULTI;
}

/*
 * Copies up to max addresses (6 bytes each) of an address-list snapshot
 * into out; returns how many the list has (may exceed max).
 */
unsigned int rsnic_hw_addr_list_copy(const struct netdev_hw_addr_list *list, u8 *out, unsigned int max)
{
	struct netdev_hw_addr *ha;
	unsigned int n = 0;

	netdev_hw_addr_list_for_each(ha, list) {
		if (n < max)
			memcpy(out + 6 * n, ha->addr, 6);
		n++;
	}
	return n;
}

void rsnic_netif_napi_add_config(struct net_device *dev, struct napi_struct *napi,
				 int (*poll)(struct napi_struct *, int), int index)
{
	netif_napi_add_config(dev, napi, poll, index);
}

void rsnic_netif_napi_del(struct napi_struct *napi)
{
	netif_napi_del(napi);
}

void rsnic_napi_schedule(struct napi_struct *napi)
{
	napi_schedule(napi);
}

void rsnic_netif_napi_set_irq(struct napi_struct *napi, int irq)
{
	netif_napi_set_irq(napi, irq);
}

void rsnic_netif_tx_start_all_queues(struct net_device *dev)
{
	netif_tx_start_all_queues(dev);
}

void rsnic_netif_tx_disable(struct net_device *dev)
{
	netif_tx_disable(dev);
}

void rsnic_netif_tx_stop_queue(struct net_device *dev, u16 queue)
{
	netif_tx_stop_queue(netdev_get_tx_queue(dev, queue));
}

void rsnic_netif_tx_wake_queue(struct net_device *dev, u16 queue)
{
	netif_tx_wake_queue(netdev_get_tx_queue(dev, queue));
}

bool rsnic_netif_tx_queue_stopped(struct net_device *dev, u16 queue)
{
	return netif_tx_queue_stopped(netdev_get_tx_queue(dev, queue));
}




void rsnic_skb_record_rx_queue(struct sk_buff *skb, u16 queue)
{
	skb_record_rx_queue(skb, queue);
}

void rsnic_napi_gro_receive(struct napi_struct *napi, struct sk_buff *skb)
{
	napi_gro_receive(napi, skb);
}

void rsnic_skb_set_eth_protocol(struct sk_buff *skb, struct net_device *dev)
{
	skb->protocol = eth_type_trans(skb, dev);
}

int rsnic_skb_linearize(struct sk_buff *skb)
{
	return skb_linearize(skb);
}

unsigned int rsnic_skb_headlen(const struct sk_buff *skb)
{
	return skb_headlen(skb);
}

u8 *rsnic_skb_data(const struct sk_buff *skb)
{
	return skb->data;
}

void rsnic_skb_queue_head_init(struct sk_buff_head *list)
{
	skb_queue_head_init(list);
}

void rsnic_skb_queue_tail(struct sk_buff_head *list, struct sk_buff *skb)
{
	skb_queue_tail(list, skb);
}

struct sk_buff *rsnic_skb_dequeue(struct sk_buff_head *list)
{
	return skb_dequeue(list);
}

u32 rsnic_skb_queue_len(const struct sk_buff_head *list)
{
	return skb_queue_len_lockless(list);
}

void rsnic_skb_queue_purge(struct sk_buff_head *list)
{
	skb_queue_purge(list);
}


unsigned int rsnic_skb_len(const struct sk_buff *skb)
{
	return skb->len;
}

u16 rsnic_skb_get_queue_mapping(const struct sk_buff *skb)
{
	return skb_get_queue_mapping(skb);
}

bool rsnic_skb_csum_partial(const struct sk_buff *skb, u16 *start, u16 *offset)
{
	if (skb->ip_summed != CHECKSUM_PARTIAL)
		return false;
	*start = skb_checksum_start_offset(skb);
	*offset = skb->csum_offset;
	return true;
}

void rsnic_skb_set_csum_unnecessary(struct sk_buff *skb)
{
	skb->ip_summed = CHECKSUM_UNNECESSARY;
}

void rsnic_skb_set_hash(struct sk_buff *skb, u32 hash, bool l4)
{
	skb_set_hash(skb, hash, l4 ? PKT_HASH_TYPE_L4 : PKT_HASH_TYPE_L3);
}

void rsnic_dev_kfree_skb_any(struct sk_buff *skb)
{
	dev_kfree_skb_any(skb);
}

void rsnic_dev_consume_skb_any(struct sk_buff *skb)
{
	dev_consume_skb_any(skb);
}

unsigned int rsnic_skb_nr_frags(const struct sk_buff *skb)
{
	return skb_shinfo(skb)->nr_frags;
}

/*
 * TCP segmentation the stack left to the device: MSS, bytes of headers
 * (through TCP) and the number of segments. False if the skb is not TCP
 * GSO.
 */
bool rsnic_skb_tso(const struct sk_buff *skb, u16 *mss, u16 *hdr_len, u16 *segs)
{
	if (!skb_is_gso(skb) || !skb_is_gso_tcp(skb))
		return false;
	*mss = skb_shinfo(skb)->gso_size;
	*hdr_len = skb_tcp_all_headers(skb);
	*segs = skb_shinfo(skb)->gso_segs;
	return true;
}

/* Maps the skb's linear part for the device to read; 0 or -ENOMEM. */
int rsnic_skb_map_head(struct device *dev, struct sk_buff *skb, dma_addr_t *addr)
{
	*addr = dma_map_single(dev, skb->data, skb_headlen(skb), DMA_TO_DEVICE);
	return dma_mapping_error(dev, *addr) ? -ENOMEM : 0;
}

/* Maps fragment i (< nr_frags) for the device to read; 0 or -ENOMEM. */
int rsnic_skb_map_frag(struct device *dev, struct sk_buff *skb, unsigned int i,
		       dma_addr_t *addr, u32 *len)
{
	const skb_frag_t *frag = &skb_shinfo(skb)->frags[i];

	*len = skb_frag_size(frag);
	*addr = skb_frag_dma_map(dev, frag, 0, *len, DMA_TO_DEVICE);
	return dma_mapping_error(dev, *addr) ? -ENOMEM : 0;
}

void rsnic_dma_unmap_single_to_device(struct device *dev, dma_addr_t addr, u32 len)
{
	dma_unmap_single(dev, addr, len, DMA_TO_DEVICE);
}

void rsnic_dma_unmap_page_to_device(struct device *dev, dma_addr_t addr, u32 len)
{
	dma_unmap_page(dev, addr, len, DMA_TO_DEVICE);
}

/*
 * A page pool for one RX queue: pages of 2^order, mapped for the device
 * to write, synced for it on recycle from `headroom` for `max_len` bytes.
 */
struct page_pool *rsnic_page_pool_create(struct device *dev, struct napi_struct *napi,
					 struct net_device *netdev, u32 queue, u32 size,
					 u32 order, u32 headroom, u32 max_len)
{
	struct page_pool_params pp = {
		.flags = PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV,
		.order = order,
		.pool_size = size,
		.nid = NUMA_NO_NODE,
		.dev = dev,
		.napi = napi,
		.netdev = netdev,
		.queue_idx = queue,
		.dma_dir = DMA_FROM_DEVICE,
		.offset = headroom,
		.max_len = max_len,
	};

	return page_pool_create(&pp);
}

/* page_pool_destroy, declared in a header the bindings leave out. */
void rsnic_page_pool_destroy(struct page_pool *pool)
{
	page_pool_destroy(pool);
}

/* Headroom the stack wants in front of a received frame. */
u32 rsnic_rx_headroom(void)
{
	return NET_SKB_PAD + NET_IP_ALIGN;
}

/* Bytes at the end of a buffer build_skb needs for skb_shared_info. */
u32 rsnic_skb_shinfo_room(void)
{
	return SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
}

struct page *rsnic_page_pool_dev_alloc_pages(struct page_pool *pool)
{
	return page_pool_dev_alloc_pages(pool);
}

void rsnic_page_pool_put_full_page(struct page_pool *pool, struct page *page)
{
	page_pool_put_full_page(pool, page, false);
}

dma_addr_t rsnic_page_pool_get_dma_addr(const struct page *page)
{
	return page_pool_get_dma_addr(page);
}

void rsnic_page_pool_dma_sync_for_cpu(const struct page_pool *pool, struct page *page,
				      u32 offset, u32 len)
{
	page_pool_dma_sync_for_cpu(pool, page, offset, len);
}

/*
 * Builds an skb around a received page-pool page of `size` bytes: `len`
 * frame bytes at `headroom`; the skb returns the page to its pool when
 * freed. NULL (page untouched) on allocation failure.
 */
struct sk_buff *rsnic_napi_build_skb_from_page(struct page *page, u32 size, u32 headroom, u32 len)
{
	struct sk_buff *skb = napi_build_skb(page_address(page), size);

	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	skb_put(skb, len);
	skb_mark_for_recycle(skb);
	return skb;
}

void rsnic_init_delayed_work(struct delayed_work *dw, void (*fn)(struct work_struct *))
{
	INIT_DELAYED_WORK(dw, fn);
}

/* Runs the work as soon as possible, pulling in a pending later run. */
void rsnic_run_delayed_work_now(struct delayed_work *dw)
{
	mod_delayed_work(system_percpu_wq, dw, 0);
}

/* Runs the work after @msecs unless it is already pending. */
bool rsnic_run_delayed_work_after(struct delayed_work *dw, unsigned int msecs)
{
	return queue_delayed_work(system_percpu_wq, dw, msecs_to_jiffies(msecs));
}

/* cancel_delayed_work_sync, declared in a header the bindings leave out. */
bool rsnic_cancel_delayed_work_sync(struct delayed_work *dw)
{
	return cancel_delayed_work_sync(dw);
}

/* napi_schedule from process context: softirqs run at local_bh_enable. */
void rsnic_napi_schedule_from_task(struct napi_struct *napi)
{
	local_bh_disable();
	napi_schedule(napi);
	local_bh_enable();
}

/*
 * One lockdep class for the TX locks of every bond master (a PF's
 * synthetic NIC), apart from those of the VFs it transmits through.
 */
void rsnic_netdev_lockdep_set_classes(struct net_device *dev)
{
	netdev_lockdep_set_classes(dev);
}

void rsnic_local_bh_disable(void)
{
	local_bh_disable();
}

void rsnic_local_bh_enable(void)
{
	local_bh_enable();
}

bool rsnic_net_ratelimit(void)
{
	return net_ratelimit();
}

/* rtnl_lock/rtnl_unlock, declared in a header the bindings leave out. */
void rsnic_rtnl_lock(void)
{
	rtnl_lock();
}

void rsnic_rtnl_unlock(void)
{
	rtnl_unlock();
}

/* Whether dev's parent device is bound to the driver named name. */
bool rsnic_netdev_parent_driver_is(struct net_device *dev, const char *name)
{
	struct device *parent = dev->dev.parent;

	return parent && parent->driver && !strcmp(parent->driver->name, name);
}

struct net_device *rsnic_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info)
{
	return netdev_notifier_info_to_dev(info);
}

/*
 * Walks every net device of every namespace under RCU until fn returns
 * true; returns that device (or NULL). The caller holds RTNL, so the
 * device stays registered after the walk.
 */
struct net_device *rsnic_find_netdev(bool (*fn)(struct net_device *, void *), void *ctx)
{
	struct net_device *dev, *found = NULL;
	struct net *net;

	ASSERT_RTNL();
	rcu_read_lock();
	for_each_net_rcu(net) {
		for_each_netdev_rcu(net, dev) {
			if (fn(dev, ctx)) {
				found = dev;
				goto out;
			}
		}
	}
out:
	rcu_read_unlock();
	return found;
}

/* The slave's RX handler: its frames are the master's. */
static rx_handler_result_t rsnic_slave_rx_handler(struct sk_buff **pskb)
{
	struct sk_buff *skb = *pskb;
	struct net_device *master = rcu_dereference(skb->dev->rx_handler_data);

	skb->dev = master;
	skb->skb_iif = master->ifindex;
	return RX_HANDLER_ANOTHER;
}

/* Makes lower a slave of master (as hv_netvsc does with its VF). RTNL held. */
int rsnic_enslave(struct net_device *lower, struct net_device *master)
{
	int err;

	ASSERT_RTNL();
	err = netdev_rx_handler_register(lower, rsnic_slave_rx_handler, master);
	if (err)
		return err;
	err = netdev_master_upper_dev_link(lower, master, NULL, NULL, NULL);
	if (err) {
		netdev_rx_handler_unregister(lower);
		return err;
	}
	lower->flags |= IFF_SLAVE;
	return 0;
}

/* Undoes rsnic_enslave. RTNL held. */
void rsnic_release(struct net_device *lower, struct net_device *master)
{
	ASSERT_RTNL();
	netdev_rx_handler_unregister(lower);
	netdev_upper_dev_unlink(lower, master);
	lower->flags &= ~IFF_SLAVE;
}

bool rsnic_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}

void rsnic_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rsnic_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

/* Sends skb on dev (a slave), keeping the queue the stack chose. */
void rsnic_skb_xmit_on(struct sk_buff *skb, struct net_device *dev)
{
	skb->dev = dev;
	skb->queue_mapping = qdisc_skb_cb(skb)->slave_dev_queue_mapping;
	dev_queue_xmit(skb);
}

bool rsnic_same_netns(const struct net_device *a, const struct net_device *b)
{
	return net_eq(dev_net(a), dev_net(b));
}

/* Moves dev into other's namespace, named eth%d there. RTNL held. */
int rsnic_move_to_netns_of(struct net_device *dev, const struct net_device *other)
{
	ASSERT_RTNL();
	return dev_change_net_namespace(dev, dev_net(other), "eth%d");
}

/* Makes lower want, of the features in mask, those in features. RTNL held. */
void rsnic_features_sync(struct net_device *lower, netdev_features_t features,
			 netdev_features_t mask)
{
	ASSERT_RTNL();
	lower->wanted_features = (lower->wanted_features & ~mask) | (features & mask);
	netdev_update_features(lower);
}

/* ib_alloc_device() without the container macro: size covers the driver's
 * struct, which starts with the struct ib_device. */
struct ib_device *rsnic_ib_alloc_device(size_t size)
{
	return _ib_alloc_device(size, &init_net);
}

/* The ib_device's struct device sits in a union with its core device. */
void rsnic_ib_set_parent(struct ib_device *ibdev, struct device *parent)
{
	ibdev->dev.parent = parent;
}

unsigned long rsnic_local_irq_save(void)
{
	unsigned long flags;

	local_irq_save(flags);
	return flags;
}

void rsnic_local_irq_restore(unsigned long flags)
{
	local_irq_restore(flags);
}

void rsnic_dma_rmb(void)
{
	dma_rmb();
}
