#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Prints the benchmark tables (rsnic next to virtio-net, with the ratio;
the RDMA part: nvme-rdma on rsnic next to rdma_rxe, and the doorbell
batching) and writes them as JSON and a PNG chart.

bench-report.py RESULT.json OUTDIR [RDMA.json]"""

import json
import os
import sys

ROWS = [
    ("tcp_1_mbps", "TCP, 1 stream (Mbit/s)", True),
    ("tcp_4_mbps", "TCP, 4 streams (Mbit/s)", True),
    ("udp64_pps", "UDP 64 B (packets/s)", True),
    ("pktgen_pps", "pktgen 60 B, burst 32 (frames/s)", True),
    ("rr_p50_us", "UDP request/response p50 (us)", False),
    ("rr_p99_us", "UDP request/response p99 (us)", False),
]


RDMA_ROWS = [
    ("iops_4k_qd32", "nvme-rdma 4 KiB random read, QD 32 (IOPS)", True),
    ("mib_s_128k_qd8", "nvme-rdma 128 KiB read, QD 8 (MiB/s)", True),
    ("lat_4k_qd1_p50_us", "nvme-rdma 4 KiB read, QD 1, p50 (us)", False),
    ("lat_4k_qd1_p99_us", "nvme-rdma 4 KiB read, QD 1, p99 (us)", False),
]


PERFTEST_ROWS = [
    ("write_bw_64b_mib_s", "ib_write_bw 64 B (MiB/s)", True),
    ("write_bw_64b_mmsg_s", "ib_write_bw 64 B (Mmsg/s)", True),
    ("write_bw_4096b_mib_s", "ib_write_bw 4 KiB (MiB/s)", True),
    ("write_bw_65536b_mib_s", "ib_write_bw 64 KiB (MiB/s)", True),
    ("write_lat_64b_p50_us", "ib_write_lat 64 B p50 (us)", False),
    ("write_lat_64b_p99_us", "ib_write_lat 64 B p99 (us)", False),
    ("send_lat_64b_p50_us", "ib_send_lat 64 B p50 (us)", False),
    ("send_lat_64b_p99_us", "ib_send_lat 64 B p99 (us)", False),
    ("write_lat_64b_inline_p50_us", "ib_write_lat 64 B inline (-I 64) p50 (us)", False),
    ("send_lat_64b_inline_p50_us", "ib_send_lat 64 B inline (-I 64) p50 (us)", False),
    ("write_bw_65536b_host_cores", "host CPU (cores), ib_write_bw 64 KiB", False),
    ("write_bw_65536b_host_cpu_s_per_gb", "host CPU s/GB, ib_write_bw 64 KiB", False),
    ("write_lat_64b_host_cores", "host CPU (cores), ib_write_lat 64 B", False),
]


def print_perftest(engine, rxe):
    """perftest from user space: the engine next to rdma_rxe on the same
    netdevs, median and [min-max] of every run."""
    for d in (engine, rxe):
        # Host CPU seconds per GB moved, run by run (the lists are in run order).
        runs = d["runs"]
        runs["write_bw_65536b_host_cpu_s_per_gb"] = [
            round(cores / (mib * 2**20 / 1e9), 2)
            for cores, mib in zip(runs["write_bw_65536b_host_cores"], runs["write_bw_65536b_mib_s"])]
        xs = sorted(runs["write_bw_65536b_host_cpu_s_per_gb"])
        d["write_bw_65536b_host_cpu_s_per_gb"] = xs[len(xs) // 2]
    print(f"{'perftest, user space':38} {'rsnic engine':>26} {'rdma_rxe on rsnic':>26} {'ratio':>7}")
    for key, label, higher_better in PERFTEST_ROWS:
        e, r = engine[key], rxe[key]
        note = "" if higher_better else " (lower is better)"
        cells = [spread_cell(d["runs"][key]) for d in (engine, rxe)]
        print(f"{label:38} {cells[0]:>26} {cells[1]:>26} {e / r if r else float('nan'):>7.2f}{note}")
    print(f"  ({engine['repeats']} runs each; host CPU: the vCPUs, QEMU's other threads and both"
          " cards' emulators, CPU seconds over the run's wall time)")


def print_side_by_side(rows, rsnic, reference, ref_name, width):
    """One line per (key, label, higher_better) row: rsnic's number, the
    reference's, and their ratio."""
    print(f"{'':{width}} {'rsnic':>10} {ref_name:>10} {'ratio':>7}")
    for key, label, higher_better in rows:
        r, x = rsnic[key], reference[key]
        ratio = r / x if x else float("nan")
        note = "" if higher_better else " (lower is better)"
        print(f"{label:{width}} {r:>10} {x:>10} {ratio:>7.2f}{note}")


DEVICES = [("rsnic", "rsnic"), ("rsnic-stream", "rsnic, rx-stream"), ("rsnic-nooffload", "rsnic, no offl."),
           ("rsnic-nogro", "rsnic, no card GRO"), ("rsnic-hds", "rsnic, split"),
           ("rsnic-coalesce", "rsnic, moderated"),
           ("virtio-tap", "virtio tap"), ("virtio-tap-nogro", "virtio, no guest TSO"),
           ("virtio-dgram", "virtio dgram")]

REPEATED_ROWS = [
    ("tcp_1_mbps", "TCP, 1 stream (Mbit/s)"),
    ("tcp_4_mbps", "TCP, 4 streams (Mbit/s)"),
    ("udp64_pps", "UDP 64 B (packets/s)"),
    ("udp1500_pps", "UDP 1500 B (packets/s)"),
    ("rr_p50_us", "UDP req/resp p50 (us)"),
    ("rr_p99_us", "UDP req/resp p99 (us)"),
    ("rr_p999_us", "UDP req/resp p99.9 (us)"),
    ("rr_timeouts", "UDP req/resp timeouts (of 3000)"),
    ("tcp1_host_cpu_s_per_gb", "host CPU s/GB, TCP 1 stream"),
    ("tcp4_host_cpu_s_per_gb", "host CPU s/GB, TCP 4 streams"),
    ("tcp4_emu_cpu_s_per_gb", "  of it the cards' processes"),
    ("tcp4_guest_cpu_s_per_gb", "guest CPU s/GB, TCP 4 streams"),
    ("udp64_host_cpu_s_per_mpkt", "host CPU s/Mpkt, UDP 64 B"),
    ("udp64_guest_cpu_s_per_mpkt", "guest CPU s/Mpkt, UDP 64 B"),
    ("udp1500_host_cpu_s_per_mpkt", "host CPU s/Mpkt, UDP 1500 B"),
]


def fmt(x):
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def print_repeated(result):
    """The repeated runs: median [min-max] of every device, side by side,
    then the offload state each device ran with."""
    rep = result["repeated"]
    devs = [(k, label) for k, label in DEVICES if k in rep]
    paired = rep.get("rsnic", {}).get("paired_ratio_to_virtio_tap")
    print(f"{result['repeats']} runs of {result['seconds_per_run']} s per figure, devices interleaved;"
          f" median [min-max]. vhost-net: {result.get('vhost', 'unknown')}")
    if paired:
        print("paired: rsnic's run over virtio tap's of the same round, median [min-max]")
    print(f"{'':32}" + "".join(f"{label:>24}" for _, label in devs) + (f"{'paired':>20}" if paired else ""))
    cell = lambda s: f"{fmt(s['median'])} [{fmt(s['min'])}-{fmt(s['max'])}]" if s else "n/a"
    for key, label in REPEATED_ROWS:
        cells = [cell(rep[k].get(key)) for k, _ in devs]
        if paired:
            r = paired.get(key)
            cells.append(f"{r['median']:.2f} [{r['min']:.2f}-{r['max']:.2f}]" if r else "n/a")
            cells[-1] = f"{cells[-1]:>20}"
        print(f"{label:32}" + "".join(f"{c:>24}" for c in cells[:len(devs)]) + "".join(cells[len(devs):]))
    for k, label in devs:
        st = rep[k]["state"]
        on = [name for name, v in st["offloads"].items() if v == "on"]
        rings = f", rings RX {st.get('rx_ring')} TX {st.get('tx_ring')}" if "rx_ring" in st else ""
        print(f"  {label}: {st['combined']} queue pair(s){rings}; on: {', '.join(on) or 'none'}")


def chart_repeated(rep, path):
    """One panel per figure, a bar per device with min-max error bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in REPEATED_ROWS if r[0] in ("tcp_1_mbps", "tcp_4_mbps", "udp64_pps", "rr_p99_us",
                                                   "tcp4_host_cpu_s_per_gb", "udp64_host_cpu_s_per_mpkt")]
    devs = [(k, label) for k, label in DEVICES if k in rep]
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.6))
    colors = ["#c0392b", "#8e44ad", "#e59866", "#2c3e50", "#85929e"]
    for ax, (key, label) in zip(axes, rows):
        med = [rep[k][key]["median"] for k, _ in devs]
        lo = [m - rep[k][key]["min"] for m, (k, _) in zip(med, devs)]
        hi = [rep[k][key]["max"] - m for m, (k, _) in zip(med, devs)]
        ax.bar([l for _, l in devs], med, yerr=[lo, hi], capsize=3, color=colors[:len(devs)])
        ax.set_title(label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.tick_params(axis="x", labelrotation=30)
    fig.suptitle("rsnic vs virtio-net, same VM: median, min-max error bars", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def print_xdp(xdp):
    """Frames/s the far end handled with the stack, XDP_DROP and XDP_TX:
    median [min-max] over the runs, and the generator's median."""
    def cell(entry):
        if "error" in entry:
            return "n/a"
        p = sorted(entry["pps"])
        return f"{p[len(p) // 2]} [{p[0]}-{p[-1]}]" if p else "n/a"

    def gen(entry):
        g = sorted(entry.get("gen_pps", []))
        return g[len(g) // 2] if g else "n/a"

    runs = max((len(e.get("pps", [])) for d in xdp.values() for e in d.values()), default=0)
    print(f"{'pktgen 60 B -> far end, frames/s handled':42} {'rsnic':>24} {'virtio-net':>24}"
          f"   ({runs} runs: median [min-max]; generator median)")
    for mode, label in (("stack", "stack (no program, UDP drops)"), ("drop", "native XDP_DROP"),
                        ("tx", "native XDP_TX (sent back)")):
        r, v = xdp.get("rsnic", {}).get(mode, {}), xdp.get("virtio", {}).get(mode, {})
        print(f"{label:42} {cell(r):>24} {cell(v):>24}   gen {gen(r)} / {gen(v)}")
        for name, e in (("rsnic", r), ("virtio-net", v)):
            if "error" in e:
                print(f"{'':42} {name}: {e['error']}")


def print_zerocopy(zc):
    """One TCP stream into card A, recv() against io_uring zcrx on the
    same queue: median [min-max] of the rate and the CPU per GB."""
    print(f"{'TCP receive, ' + str(zc.get('mib_per_run')) + ' MiB, card A last queue':42}"
          f"{'socket (recv)':>26}{'zcrx':>26}")
    for key, label in (("mbps", "Mbit/s"), ("rx_cpu_s_per_gb", "receiver CPU s/GB"),
                       ("guest_cpu_s_per_gb", "guest CPU s/GB (both ends)"),
                       ("host_cpu_s_per_gb", "host CPU s/GB"),
                       ("queue_bytes_per_payload", "steered queue bytes / payload")):
        cells = ""
        for mode in ("socket", "zcrx"):
            f = zc.get(mode, {}).get(key)
            cells += f"{fmt(f['median']) + ' [' + fmt(f['min']) + '-' + fmt(f['max']) + ']' if f else 'n/a':>26}"
        print(f"{label:42}{cells}")


def spread_cell(runs):
    """median [min-max] of a list of numbers."""
    xs = sorted(runs)
    return f"{fmt(xs[len(xs) // 2])} [{fmt(xs[0])}-{fmt(xs[-1])}]"


def print_sweeps(sweeps):
    """TCP by write size and by queue pairs: Mbit/s median [min-max] and
    host CPU s/GB (median) of rsnic and the tap pair."""
    for group, label in (("tcp_msg", "TCP 1 stream, write size (B)"), ("tcp4_queues", "TCP 4 streams, queue pairs")):
        g = sweeps.get(group, {})
        devs = [d for d in ("rsnic", "virtio-tap") if d in g]
        print(f"{label:30}" + "".join(f"{d + ' Mbit/s':>26}{'CPU s/GB':>10}" for d in devs) + f"{'ratio':>7}")
        for point in sorted(g.get("rsnic", {}), key=int):
            cells, meds = "", []
            for d in devs:
                s = g[d].get(point)
                if not s:
                    cells += f"{'n/a':>26}{'':>10}"
                    continue
                meds.append(s["mbps"]["median"])
                cells += f"{spread_cell(s['mbps']['runs']):>26}{fmt(s['host_cpu_s_per_gb']['median']):>10}"
            ratio = meds[0] / meds[1] if len(meds) == 2 and meds[1] else float("nan")
            print(f"{point:30}{cells}{ratio:>7.2f}")


def chart_sweeps(sweeps, path):
    """Two panels, Mbit/s against write size and against queue pairs,
    with min-max error bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, (group, xlabel) in zip(axes, (("tcp_msg", "TCP write size (bytes), 1 stream"),
                                          ("tcp4_queues", "queue pairs, TCP 4 streams"))):
        for dev, color in (("rsnic", "#c0392b"), ("virtio-tap", "#2c3e50")):
            points = sweeps.get(group, {}).get(dev, {})
            xs = sorted(points, key=int)
            med = [points[x]["mbps"]["median"] for x in xs]
            lo = [m - points[x]["mbps"]["min"] for m, x in zip(med, xs)]
            hi = [points[x]["mbps"]["max"] - m for m, x in zip(med, xs)]
            ax.errorbar([int(x) for x in xs], med, yerr=[lo, hi], capsize=3, marker="o", color=color, label=dev)
        if group == "tcp_msg":
            ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel("Mbit/s", fontsize=8)
        ax.legend(fontsize=7)
    fig.suptitle("rsnic vs virtio-net (tap), same VM: median, min-max error bars", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def print_pcie(pcie):
    """Ensō's metric: metadata bytes per packet and their share of all
    bytes moved over PCIe, with the parts."""
    print(f"{'PCIe metadata (both ends)':38}{'bytes/packet':>14}{'share [min-max]':>24}"
          f"{'desc+compl':>12}{'doorbells':>11}{'interrupts':>11}{'dev frames/pkt':>16}")
    for w, wl in (("udp64", "UDP 64 B"), ("tcp1500", "TCP, 1500 B packets")):
        for dev in ("rsnic", "rsnic-stream", "virtio-tap"):
            e = pcie.get(dev, {}).get(w)
            if not e:
                continue
            parts = {k: sum(r["parts"][k] for r in e["runs"]) for k in e["runs"][0]["parts"]}
            total = max(sum(parts.values()), 1)
            share = (f"{100 * e['meta_share']:.1f}% [{100 * e['meta_share_min']:.1f}-"
                     f"{100 * e['meta_share_max']:.1f}]")
            print(f"{wl + ', ' + dev:38}{e['meta_bytes_per_packet']:>14}{share:>24}"
                  + "".join(f"{100 * parts[k] / total:>10.0f}%" for k in
                            ("descriptors_completions", "doorbells", "interrupts"))
                  + f"{e.get('device_packets_per_packet', float('nan')):>16}")
    print("  (virtio-net: a lower bound from the split-virtqueue layout, see bench-pcie-guest.sh;"
          " rsnic-stream: desc+compl holds its record headers and tail writes;"
          " dev frames/pkt: frames through the device's queues per packet of the workload)")


def print_rdma(rdma):
    """The RDMA tables: fio on the engine and on rdma_rxe (over the rsnic
    netdevs, when measured, and over the virtio-net tap pair), then
    doorbell batching."""
    rxe_rsnic = rdma.get("rxe_on_rsnic")
    if rxe_rsnic:
        print(f"{'':44} {'engine':>10} {'rxe/rsnic':>10} {'ratio':>7} {'rxe/virtio':>10}")
        for key, label, higher_better in RDMA_ROWS:
            e, r, v = rdma["rsnic"][key], rxe_rsnic[key], rdma["rxe"][key]
            note = "" if higher_better else " (lower is better)"
            print(f"{label:44} {e:>10} {r:>10} {e / r if r else float('nan'):>7.2f} {v:>10}{note}")
        if "runs" in rdma["rsnic"]:
            print(f"  every run, median [min-max] ({rdma['rsnic']['repeats']} runs each):")
            for key, label, _ in RDMA_ROWS:
                cells = [spread_cell(d["runs"][key]) for d in (rdma["rsnic"], rxe_rsnic, rdma["rxe"])]
                print(f"  {label:42} " + " | ".join(cells))
    else:
        print_side_by_side(RDMA_ROWS, rdma["rsnic"], rdma["rxe"], "rdma_rxe", 44)
    print()
    print(f"{'RDMA WRITE, one doorbell per WQE vs per 32':44} {'batch 1':>10} {'batch 32':>10} {'gain':>7}")
    labels = {"rsnic": "rsnic engine", "rxe_on_rsnic": "rdma_rxe on rsnic", "rxe": "rdma_rxe on virtio"}
    for name, label in labels.items():
        w = rdma.get(f"write_{name}")
        if not w:
            continue
        for size in (64, 4096):
            one, many = w[f"wqe_per_s_{size}b_batch1"], w[f"wqe_per_s_{size}b_batch32"]
            spread = ""
            if "runs" in w:
                spread = (f"   [{w['runs'][f'{size}b_batch1'][0]}-{w['runs'][f'{size}b_batch1'][-1]}]"
                          f" [{w['runs'][f'{size}b_batch32'][0]}-{w['runs'][f'{size}b_batch32'][-1]}]")
            print(f"{f'{label}, {size} B (WQE/s)':44} {one:>10} {many:>10} {many / max(one, 1):>7.2f}{spread}")
    if "perftest_rsnic" in rdma:
        print()
        print_perftest(rdma["perftest_rsnic"], rdma["perftest_rxe_on_rsnic"])


def main():
    result = json.load(open(sys.argv[1]))
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    if len(sys.argv) > 3:
        result["rdma"] = json.load(open(sys.argv[3]))
    if "rsnic" not in result and "repeated" in result:
        # `qemu/bench.sh repeated`: the main figures only.
        print_repeated(result)
        json.dump(result, open(f"{outdir}/bench-repeated.json", "w"), indent=2)
        print(f"results: {outdir}/bench-repeated.json")
        return
    if "rsnic" not in result:
        print_rdma(result["rdma"])
        json.dump(result, open(f"{outdir}/bench.json", "w"), indent=2)
        print(f"results: {outdir}/bench.json")
        return
    rsnic, virtio = result["rsnic"], result["virtio"]
    if "repeated" in result:
        print_repeated(result)
        print()
        print("One further run each (rsnic and the virtio-net tap pair), with pktgen and doorbells:")
    print_side_by_side(ROWS, rsnic, virtio, "virtio-net", 34)
    print(f"{'rsnic descriptor+completion bytes/packet':42} {rsnic['meta_bytes_per_packet']}"
          f" (payload {rsnic['payload_bytes_per_packet']} bytes/packet)")
    unbatched = result.get("unbatched") or {}
    if unbatched:
        print()
        print(f"{'rsnic TX batching (BQL + xmit_more)':34} {'on':>10} {'off':>10} {'ratio':>7}")
        for key, label, _ in ROWS + [("tx_doorbells_per_packet", "TX doorbells per frame, iperf3", False),
                                    ("pktgen_doorbells_per_packet", "TX doorbells per frame, pktgen", False)]:
            on, off = rsnic[key], unbatched[key]
            print(f"{label:34} {on:>10} {off:>10} {on / off if off else float('nan'):>7.2f}")
        print()
    else:
        print("TX batching off: not measured (the driver did not reload)")
    bond = result.get("bond") or {}
    if bond:
        print(f"{'TCP, 1 stream, VF path vs synthetic (Mbit/s)':42} {bond['vf_tcp_1_mbps']}"
              f" vs {rsnic['tcp_1_mbps']}")
        print(f"{'failover gap over ' + str(bond['switches']) + ' switches (ms)':42}"
              f" p50 {bond['gap_p50_ms']}, max {bond['gap_max_ms']}")
    else:
        print("VF path: not measured (the VF did not come up)")
    gft = result.get("gft") or {}
    if gft:
        print(f"{'GFT, UDP 64 B (packets/s)':42} off {gft['udp64_pps_gft_off']},"
              f" fast path {gft['udp64_pps_fast_path']},"
              f" exception path {gft['udp64_pps_exception_path']}")
        print(f"{'GFT, us per packet (1 / rate)':42} fast path {gft['us_per_packet_fast_path']},"
              f" exception path {gft['us_per_packet_exception_path']}")
        print(f"{'GFT, request/response p50 (us)':42} new flow {gft['rr_new_flow_p50_us']},"
              f" cached flow {gft['rr_cached_flow_p50_us']}")
        print(f"{'GFT, new flows end to end':42} {gft['new_flows_per_s']}/s"
              f" ({gft['new_flows']} installed, {gft['new_flow_backlog_drops']} backlog drops; Python sender)")
        native = gft.get("new_flows_native") or {}
        if native:
            print(f"{'GFT, new flows end to end, pktgen':42} {native['new_flows_per_s']}/s"
                  f" ({native['installs']} of {native['frames']} installed, {native['backlog_drops']}"
                  f" backlog drops; pktgen sent {native['pktgen_pps']} frames/s)")
        if "tcp_conns_per_s_gft_on" in gft:
            print(f"{'GFT, TCP connections/s (open and close)':42} off {gft['tcp_conns_per_s_gft_off']},"
                  f" on {gft['tcp_conns_per_s_gft_on']}"
                  + (f", through NAT {gft['tcp_conns_per_s_gft_nat']}" if "tcp_conns_per_s_gft_nat" in gft else ""))
        for f in gft.get("active_flows") or []:
            if f:
                print(f"{'GFT, pktgen 60 B over ' + str(f['flows']) + ' flows':42} sent {f['pktgen_pps']}/s,"
                      f" card B received {f['received_pps']}/s, hit ratio {f['hit_ratio']}"
                      f" ({f['installed']} flows installed)")
    if "sweeps" in result:
        print()
        print_sweeps(result["sweeps"])
    if "pcie" in result:
        print()
        print_pcie(result["pcie"])
    # Parts that report their own failure as {"error": ...}.
    for key, title, marker, show in (("xdp", "XDP", "rsnic", print_xdp),
                                     ("zerocopy", "zero-copy receive", "socket", print_zerocopy)):
        part = result.get(key) or {}
        if marker in part:
            print()
            show(part)
        elif part:
            print(f"{title}: not measured ({part.get('error')})")
    if "rdma" in result:
        print()
        print_rdma(result["rdma"])
    json.dump(result, open(f"{outdir}/bench.json", "w"), indent=2)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(ROWS), figsize=(3 * len(ROWS), 3.2))
    for ax, (key, label, _) in zip(axes, ROWS):
        ax.bar(["rsnic", "virtio-net"], [rsnic[key], virtio[key]], color=["#c0392b", "#2c3e50"])
        ax.set_title(label, fontsize=8)
        ax.tick_params(labelsize=8)
    fig.suptitle("rsnic vs virtio-net, same VM (TCG)", fontsize=10)
    fig.tight_layout()
    fig.savefig(f"{outdir}/bench.png", dpi=100)
    if "repeated" in result:
        chart_repeated(result["repeated"], f"{outdir}/bench-repeated.png")
        print(f"chart of the repeated runs: {outdir}/bench-repeated.png")
    if "sweeps" in result:
        chart_sweeps(result["sweeps"], f"{outdir}/bench-sweeps.png")
        print(f"chart of the sweeps: {outdir}/bench-sweeps.png")
    print(f"results: {outdir}/bench.json, {outdir}/bench.png")


if __name__ == "__main__":
    main()
