// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line copies of static inline kernel functions and macros that
 * bindgen cannot turn into callable symbols. One kernel inline each; the
 * Rust abstraction layer (src/kext/) is their only caller.
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/gro.h>
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

struct sk_buff *rsnic_napi_alloc_skb(struct napi_struct *napi, unsigned int len)
{
	return napi_alloc_skb(napi, len);
}

void rsnic_skb_put_data(struct sk_buff *skb, const void *data, unsigned int len)
{
	skb_put_data(skb, data, len);
}

void *rsnic_skb_put(struct sk_buff *skb, unsigned int len)
{
	return skb_put(skb, len);
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

const void *rsnic_skb_data(const struct sk_buff *skb)
{
	return skb->data;
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
