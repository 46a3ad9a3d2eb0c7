/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Out-of-line copies of static inline kernel functions the Rust side
 * needs. Each helper is a one-line forwarder; see helpers.c.
 */
#ifndef RSNIC_FFI_HELPERS_H
#define RSNIC_FFI_HELPERS_H

struct net_device;

void *rsnic_netdev_priv(const struct net_device *dev);

#endif
