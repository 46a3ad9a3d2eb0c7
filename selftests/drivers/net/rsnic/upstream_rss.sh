#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own drivers/net/hw RSS tests, run by upstream.sh (its
# runner, its skip list); a file apart from upstream_hw.sh's other
# hardware tests so that each stays well within the per-test timeout
# beside another VM (rss_ctx.py alone took 408 s there). rss_ctx's two
# cases that set random keys of their own run in a pass of their own,
# after the others (upstream.sh, rss_key).
exec "$(dirname "$0")/upstream.sh" \
	"drivers/net/hw/rss_api.py" \
	"drivers/net/hw/rss_ctx.py -T test_rss_key_indir -T test_hitless_key_update" \
	"drivers/net/hw/rss_ctx.py -t test_rss_key_indir -t test_hitless_key_update" \
	"drivers/net/hw/rss_drv.py" \
	"drivers/net/hw/rss_input_xfrm.py" \
	"drivers/net/hw/rss_flow_label.py"
