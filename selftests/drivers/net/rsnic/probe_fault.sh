#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A card that fails its self-test is refused with a clear message, the
# other card still binds, the kernel stays healthy, and the card binds
# again once it behaves. Faults are injected in the emulator through the
# harness (see qemu/rsnic-emu/src/control.rs).

source "$(dirname "$0")/lib.sh"

a=$(card_addr A)
b=$(card_addr B)
[ -n "$a" ] && [ -n "$b" ] || skip_all "expected 2 rsnic PFs (not in the rsnic VM?)"
harness ping >/dev/null || skip_all "no harness control channel"

# fault name -> the message probe must print
declare -A expect=(
	[scratch]="self-test failed: scratch register echo: wrote 0x00000000, read 0x00000100"
	[irq]="self-test failed: test interrupt on MSI-X vector 0 not received within 1000 ms"
	[dma]="self-test failed: DMA case 0: fill wrote"
	[all-ones]="self-test failed: magic reads 0xffffffff, expected 0x434e5352"
)
faults=(scratch irq dma all-ones)

ktap_header $((${#faults[@]} * 2 + 2))
for fault in "${faults[@]}"; do
	unload_driver
	harness card A fault "$fault" >/dev/null
	dmesg_mark
	insmod "$RSNIC_KO"
	log=$(dmesg_since_mark)
	ok=true
	is_bound "$a" && { echo "# card A bound despite fault $fault"; ok=false; }
	is_bound "$b" || { echo "# card B not bound"; ok=false; }
	grep -qF "rsnic $a: ${expect[$fault]}" <<<"$log" || { echo "# missing message for $fault:"; echo "$log" | sed 's/^/#   /'; ok=false; }
	[ ! -e "$RSNIC_DEBUGFS/$a" ] || { echo "# debugfs dir of the refused card exists"; ok=false; }
	check "fault $fault: probe refused with a clear message, other card bound" $ok

	harness card A fault none >/dev/null
	echo "$a" >/sys/bus/pci/drivers/rsnic/bind 2>/dev/null
	check "fault $fault: card binds once healthy" is_bound "$a"
done

# A card whose permanent MAC is not unicast still binds; its netdev gets a
# random locally administered address instead.
unload_driver
harness card A fault bad-mac >/dev/null
dmesg_mark
insmod "$RSNIC_KO"
ok=true
is_bound "$a" || { echo "# card A not bound with a bad MAC"; ok=false; }
mac=$(cat /sys/bus/pci/devices/$a/net/*/address 2>/dev/null)
python3 -c 'import sys; b=int(sys.argv[1].split(":")[0], 16); sys.exit(0 if b & 1 == 0 and b & 2 else 1)' "${mac:-01:00}" ||
	{ echo "# netdev MAC '$mac' is not a random unicast address"; ok=false; }
dmesg_since_mark | grep -q "rsnic $a: card's MAC 03:52:53:00:00:0a is not a unicast address" ||
	{ echo "# no warning about the card's MAC"; ok=false; }
check "fault bad-mac: card binds with a random unicast MAC and a warning" $ok
harness card A fault none >/dev/null

unload_driver
load_driver
check "both cards bound at the end" test "$(bound_count)" -eq 2
ktap_finish
