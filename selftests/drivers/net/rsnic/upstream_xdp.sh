#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own XDP driver test, drivers/net/xdp.py, run by upstream.sh
# (its runner, its skip list) in a file of its own: with the other
# drivers/net tests it took 598 s beside another VM, 246 s of them its.
exec "$(dirname "$0")/upstream.sh" "drivers/net/xdp.py"
