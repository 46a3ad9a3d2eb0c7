/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input of the module's bindgen run: the kernel headers upstream Rust does
 * not bind yet, and the module's C helpers.
 */
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/rtnetlink.h>
#include <linux/workqueue.h>
#include <linux/random.h>
#include <net/netdev_queues.h>
#include <net/netdev_rx_queue.h>
#include <net/net_namespace.h>
#include <net/page_pool/types.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <linux/hmm.h>
#include <linux/hmm-dma.h>
#include <rdma/iter.h>
#include <net/devlink.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <net/xdp.h>
#include <net/xdp_sock_drv.h>
#include <net/tcp.h>
#include <net/flow_offload.h>
#include <net/pkt_cls.h>
#include <net/net_shaper.h>
#include <linux/ptp_clock_kernel.h>
#include <linux/net_tstamp.h>
#include "helpers.h"
/* The driver's user-verbs ABI, bound as the kernel binds its uapi headers. */
#include "../../../include/uapi/rdma/rsnic-abi.h"
