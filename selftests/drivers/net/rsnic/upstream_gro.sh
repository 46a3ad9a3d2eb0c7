#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's GRO tests, run by upstream.sh (its runner, its skip list)
# like the other drivers/net ones, in a file of their own: gro.py runs
# every case in software GRO and again in the card's receive coalescing
# (hardware GRO), and gro_hw.py checks the coalescing's counters and
# order; together they would push upstream.sh past its time.
exec "$(dirname "$0")/upstream.sh" \
	"drivers/net/hw/gro_hw.py" \
	"drivers/net/gro.py"
