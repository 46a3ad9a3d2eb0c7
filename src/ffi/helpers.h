/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Out-of-line copies of static inline kernel functions (and macros) the
 * Rust side needs. Each helper forwards to exactly one kernel inline; see
 * helpers.c.
 */
#ifndef RSNIC_FFI_HELPERS_H
#define RSNIC_FFI_HELPERS_H

#include <linux/types.h>

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

struct sk_buff *rsnic_napi_alloc_skb(struct napi_struct *napi, unsigned int len);
void rsnic_skb_put_data(struct sk_buff *skb, const void *data, unsigned int len);
void *rsnic_skb_put(struct sk_buff *skb, unsigned int len);
void rsnic_skb_record_rx_queue(struct sk_buff *skb, u16 queue);
void rsnic_napi_gro_receive(struct napi_struct *napi, struct sk_buff *skb);
void rsnic_skb_set_eth_protocol(struct sk_buff *skb, struct net_device *dev);
int rsnic_skb_linearize(struct sk_buff *skb);
unsigned int rsnic_skb_headlen(const struct sk_buff *skb);
const void *rsnic_skb_data(const struct sk_buff *skb);
unsigned int rsnic_skb_len(const struct sk_buff *skb);
u16 rsnic_skb_get_queue_mapping(const struct sk_buff *skb);
bool rsnic_skb_csum_partial(const struct sk_buff *skb, u16 *start, u16 *offset);
void rsnic_skb_set_csum_unnecessary(struct sk_buff *skb);
void rsnic_skb_set_hash(struct sk_buff *skb, u32 hash, bool l4);
void rsnic_dev_kfree_skb_any(struct sk_buff *skb);
void rsnic_dev_consume_skb_any(struct sk_buff *skb);

#endif
