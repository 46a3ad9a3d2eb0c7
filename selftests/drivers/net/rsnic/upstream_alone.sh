#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's drivers/net test that times single frames to within a few
# milliseconds, so_txtime.py, run by upstream.sh (its runner, its skip
# list) in a file of its own: make check runs it when no other VM runs
# beside this one (qemu/check.sh, ALONE_TESTS). Its sender and receiver
# each get a 200 ms head start; beside another VM a process start here
# took longer, and most of its cases missed their window.
exec "$(dirname "$0")/upstream.sh" "drivers/net/so_txtime.py"
