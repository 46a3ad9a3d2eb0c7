/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Out-of-line copies of static inline kernel functions (and macros) the
 * Rust side needs. Each helper forwards to exactly one kernel inline; see
 * helpers.c.
 */
#ifndef RSNIC_FFI_HELPERS_H
#define RSNIC_FFI_HELPERS_H

#include <linux/types.h>
#include <linux/netdev_features.h>

struct device;
struct napi_struct;
struct net_device;
struct sk_buff;

void *rsnic_netdev_priv(const struct net_device *dev);
void rsnic_set_netdev_dev(struct net_device *dev, struct device *parent);
void rsnic_eth_random_addr(u8 *addr);
void rsnic_eth_hw_addr_set(struct net_device *dev, const u8 *addr);
bool rsnic_netif_carrier_ok(const struct net_device *dev);
bool rsnic_netdev_promisc(const struct net_device *dev);
bool rsnic_netdev_allmulti(const struct net_device *dev);
struct netdev_hw_addr_list;
unsigned int rsnic_hw_addr_list_copy(const struct netdev_hw_addr_list *list, u8 *out, unsigned int max);

void rsnic_netif_napi_add_config(struct net_device *dev, struct napi_struct *napi,
				 int (*poll)(struct napi_struct *, int), int index);
void rsnic_netif_napi_del(struct napi_struct *napi);
void rsnic_napi_schedule(struct napi_struct *napi);
void rsnic_netif_napi_set_irq(struct napi_struct *napi, int irq);

void rsnic_netif_tx_start_all_queues(struct net_device *dev);
void rsnic_netif_tx_disable(struct net_device *dev);
void rsnic_netif_tx_stop_queue(struct net_device *dev, u16 queue);
void rsnic_netif_tx_wake_queue(struct net_device *dev, u16 queue);
bool rsnic_netif_tx_queue_stopped(struct net_device *dev, u16 queue);

void rsnic_skb_record_rx_queue(struct sk_buff *skb, u16 queue);
void rsnic_napi_gro_receive(struct napi_struct *napi, struct sk_buff *skb);
void rsnic_skb_set_eth_protocol(struct sk_buff *skb, struct net_device *dev);
int rsnic_skb_linearize(struct sk_buff *skb);
unsigned int rsnic_skb_headlen(const struct sk_buff *skb);
u8 *rsnic_skb_data(const struct sk_buff *skb);
void rsnic_skb_queue_head_init(struct sk_buff_head *list);
void rsnic_skb_queue_tail(struct sk_buff_head *list, struct sk_buff *skb);
struct sk_buff *rsnic_skb_dequeue(struct sk_buff_head *list);
u32 rsnic_skb_queue_len(const struct sk_buff_head *list);
void rsnic_skb_queue_purge(struct sk_buff_head *list);
unsigned int rsnic_skb_len(const struct sk_buff *skb);
u16 rsnic_skb_get_queue_mapping(const struct sk_buff *skb);
bool rsnic_skb_csum_partial(const struct sk_buff *skb, u16 *start, u16 *offset);
void rsnic_skb_set_csum_unnecessary(struct sk_buff *skb);
void rsnic_skb_set_hash(struct sk_buff *skb, u32 hash, bool l4);
void rsnic_dev_kfree_skb_any(struct sk_buff *skb);
void rsnic_dev_consume_skb_any(struct sk_buff *skb);
unsigned int rsnic_skb_nr_frags(const struct sk_buff *skb);
bool rsnic_skb_tso(const struct sk_buff *skb, u16 *mss, u16 *hdr_len, u16 *segs);

int rsnic_skb_map_head(struct device *dev, struct sk_buff *skb, dma_addr_t *addr);
int rsnic_skb_map_frag(struct device *dev, struct sk_buff *skb, unsigned int i,
		       dma_addr_t *addr, u32 *len);
void rsnic_dma_unmap_single_to_device(struct device *dev, dma_addr_t addr, u32 len);
void rsnic_dma_unmap_page_to_device(struct device *dev, dma_addr_t addr, u32 len);

struct page;
struct page_pool;
struct page_pool *rsnic_page_pool_create(struct device *dev, struct napi_struct *napi,
					 struct net_device *netdev, u32 queue, u32 size,
					 u32 order, u32 headroom, u32 max_len);
void rsnic_page_pool_destroy(struct page_pool *pool);
u32 rsnic_rx_headroom(void);
u32 rsnic_skb_shinfo_room(void);
struct page *rsnic_page_pool_dev_alloc_pages(struct page_pool *pool);
void rsnic_page_pool_put_full_page(struct page_pool *pool, struct page *page);
dma_addr_t rsnic_page_pool_get_dma_addr(const struct page *page);
void rsnic_page_pool_dma_sync_for_cpu(const struct page_pool *pool, struct page *page,
				      u32 offset, u32 len);
struct sk_buff *rsnic_napi_build_skb_from_page(struct page *page, u32 size, u32 headroom, u32 len);


struct work_struct;
struct delayed_work;
void rsnic_init_delayed_work(struct delayed_work *dw, void (*fn)(struct work_struct *));
void rsnic_run_delayed_work_now(struct delayed_work *dw);
bool rsnic_run_delayed_work_after(struct delayed_work *dw, unsigned int msecs);
bool rsnic_cancel_delayed_work_sync(struct delayed_work *dw);
void rsnic_napi_schedule_from_task(struct napi_struct *napi);
void rsnic_netdev_lockdep_set_classes(struct net_device *dev);
void rsnic_local_bh_disable(void);
void rsnic_local_bh_enable(void);
unsigned long rsnic_local_irq_save(void);
void rsnic_local_irq_restore(unsigned long flags);
bool rsnic_net_ratelimit(void);
void rsnic_rtnl_lock(void);
void rsnic_rtnl_unlock(void);


struct netdev_notifier_info;
bool rsnic_netdev_parent_driver_is(struct net_device *dev, const char *name);
struct net_device *rsnic_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info);
struct net_device *rsnic_find_netdev(bool (*fn)(struct net_device *, void *), void *ctx);
int rsnic_enslave(struct net_device *lower, struct net_device *master);
void rsnic_release(struct net_device *lower, struct net_device *master);
bool rsnic_netif_running(const struct net_device *dev);
void rsnic_dev_hold(struct net_device *dev);
void rsnic_dev_put(struct net_device *dev);
void rsnic_skb_xmit_on(struct sk_buff *skb, struct net_device *dev);
bool rsnic_same_netns(const struct net_device *a, const struct net_device *b);
int rsnic_move_to_netns_of(struct net_device *dev, const struct net_device *other);
void rsnic_features_sync(struct net_device *lower, netdev_features_t features,
			 netdev_features_t mask);

struct ib_device;
struct device;
struct ib_device *rsnic_ib_alloc_device(size_t size);
void rsnic_ib_set_parent(struct ib_device *ibdev, struct device *parent);

/* dma_rmb(): orders reads of memory a device writes (a macro). */
void rsnic_dma_rmb(void);

#endif
