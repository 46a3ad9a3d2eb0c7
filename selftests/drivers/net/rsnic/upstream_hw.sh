#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own drivers/net/hw tests, run by upstream.sh (its runner,
# its skip list) like the drivers/net ones; a file of their own, and the
# RSS ones another (upstream_rss.sh), so that each stays well within the
# per-test timeout (settings) beside another VM: all in one file took
# 852 s there (416 s alone), past a 600 s limit at a pace of 1.26.
exec "$(dirname "$0")/upstream.sh" \
	"drivers/net/hw/csum.py" \
	"drivers/net/hw/irq.py" \
	"drivers/net/hw/tso.py" \
	"drivers/net/hw/uso.py" \
	"drivers/net/hw/ntuple.py" \
	"drivers/net/hw/toeplitz.py" \
	"drivers/net/hw/pp_alloc_fail.py" \
	"drivers/net/hw/xdp_metadata.py" \
	"drivers/net/hw/xsk_reconfig.py" \
	"drivers/net/hw/ethtool_std_stats.sh" \
	"drivers/net/hw/devlink_port_split.py --dev @DEVLINK_A@" \
	"drivers/net/hw/devlink_rate_tc_bw.py"
