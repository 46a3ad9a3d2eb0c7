#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own drivers/net/hw RSS tests, run by upstream.sh (its
# runner, its skip list); a file apart from upstream_hw.sh's other
# hardware tests so that each stays well within the per-test timeout
# beside another VM (rss_ctx.py alone took 408 s there). rss_ctx's two
# cases that set random keys of their own run in a pass of their own,
# after the others (upstream.sh, rss_key). Its other 18 run in two
# passes, each well within upstream's 360 s: 16 in one took 280 s on a
# good day and passed 360 s on a loaded host. The second pass names its
# cases (those with traffic after a context is made, and the two that
# cycle the link), the first runs the rest, so a case new upstream
# lands in the first.
ctx_late="-t test_rss_context_out_of_order -t test_rss_context4_create_with_cfg \
-t test_flow_add_context_missing -t test_delete_rss_context_busy \
-t test_rss_ntuple_addition -t test_rss_default_context_rule \
-t test_rss_context_flow_hash -t test_rss_context_persist_create_and_ifdown \
-t test_rss_context_persist_ifdown_and_create"
exec "$(dirname "$0")/upstream.sh" \
	"drivers/net/hw/rss_api.py" \
	"drivers/net/hw/rss_ctx.py -T test_rss_key_indir -T test_hitless_key_update ${ctx_late//-t/-T}" \
	"drivers/net/hw/rss_ctx.py $ctx_late" \
	"drivers/net/hw/rss_ctx.py -t test_rss_key_indir -t test_hitless_key_update" \
	"drivers/net/hw/rss_drv.py" \
	"drivers/net/hw/rss_input_xfrm.py" \
	"drivers/net/hw/rss_flow_label.py"
