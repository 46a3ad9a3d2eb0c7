#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core's own suite (the tree qemu/build-provider.sh builds the
# provider in) on rdma_rxe and on card A's engine in one VM, test by
# test: how many each passes, which tests one passes that the other does
# not (and why the other skipped them). rxe runs on card B's netdev (the
# RDMA half of card B unbound), as rdma_rxe.sh sets it up:
#   qemu/in-rootfs.sh python3 qemu/vm.py run --cmd 'bash /rsnic/qemu/rdma-core-vs-rxe.sh'
# Not part of make check: a tool for issue work ("every test rxe passes").

source /rsnic/selftests/drivers/net/rsnic/lib.sh
trap rxe_interop_cleanup EXIT
rxe_interop_setup
SUITE=/rsnic-cache/rdma-core/src/tests/run_tests.py
out=$(mktemp -d)
run() { # NAME IBDEV GID_INDEX
	timeout 900 python3 "$SUITE" --dev "$2" --port 1 --gid "$3" -v >"$out/$1.log" 2>&1
	echo "# $1 ($2): $(grep -E '^(Ran|OK|FAILED)' "$out/$1.log" | tr '\n' ' ')"
	# unittest -v: "test_x (module.Class.test_x)", perhaps the first
	# line of its docstring, " ... ", perhaps what it printed, then the
	# outcome -> name TAB outcome.
	python3 - "$out/$1.log" <<-'PY' | sort >"$out/$1.res"
	import re, sys
	outcome = re.compile(r"(ok|skipped .*|FAIL|ERROR)$")
	name = None
	for line in open(sys.argv[1], errors="replace"):
	    line = line.rstrip("\n")
	    m = re.match(r"(test_\S+ \(\S+\))", line)
	    if m:
	        name, line = m.group(1), line[m.end():]
	    if name is None:
	        continue
	    tail = line.split(" ... ")[-1].strip()
	    if outcome.match(tail):
	        print(f"{name}\t{tail}")
	        name = None
	PY
	echo "# $1: $(grep -c $'\tok$' "$out/$1.res") passed of $(wc -l <"$out/$1.res") results read"
	grep -E '^(FAIL|ERROR):' "$out/$1.log" | sed 's/^/#   /'
}
run rxe rxe_b "$(roce_gid_index rxe_b "$IP_B")"
run engine "$IB_A" "$(roce_gid_index "$IB_A" "$IP_A")"
both=$(join -t $'\t' "$out/rxe.res" "$out/engine.res")
echo "# rxe passes, the engine does not:"
awk -F'\t' '$2 == "ok" && $3 != "ok" {print "#   " $1 " | " $3}' <<<"$both"
echo "# the engine passes, rxe does not:"
awk -F'\t' '$3 == "ok" && $2 != "ok" {print "#   " $1 " | " $2}' <<<"$both"
rm -rf "$out"
