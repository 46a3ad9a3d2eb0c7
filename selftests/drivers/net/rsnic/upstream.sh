#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own NIC driver tests (tools/testing/selftests/drivers/net
# and drivers/net/hw, as the kernel tree has them; qemu/build-ksft.sh
# installs them) in HW mode against card A's netdev, with card B's netdev
# in netns $NS as the remote endpoint.
#   upstream.sh [TEST...]   (default: $UPSTREAM_TESTS, the drivers/net
#                            tests, one a line, with ksft's -t/-T case
#                            filters after it; upstream_hw.sh runs the
#                            drivers/net/hw ones and upstream_rss.sh their
#                            RSS ones, upstream_xdp.sh xdp.py, so that each
#                            file stays well within the per-test timeout
#                            beside another VM, and upstream_alone.sh
#                            so_txtime.py, which make check runs with no
#                            other VM beside it)
# Every case of every test is one KTAP result here. A case passes, or
# upstream.skip lists it, one line per case: "CASE skip REASON" (it may
# skip: the card lacks the feature), "CASE todo REASON" (it fails or
# skips because the driver has not built the feature yet; the reason
# names the issue) or "CASE env REASON" (it cannot run in this VM).
# Each is reported as a SKIP with its reason. A skip
# or failure not on the list fails, and so does a listed case that
# passes: the list stays true. "CASE timing LIMIT REASON" is the one
# kind that may pass: the case holds a time limit the VM cannot always
# meet, and a failure whose every failed check is that limit (ksft's
# "Check failed T >= LIMIT") is a SKIP; any other failure fails.
# "CASE retry TRIES REASON": the case passes on a working driver but not
# on every try, for a reason in the test itself (REASON); a failed try
# is run again, alone, up to TRIES tries, and the last try counts.

source "$(dirname "$0")/lib.sh"

# Not run: hw/ethtool.sh, ethtool_extended_state.sh and loopback.sh need
# two ports with link modes, autonegotiation, cables and MAC loopback,
# which a synthetic NIC's virtual port has not; hw/ethtool_rmon.sh needs
# RMON histograms, which the card does not count (testing.rst).
UPSTREAM_TESTS=${UPSTREAM_TESTS:-"
	drivers/net/ping.py
	drivers/net/stats.py
	drivers/net/queues.py
	drivers/net/ring_reconfig.py
	drivers/net/napi_id.py
	drivers/net/napi_threaded.py
	drivers/net/hds.py
	drivers/net/shaper.py
	drivers/net/netpoll_basic.py
"}
[ $# -gt 0 ] && UPSTREAM_TESTS=$(printf '%s\n' "$@")

KSFT=/rsnic-cache/ksft/normal
is_debug_kernel && KSFT=/rsnic-cache/ksft/debug
KSFT=${UPSTREAM_KSFT:-$KSFT} # another installed tree (the runner's own checks)
SKIPS="$(cd "$(dirname "$0")" && pwd)/upstream.skip"
# Longest one upstream test may take (drivers/net/settings says 360 s),
# times the machine's pace as the runner measured it (RSNIC_PACE).
CASE_TIMEOUT=${UPSTREAM_TIMEOUT:-$(awk -v p="${RSNIC_PACE:-1}" 'BEGIN { printf "%d", 360 * (p < 1 ? 1 : p) }')}

# The cards' counters of frames they did not deliver (sent while the link
# was down, oversize, bad TSO, no queue or filtered on receive, bad FCS)
# and of interrupts dropped: "card:name=value" a line, for losses_delta.
card_losses() {
	local c
	for c in A B; do
		harness card $c stats | tr ' ' '\n' |
			grep -E '^(tx_link_down|tx_oversize|tx_bad_[a-z]*|rx_no_queue|rx_filtered|rx_fcs_errors|irqs_dropped)=' |
			sed "s/^/$c:/"
	done
}
# Those that grew between two card_losses.
losses_delta() { # BEFORE AFTER
	awk -F= 'NR == FNR { old[$1] = $2; next } $2 + 0 > old[$1] + 0 { print $1, "+" $2 - old[$1] }' \
		<(echo "$1") <(echo "$2")
}

[ -f "$KSFT/kselftest-list.txt" ] || bail_out "no driver selftests in $KSFT (qemu/build-ksft.sh)"
[ -f "$SKIPS" ] || bail_out "no $SKIPS"

# new_case: forgets what the lines of the case before said (one place,
# before the first case and after each).
new_case() {
	iperf_stuck=false late=false wrong=false few=false verified=false
	checks_failed=() exception= message=
	# gro.py tries each case 6 times; its receiver prints each failed
	# try's frame lengths, "Expected {A B }" then "Received {a [!=A]b }".
	gro_tries=0 gro_split_only=true expected=
}
cleanup() { net_cleanup; }
trap cleanup EXIT
net_setup || bail_out "cannot set up card A and card B's netns"
dmesg_mark

# Several cases take the link down and up; like a host's network manager,
# keep the addresses over that (IPv6 drops them by default).
sysctl -qw net.ipv6.conf.$NETIF_A.keep_addr_on_down=1
ip netns exec $NS sysctl -qw net.ipv6.conf.$NETIF_B.keep_addr_on_down=1

# The RSS cases send 16 iperf3 streams, whose source ports the kernel
# picks a few steps of 2 apart, and expect all four queues of an "equal
# 4" table to see some. The table takes the hash's two low bits; with a
# random key those often depend on too few source port bits, and all
# streams land on two queues (a real NIC's random key does the same).
# Keep the key random but make its bits 107-109 (IPv4) and 299-301 (IPv6)
# 1,0,1: then hash bits 0 and 1 follow source port bits 1 and 2, and
# ports a step of 2 apart spread. Set before each test; rss_ctx's two
# cases that set random keys of their own run last, in a pass of their
# own (UPSTREAM_TESTS).
rss_key() {
	local -a b
	read -ra b < <(od -An -tx1 -N40 /dev/urandom | tr '\n' ' ')
	b[13]=$(printf %02x $(((0x${b[13]} & ~0x1c) | 0x14)))
	b[37]=$(printf %02x $(((0x${b[37]} & ~0x1c) | 0x14)))
	local IFS=:
	echo "${b[*]}"
}

export NETIF=$NETIF_A LOCAL_V4=$IP_A REMOTE_V4=$IP_B LOCAL_V6=$IP6_A REMOTE_V6=$IP6_B
# Netkit tests (NetDrvContEnv): the prefix of the namespace behind card A,
# outside LOCAL_V6's /64; the peer reaches it through card A's address,
# as the tests' README asks of the remote end.
export LOCAL_PREFIX_V6=fd98::/64
ip -n "$NS" -6 route replace "$LOCAL_PREFIX_V6" via "$IP6_A" ||
	bail_out "cannot route $LOCAL_PREFIX_V6 through card A from the peer"
export REMOTE_TYPE=netns REMOTE_ARGS=$NS

# split_only EXPECTED RECEIVED: the frame lengths RECEIVED hold the bytes
# of EXPECTED in more frames, none longer than the longest expected one
# (GRO aggregated less than it could; nothing lost or merged too far).
split_only() {
	local n want=0 max=0 frames=0 got=0
	for n in $1; do want=$((want + n)); [ "$n" -gt $max ] && max=$n; frames=$((frames - 1)); done
	for n in $2; do got=$((got + n)); [ "$n" -le $max ] || return 1; frames=$((frames + 1)); done
	[ $got -eq $want ] && [ $frames -gt 0 ]
}

# listed CASE: "KIND REASON" from upstream.skip, or nothing. An entry
# ending in "*" names every case starting with what comes before it.
listed() {
	awk -v c="$1" '$1 == c || ($1 ~ /\*$/ && index(c, substr($1, 1, length($1) - 1)) == 1) {
		$1 = ""; sub(/^ +/, ""); print; exit }' "$SKIPS"
}

# so_txtime.py's frames (UDP to its port 8000, a one-byte payload, "a"
# or "b") as the stack hands them to card A's driver (the packet tap
# just before ndo_start_xmit, after the fq or ETF qdisc released them)
# and as card B's driver hands them to the remote stack: the independent
# record of what the driver and the cards did with them.
TXTIME_FILTER="udp dst port 8000"
txtime_capture() { # NS|"" IFACE OUT
	${1:+ip netns exec "$1"} tcpdump --immediate-mode -l -tt -nn -x -i "$2" "$TXTIME_FILTER" >"$3" 2>"$3.err" &
	wait_until 100 grep -q "listening on" "$3.err"
}
# "SECONDS PAYLOAD" a frame, from a txtime_capture's hex dump: the
# frame's last byte is its payload.
txtime_frames() { # OUT
	awk '/^[0-9]+\.[0-9]+ / { if (t != "") print t, substr(last, length(last) - 1); t = $1; last = ""; next }
		/^[ \t]+0x[0-9a-f]+:/ { last = $NF }
		END { if (t != "") print t, substr(last, length(last) - 1) }' "$1"
}
# txtime_wire SENT DELIVERED: true if card B delivered every frame the
# stack gave card A, no other, in the order given, and neither capture
# lost one. Prints what it found, and keeps each frame, "SENT DELIVERED
# PAYLOAD", in /tmp/txtime-frames for txtime_case_in_time.
txtime_wire() {
	local drops
	drops=$(cat "$1.err" "$2.err" | awk '/dropped by (kernel|interface)/ { n += $1 } END { print n + 0 }')
	awk -v drops="$drops" 'NR == FNR { ts[FNR] = $1; pa[FNR] = $2; n = FNR; next }
		{ m = FNR; if (bad == "" && (FNR > n || pa[FNR] != $2)) bad = "; from frame " FNR " on, not the frames sent";
		  else if (bad == "" && $1 - ts[FNR] > max) max = $1 - ts[FNR]
		  print ts[FNR], $1, $2 >"/tmp/txtime-frames" }
		END {
			if (m != n) bad = bad "; " n " sent, " m " delivered"
			if (drops > 0) bad = bad "; " drops " frames lost by the captures"
			printf "# so_txtime on the wire: %d frames to card A'"'"'s driver, %d from card B'"'"'s, slowest %d us%s\n",
				n, m, max * 1e6, bad == "" ? ": the same frames, in the same order" : bad
			exit (bad != "")
		}' <(txtime_frames "$1") <(txtime_frames "$2")
}
# txtime_case_in_time COMMAND: true if each frame of the so_txtime case
# whose receiver ran COMMAND ("-t START_NS ...", START on the realtime
# clock whatever the case's clock) took less than the case's 8 ms
# variance from card A's driver to card B's stack: its frames are those
# handed to the driver in the 300 ms after START (its frames are due 0-20
# ms after START; the cases start half a second apart). Prints them.
txtime_case_in_time() {
	[[ $1 =~ \ -t\ ([0-9]+)\  ]] || return 1
	awk -v t0="${BASH_REMATCH[1]}" '
		BEGIN { t0 /= 1e9 }
		$1 >= t0 && $1 < t0 + 0.3 {
			late = ($2 - $1) * 1e6; frames = frames sprintf(" %c +%d us", $3 == "61" ? "a" : "b", late)
			if (late >= 8000) slow = 1
		}
		END { print "# its frames, driver to driver:" (frames == "" ? " none" : frames); exit slow }' /tmp/txtime-frames
}

# The runs to make, "TRY TEST [ARGS]"; a retried case is queued again.
# In ARGS, @DEVLINK_A@ is card A's devlink handle (tests that would
# otherwise take the first instance, which may be card B's, whose netdev
# is in the remote netns).
queue=()
while read -r t args; do
	args=${args//@DEVLINK_A@/pci/$(card_addr A)}
	[ -n "$t" ] && queue+=("1 $t $args")
done <<<"$UPSTREAM_TESTS"

echo "TAP version 13"
pass=0
for ((qi = 0; qi < ${#queue[@]}; qi++)); do
	read -r try t args <<<"${queue[qi]}"
	pass=$((pass + 1))
	name=$(basename "$t")
	name=${name%.*}
	echo "# running $t $args"
	# A file's own set-up for this test (upstream_gro.sh: the cards'
	# aggregation hold), a function it exported.
	[ -z "${UPSTREAM_BEFORE:-}" ] || "$UPSTREAM_BEFORE" "$t" || bail_out "$UPSTREAM_BEFORE $t failed"
	ethtool -X "$NETIF_A" hkey "$(rss_key)" || bail_out "cannot set the RSS key of $NETIF_A"
	# Neighbours resolved, as between hosts that talk: a first frame
	# waits for ARP or ND, 10-20 ms under TCG, and so_txtime's first
	# case of each IP version then missed its 8 ms window.
	ping -q -c 1 -W 2 "$REMOTE_V4" >/dev/null
	ping -q -6 -c 1 -W 2 "$REMOTE_V6" >/dev/null
	out=/tmp/upstream-$pass-$name.out
	# A test the source tree ships without its executable bit
	# (hw/xdp_metadata.py in 7.2) runs with its #! interpreter, as the
	# kernel's own kselftest runner does.
	run=("./$(basename "$t")")
	if [ ! -x "$KSFT/$t" ]; then
		echo "# Warning: file $t is not executable"
		run=($(head -n1 "$KSFT/$t" | sed -n 's/^#!//p') "${run[@]}")
	fi
	# shellcheck disable=SC2086 # args: ksft's -t/-T filters, word-split
	t0=$SECONDS
	uptime0=$(cut -d' ' -f1 /proc/uptime)
	losses0=$(card_losses)
	wire_ok=false
	if [ "$name" = so_txtime ]; then
		capturing=true
		txtime_capture "" "$NETIF_A" /tmp/txtime-sent || capturing=false
		captures=$!
		txtime_capture $NS "$NETIF_B" /tmp/txtime-delivered || capturing=false
		captures+=" $!"
	fi
	(cd "$KSFT/$(dirname "$t")" && timeout -k 10 "$CASE_TIMEOUT" "${run[@]}" $args) </dev/null >"$out" 2>&1
	rc=$?
	echo "# $t $args: exit $rc in $((SECONDS - t0)) s"
	# An iperf3 the test could not stop (below) would run on beside
	# the next one.
	pkill -9 -x iperf3 && echo "# killed the iperf3 $t left running"
	sed 's/^/# /' "$out"
	cases=0
	failed_before=$ktap_failed
	if [ "$name" = so_txtime ]; then
		kill -INT $captures 2>/dev/null
		wait $captures
		if ! $capturing; then
			ktap_result fail "so_txtime.wire" "tcpdump did not start on both cards' netdevs: $(cat /tmp/txtime-sent.err /tmp/txtime-delivered.err | tr '\n' ' ')"
		elif txtime_wire /tmp/txtime-sent /tmp/txtime-delivered; then
			wire_ok=true
		else
			ktap_result fail "so_txtime.wire" "the frames card B delivered are not those the stack gave card A's driver"
		fi
	fi
	listed_failures=0
	# A case line: "ok 3 name", "not ok 3 name # reason", "ok 3 name # SKIP why";
	# shell tests print "TEST: name [ OK ]" / "[FAIL]" / "[SKIP]" instead.
	new_case
	while IFS= read -r line; do
		# The traffic generator (iperf3 -P 16 in the remote netns, or
		# its server here) not stopping within the library's 20 s of
		# its SIGTERM: iperf3's handler longjmps out of whatever the
		# main thread was doing, and when that held a lock (its print
		# mutex, malloc's), its report then waits on that lock for ever
		# (testing.rst).
		[[ $line =~ TimeoutExpired:.*iperf3\ -[cs].*timed\ out\ after ]] && iperf_stuck=true
		# And so_txtime's frames missing their delivery window: its
		# sender and receiver each start ~200 ms before their start
		# time, and a process start in this VM can take longer ("start
		# time already passed"); a frame then leaves late ("exceeds
		# variance"), or before the receiver listens, or its qdisc's
		# timer fires past its time (the ETF qdisc drops it; fq sends
		# it late): the receiver times out, or sees the other frame
		# first ("payload mismatch"). Only if the wire shows the driver
		# and cards carried exactly the frames the qdisc released, in
		# its order and in time (txtime_wire): then the stack above the
		# driver was late. An error of the sockets is not that.
		[[ $line =~ exceeds\ variance|so_txtime:\ recv:\ timeout|start\ time\ already\ passed ]] && late=true
		[[ $line =~ payload\ mismatch|not\ empty\ as\ expected ]] && late=true
		[[ $line =~ so_txtime:\ (read|write|errqueue) ]] && wrong=true
		# And toeplitz's receiver seeing fewer than the 10 frames it
		# needs in its 4 s window: its sender starts a socat process per
		# message in the remote netns, and on a loaded TCG host too few
		# start in time. Only when it verified some frames and none was
		# on a wrong queue or CPU ("count: pass=N nohash=N fail=0").
		[[ $line =~ too\ few\ frames\ for\ verification ]] && few=true
		if [[ $line =~ count:\ pass=([0-9]+)\ nohash=[0-9]+\ fail=([0-9]+) ]]; then
			[[ ${BASH_REMATCH[1]} != 0 ]] && verified=true
			[[ ${BASH_REMATCH[2]} == 0 ]] || wrong=true
		fi
		[[ $line =~ Check\ failed\ (.*[^\ ])\ *$ ]] && checks_failed+=("${BASH_REMATCH[1]}")
		# A shell test's message just before its case line ("... is not
		# valid on eth0 (expected 1000, got 900)").
		if [[ $line =~ ^#\ *([^#\ ].*[^\ ])\ *$ ]]; then
			message=${BASH_REMATCH[1]}
		elif [[ ! $line =~ ^(not\ )?ok\  ]]; then
			message=
		fi
		# ksft prints an exception's traceback as "# Exception| ...";
		# its last unindented line is the exception and its message.
		[[ $line =~ ^#\ *Exception\|\ ?([^\ ].*[^\ ])\ *$ ]] &&
			[[ ${BASH_REMATCH[1]} != Traceback* ]] && exception=${BASH_REMATCH[1]}
		[[ $line =~ Expected\ \{([^}]*)\} ]] && expected=${BASH_REMATCH[1]}
		if [[ $line =~ Received\ \{([^}]*)\} ]]; then
			gro_tries=$((gro_tries + 1))
			split_only "$expected" "$(sed 's/\[!=[0-9]*\]/ /g' <<<"${BASH_REMATCH[1]}")" || gro_split_only=false
		fi
		if [[ $line =~ ^(not\ )?ok\ [0-9]+\ ([^#]*[^#\ ])(\ *#\ *(.*))?$ ]]; then
			verdict=${BASH_REMATCH[1]:+fail}
			cname=${BASH_REMATCH[2]}
			comment=${BASH_REMATCH[4]}
			[ -z "$verdict" ] && case $comment in SKIP*|skip*) verdict=skip ;; *) verdict=ok ;; esac
		elif [[ $line =~ ^TEST:\ (.*[^\ ])\ +\[\ *(OK|FAIL|SKIP|XFAIL)\ *\]$ ]]; then
			cname="$name: ${BASH_REMATCH[1]}"
			case ${BASH_REMATCH[2]} in OK|XFAIL) verdict=ok ;; SKIP) verdict=skip ;; *) verdict=fail ;; esac
			comment=
		else
			continue
		fi
		cases=$((cases + 1))
		# Upstream names a case "file.case"; keep that, one word.
		cname=${cname// /_}
		# GRO flushing a train early: napi_complete_done() flushes
		# what GRO holds from an earlier jiffy (HZ=250: 4 ms), and under
		# TCG a 16-frame train takes 1.5-5 ms to arrive. Only when every
		# try came as the expected bytes in more frames, none lost or
		# merged too far (testing.rst). Else what upstream.skip says;
		# always for the cases in the card's coalescing (hw_*), where
		# no NAPI flush is involved.
		entry=
		if [ "$verdict" = fail ] && [[ $cname == gro.test.* ]] && [[ $cname != gro.test.hw_* ]] &&
			[ $gro_tries -ge 6 ] && $gro_split_only; then
			entry="env every try's train arrived in more pieces, no byte lost: GRO flushed at a jiffy change (TCG spreads the train over 1.5-5 ms)"
		fi
		# (Before upstream.skip's entry for so_txtime: a retry is for
		# the cases this does not explain.)
		if [ -z "$entry" ] && [ "$verdict" = fail ] && $late && ! $wrong && $wire_ok && [[ $cname == so_txtime.* ]] &&
			txtime_case_in_time "$exception $comment"; then
			entry="env a frame missed its delivery window above the driver: its sender or receiver started later than the 200 ms head start so_txtime gives them, or its qdisc released it late (TCG); the driver and cards carried every frame in the qdisc's order, this case's each within 8 ms"
		fi
		[ -n "$entry" ] || entry=$(listed "$cname")
		# A case that failed only because its iperf3 did not stop (no
		# check failed; the exception cut the case short, so its own
		# checks may not have run): once more, alone, whatever its own
		# entry says; a second time, a skip that says why.
		if [ "$verdict" = fail ] && $iperf_stuck && [ ${#checks_failed[@]} -eq 0 ]; then
			stuck="iperf3 stayed in its SIGTERM handler, waiting on a lock its interrupted main thread held"
			if [ "$try" -lt 2 ]; then entry="retry 2 $stuck"; else entry="env $stuck"; fi
		fi
		if [ -z "$entry" ] && [ "$verdict" = fail ] && $few && $verified && ! $wrong && [[ $cname == toeplitz.* ]]; then
			entry="env fewer than 10 frames in the receiver's 4 s window, each one it saw on the right queue: the sender's socat processes started too slowly (TCG)"
		fi
		kind=${entry%% *} reason=${entry#* }
		if [ "$kind" = timing ]; then
			# "timing LIMIT REASON": skipped only if every failed check
			# was "T >= LIMIT".
			limit=${reason%% *} reason="time limit of $limit s: ${reason#* }"
			for c in "${checks_failed[@]}"; do
				[[ $c =~ ^[0-9.e+-]+\ \>=\ ${limit//./\\.}$ ]] || kind=timing-other
			done
			[ ${#checks_failed[@]} -gt 0 ] || kind=timing-other
		fi
		# The reason a failure gets: upstream's comment, else its last
		# failed check, else its exception (what the summary shows).
		if [ -z "$comment" ] && [ "$verdict" = fail ]; then
			if [ ${#checks_failed[@]} -gt 0 ]; then
				comment="check failed ${checks_failed[-1]}"
			elif [ -n "$exception" ]; then
				comment=$exception
			elif [ -n "$message" ]; then
				comment=$message
			fi
		fi
		new_case
		# so_txtime's frames lost, duplicated or reordered on their way
		# through the driver and cards: no try again.
		[ "$kind" = retry ] && [[ $cname == so_txtime.* ]] && ! $wire_ok && kind=
		if [ "$kind" = retry ]; then
			tries=${reason%% *} reason=${reason#* }
			if [ "$verdict" = fail ] && [ "$try" -lt "$tries" ]; then
				echo "# $cname: try $try of $tries failed (${comment:-no reason}), once more: $reason"
				listed_failures=$((listed_failures + 1))
				queue+=("$((try + 1)) $t -t ${cname#*.}")
				continue
			fi
			[ "$verdict" = fail ] && comment="try $try of $tries: $comment"
			kind=
			[ "$verdict" = ok ] && [ "$try" -gt 1 ] && echo "# $cname: passed on try $try of $tries"
		fi
		case $verdict/$kind in
		ok/|ok/timing|ok/timing-other)
			ktap_result ok "$cname" ;;
		fail/timing)
			listed_failures=$((listed_failures + 1))
			ktap_result skip "$cname" "$reason" ;;
		ok/*)
			ktap_result fail "$cname" "passes, but upstream.skip says it cannot: drop it from the list" ;;
		skip/skip|skip/todo|skip/env)
			ktap_result skip "$cname" "$kind: $reason" ;;
		fail/todo|fail/env)
			listed_failures=$((listed_failures + 1))
			ktap_result skip "$cname" "$kind: $reason" ;;
		skip/*)
			ktap_result fail "$cname" "skipped (${comment#SKIP }), and upstream.skip does not list it" ;;
		*)
			ktap_result fail "$cname" "$comment" ;;
		esac
	done <"$out"
	# A test that ran no case, or died or timed out, fails as a whole.
	case $rc in
	4) if [ $cases -eq 0 ]; then
		# A test without KTAP cases that skipped as a whole (ksft's 4).
		entry=$(listed "$name")
		case ${entry%% *} in
		skip|todo|env) ktap_result skip "$name" "${entry%% *}: ${entry#* }" ;;
		*) ktap_result fail "$name" "skipped as a whole ($(tail -n1 "$out")), and upstream.skip does not list it" ;;
		esac
	fi ;;
	0) [ $cases -gt 0 ] || ktap_result fail "$name" "no test case ran" ;;
	124|137) ktap_result fail "$name" "timed out after ${CASE_TIMEOUT}s" ;;
	# Failing: fine if its failed cases were reported (as failures, or
	# as listed ones).
	*) [ $cases -gt 0 ] && [ $((ktap_failed - failed_before + listed_failures)) -gt 0 ] ||
		ktap_result fail "$name" "exit $rc" ;;
	esac
	# After a failure, what the driver logged meanwhile (a reset, a
	# timed-out admin command): the KTAP result cannot say it.
	if [ $ktap_failed -gt $failed_before ]; then
		dmesg | awk -v t="$uptime0" -F'[][]' '$2 + 0 >= t + 0' | grep -E 'rsnic|NETDEV WATCHDOG' |
			tail -n 20 | sed 's/^/# kernel: /'
		# And where frames the cards were given went, if not to the
		# wire: a count that "expected N, got M" cannot show.
		losses_delta "$losses0" "$(card_losses)" | sed 's/^/# cards: /'
	fi
done
check "no kernel warnings" dmesg_clean
echo "1..$ktap_count"
ktap_finish
