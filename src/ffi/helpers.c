// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line copies of static inline kernel functions that bindgen cannot
 * turn into callable symbols.
 */
#include <linux/netdevice.h>
#include "helpers.h"

void *rsnic_netdev_priv(const struct net_device *dev)
{
	return netdev_priv(dev);
}
