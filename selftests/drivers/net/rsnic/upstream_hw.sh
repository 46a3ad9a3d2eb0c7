#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own drivers/net/hw tests, run by upstream.sh (its runner,
# its skip list) like the drivers/net ones; a file of their own so that
# each half stays within the per-test timeout (settings).
exec "$(dirname "$0")/upstream.sh" \
	"drivers/net/hw/csum.py" \
	"drivers/net/hw/irq.py" \
	"drivers/net/hw/tso.py" \
	"drivers/net/hw/uso.py" \
	"drivers/net/hw/gro_hw.py" \
	"drivers/net/hw/rss_api.py" \
	"drivers/net/hw/rss_ctx.py -T test_rss_key_indir -T test_hitless_key_update" \
	"drivers/net/hw/rss_ctx.py -t test_rss_key_indir -t test_hitless_key_update" \
	"drivers/net/hw/rss_drv.py" \
	"drivers/net/hw/rss_input_xfrm.py" \
	"drivers/net/hw/ntuple.py" \
	"drivers/net/hw/toeplitz.py" \
	"drivers/net/hw/pp_alloc_fail.py" \
	"drivers/net/hw/xdp_metadata.py" \
	"drivers/net/hw/xsk_reconfig.py" \
	"drivers/net/hw/ethtool_std_stats.sh" \
	"drivers/net/hw/devlink_port_split.py --dev @DEVLINK_A@" \
	"drivers/net/hw/devlink_rate_tc_bw.py"
