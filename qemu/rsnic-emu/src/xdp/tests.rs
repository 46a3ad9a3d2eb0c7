// SPDX-License-Identifier: GPL-2.0

//! The interpreter on hand-assembled programs.

use super::maps::{err, update, MapError, MapTable, Maps, MAP_TYPE_ARRAY, MAP_TYPE_HASH};
use super::vm::{run, Insn, Program, XdpMd, PSEUDO_MAP, XDP_ABORTED, XDP_DROP, XDP_PASS};

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        dst,
        src,
        off,
        imm,
    }
}

fn bytes(p: &[Insn]) -> Vec<u8> {
    p.iter().flat_map(Insn::encode).collect()
}

/// Drops UDP to port 9 and passes the rest; counts drops in element 1
/// and passes of UDP in element 2 of array map 7 (`lock xadd`).
fn udp9_filter() -> Vec<Insn> {
    vec![
        i(0x61, 2, 1, 0, 0),          // 0: r2 = ctx->data
        i(0x61, 3, 1, 4, 0),          // 1: r3 = ctx->data_end
        i(0xbf, 4, 2, 0, 0),          // 2: r4 = r2
        i(0x07, 4, 0, 0, 42),         // 3: r4 += 42
        i(0x2d, 4, 3, 20, 0),         // 4: if r4 > r3 goto 25
        i(0x69, 5, 2, 12, 0),         // 5: r5 = ethertype (wire order)
        i(0x55, 5, 0, 18, 0x0008),    // 6: if r5 != htons(0x0800) goto 25
        i(0x71, 5, 2, 23, 0),         // 7: r5 = ip protocol
        i(0x55, 5, 0, 16, 17),        // 8: if r5 != UDP goto 25
        i(0x69, 5, 2, 36, 0),         // 9: r5 = udp dport (wire order)
        i(0xdc, 5, 0, 0, 16),         // 10: r5 = be16 r5
        i(0xb7, 6, 0, 0, 2),          // 11: r6 = XDP_PASS
        i(0x55, 5, 0, 1, 9),          // 12: if r5 != 9 goto 14
        i(0xb7, 6, 0, 0, 1),          // 13: r6 = XDP_DROP
        i(0x63, 10, 6, -4, 0),        // 14: *(u32 *)(r10 - 4) = r6
        i(0xbf, 2, 10, 0, 0),         // 15: r2 = r10
        i(0x07, 2, 0, 0, -4),         // 16: r2 += -4
        i(0x18, 1, PSEUDO_MAP, 0, 7), // 17: r1 = map 7
        i(0, 0, 0, 0, 0),             // 18
        i(0x85, 0, 0, 0, 1),          // 19: call map_lookup_elem
        i(0x15, 0, 0, 2, 0),          // 20: if r0 == 0 goto 23
        i(0xb7, 1, 0, 0, 1),          // 21: r1 = 1
        i(0xdb, 0, 1, 0, 0),          // 22: lock *(u64 *)(r0 + 0) += r1
        i(0xbf, 0, 6, 0, 0),          // 23: r0 = r6
        i(0x95, 0, 0, 0, 0),          // 24: exit
        i(0xb7, 0, 0, 0, 2),          // 25: r0 = XDP_PASS
        i(0x95, 0, 0, 0, 0),          // 26: exit
    ]
}

fn udp_frame(dport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[23] = 17;
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f
}

fn counter(maps: &mut MapTable, index: u32) -> u64 {
    let elem = maps.lookup(7, &index.to_le_bytes()).unwrap();
    u64::from_le_bytes(maps.value(7, elem).unwrap().try_into().unwrap())
}

#[test]
fn a_udp_filter_drops_its_port_passes_the_rest_and_counts_both() {
    let mut maps = MapTable::default();
    maps.create(7, MAP_TYPE_ARRAY, 4, 8, 4).unwrap();
    let prog = Program::load(&bytes(&udp9_filter()), |m| m == 7).unwrap();
    let md = XdpMd::default();
    let mut arp = udp_frame(9);
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    let cases = [
        (udp_frame(9), XDP_DROP),
        (udp_frame(10), XDP_PASS),
        (udp_frame(9), XDP_DROP),
        (arp, XDP_PASS),
        (udp_frame(9)[..40].to_vec(), XDP_PASS),
    ];
    for (mut frame, want) in cases {
        assert_eq!(run(&prog, &mut frame, md, &mut maps), want);
    }
    assert_eq!((counter(&mut maps, 1), counter(&mut maps, 2)), (2, 1));
}

#[test]
fn an_access_the_program_did_not_bound_aborts() {
    // r2 = data; r0 = *(u8 *)(r2 + 100): past a 60-byte frame.
    let prog = [
        i(0x61, 2, 1, 0, 0),
        i(0x71, 0, 2, 100, 0),
        i(0x95, 0, 0, 0, 0),
    ];
    let prog = Program::load(&bytes(&prog), |_| false).unwrap();
    let mut frame = udp_frame(1);
    let mut maps = MapTable::default();
    assert_eq!(
        run(&prog, &mut frame, XdpMd::default(), &mut maps),
        XDP_ABORTED
    );
    // A store into the context, below the stack, or through a number
    // that points nowhere aborts too.
    for store in [
        i(0x62, 1, 0, 0, 1),     // *(u32 *)(ctx + 0) = 1
        i(0x62, 10, 0, -516, 1), // *(u32 *)(r10 - 516) = 1
        i(0x62, 0, 0, 0, 1),     // *(u32 *)(0) = 1
    ] {
        let p = Program::load(
            &bytes(&[store, i(0xb7, 0, 0, 0, 2), i(0x95, 0, 0, 0, 0)]),
            |_| false,
        )
        .unwrap();
        assert_eq!(
            run(&p, &mut frame, XdpMd::default(), &mut maps),
            XDP_ABORTED,
            "{store:?}"
        );
    }
}

#[test]
fn arithmetic_follows_ebpf() {
    let mut maps = MapTable::default();
    let mut frame = udp_frame(1);
    let eval = |p: &[Insn], maps: &mut MapTable, frame: &mut Vec<u8>| {
        let mut p = p.to_vec();
        p.push(i(0x95, 0, 0, 0, 0));
        run(
            &Program::load(&bytes(&p), |_| false).unwrap(),
            frame,
            XdpMd::default(),
            maps,
        )
    };
    // Division by zero gives 0, modulo by zero keeps the dividend.
    assert_eq!(
        eval(
            &[i(0xb7, 0, 0, 0, 7), i(0x37, 0, 0, 0, 0)],
            &mut maps,
            &mut frame
        ),
        0
    );
    assert_eq!(
        eval(
            &[i(0xb7, 0, 0, 0, 7), i(0x97, 0, 0, 0, 0)],
            &mut maps,
            &mut frame
        ),
        7
    );
    // 32-bit ALU zero-extends; shifts are masked.
    assert_eq!(
        eval(
            &[
                i(0xb7, 0, 0, 0, -1),
                i(0x04, 0, 0, 0, 1),
                i(0x77, 0, 0, 0, 64 + 1)
            ],
            &mut maps,
            &mut frame
        ),
        0
    );
    // JMP32 compares the low halves: 0x1_0000_0005 as 5.
    let p = [
        i(0x18, 0, 0, 0, 5),
        i(0, 0, 0, 0, 1),
        i(0x16, 0, 0, 1, 5), // if w0 == 5 goto +1
        i(0xb7, 0, 0, 0, 0),
        i(0x77, 0, 0, 0, 32), // r0 >>= 32: 1 if the jump was taken
    ];
    assert_eq!(eval(&p, &mut maps, &mut frame), 1);
    // A loop that never ends stops at the card's budget.
    let spin = [i(0x05, 0, 0, -1, 0)];
    assert_eq!(eval(&spin, &mut maps, &mut frame), XDP_ABORTED);
}

#[test]
fn the_card_refuses_what_it_cannot_run() {
    let exit = i(0x95, 0, 0, 0, 0);
    for (prog, why) in [
        (
            vec![i(0x85, 0, 0, 0, 5), exit],
            "a helper the card does not run",
        ),
        (vec![i(0x85, 0, 1, 0, 1), exit], "calls other than helpers"),
        (vec![i(0x05, 0, 0, 5, 0), exit], "a jump out of the program"),
        (
            vec![i(0x18, 1, PSEUDO_MAP, 0, 3), i(0, 0, 0, 0, 0), exit],
            "no such map",
        ),
        (vec![i(0x30, 0, 0, 0, 12), exit], "legacy packet loads"),
        (
            vec![i(0x18, 1, 0, 0, 3)],
            "ld_imm64 without its second half",
        ),
        (vec![exit, i(0xb7, 0, 0, 0, 2)], "falls off its end"),
    ] {
        let e = Program::load(&bytes(&prog), |m| m == 7).unwrap_err();
        assert!(e.0.contains(why), "{e:?} for {why}");
    }
}

#[test]
fn hash_maps_follow_the_update_flags_and_their_size() {
    let mut m = MapTable::default();
    assert_eq!(m.create(1, MAP_TYPE_HASH, 2, 4, 2), Ok(()));
    assert_eq!(m.create(1, MAP_TYPE_HASH, 2, 4, 2), Err(MapError::Exists));
    assert_eq!(m.create(2, MAP_TYPE_ARRAY, 2, 4, 2), Err(MapError::BadSize));
    assert_eq!(m.create(3, 9, 4, 4, 2), Err(MapError::BadType));
    let v = [1u8, 2, 3, 4];
    assert_eq!(m.update(1, b"ab", &v, update::EXIST), err::ENOENT);
    assert_eq!(m.update(1, b"ab", &v, update::NOEXIST), 0);
    assert_eq!(m.update(1, b"ab", &v, update::NOEXIST), err::EEXIST);
    assert_eq!(m.update(1, b"cd", &v, update::ANY), 0);
    assert_eq!(m.update(1, b"ef", &v, update::ANY), err::E2BIG);
    assert_eq!(m.next_key(1, None), Some(b"ab".to_vec()));
    assert_eq!(m.next_key(1, Some(b"ab")), Some(b"cd".to_vec()));
    assert_eq!(m.next_key(1, Some(b"cd")), None);
    assert_eq!(m.delete(1, b"ab"), 0);
    assert_eq!(m.delete(1, b"ab"), err::ENOENT);
    assert_eq!(m.update(1, b"ef", &v, update::ANY), 0);
    assert_eq!(m.lookup(1, b"ab"), None);
    let e = m.lookup(1, b"ef").unwrap();
    assert_eq!(m.value(1, e).unwrap(), &v);
    // An array's elements always exist and cannot be deleted.
    assert_eq!(m.create(4, MAP_TYPE_ARRAY, 4, 4, 2), Ok(()));
    assert_eq!(
        m.update(4, &1u32.to_le_bytes(), &v, update::NOEXIST),
        err::EEXIST
    );
    assert_eq!(
        m.update(4, &2u32.to_le_bytes(), &v, update::ANY),
        err::EINVAL
    );
    assert_eq!(m.delete(4, &0u32.to_le_bytes()), err::EINVAL);
    assert_eq!(m.next_key(4, Some(&1u32.to_le_bytes())), None);
}

#[test]
fn the_host_reads_and_writes_the_card_s_maps_through_admin_commands() {
    use super::offload::XdpOffload;
    use crate::hw::xdp::{map_op, KEY_ROOM};
    use crate::hw::{AdminCmd, AdminStatus};
    let (dma, _f) = crate::dma::tests::two_region_space();
    let x = XdpOffload::default();
    let create = AdminCmd::XdpMapCreate {
        id: 7,
        map_type: MAP_TYPE_HASH,
        key_size: 2,
        value_size: 4,
        max_entries: 8,
    };
    assert_eq!(x.execute(&dma, create), AdminStatus::Ok);
    assert_eq!(x.execute(&dma, create), AdminStatus::BadState);
    let buf = 0x1000;
    let elem = |op, flags| AdminCmd::XdpMapElem {
        id: 7,
        op,
        flags,
        buf,
    };
    for (key, value) in [(b"ab", [1u8, 0, 0, 0]), (b"cd", [2, 0, 0, 0])] {
        dma.write(buf, key).unwrap();
        dma.write(buf + KEY_ROOM, &value).unwrap();
        assert_eq!(
            x.execute(&dma, elem(map_op::UPDATE, update::NOEXIST)),
            AdminStatus::Ok
        );
    }
    assert_eq!(
        x.execute(&dma, elem(map_op::UPDATE, update::NOEXIST)),
        AdminStatus::BadState
    );
    // Walk the keys the way bpftool map dump does.
    let mut keys = Vec::new();
    let mut first = 1;
    while x.execute(&dma, elem(map_op::NEXT_KEY, first)) == AdminStatus::Ok {
        let mut k = [0u8; 2];
        dma.read(buf + KEY_ROOM, &mut k).unwrap();
        dma.write(buf, &k).unwrap();
        keys.push(k);
        first = 0;
    }
    assert_eq!(keys, [*b"ab", *b"cd"]);
    dma.write(buf, b"ab").unwrap();
    assert_eq!(x.execute(&dma, elem(map_op::LOOKUP, 0)), AdminStatus::Ok);
    let mut v = [0u8; 4];
    dma.read(buf + KEY_ROOM, &mut v).unwrap();
    assert_eq!(v, [1, 0, 0, 0]);
    assert_eq!(x.execute(&dma, elem(map_op::DELETE, 0)), AdminStatus::Ok);
    assert_eq!(
        x.execute(&dma, elem(map_op::LOOKUP, 0)),
        AdminStatus::NotFound
    );
    // A map a loaded program names stays until it is unloaded.
    let prog = bytes(&[
        i(0x18, 1, PSEUDO_MAP, 0, 7),
        i(0, 0, 0, 0, 0),
        i(0xb7, 0, 0, 0, 2),
        i(0x95, 0, 0, 0, 0),
    ]);
    dma.write(0x3000, &prog).unwrap();
    let load = AdminCmd::XdpLoad {
        prog: 0x3000,
        count: 4,
    };
    assert_eq!(x.execute(&dma, load), AdminStatus::Ok);
    assert_eq!(
        x.execute(&dma, AdminCmd::XdpMapDestroy { id: 7 }),
        AdminStatus::BadState
    );
    assert_eq!(x.execute(&dma, AdminCmd::XdpUnload), AdminStatus::Ok);
    assert_eq!(
        x.execute(&dma, AdminCmd::XdpMapDestroy { id: 7 }),
        AdminStatus::Ok
    );
    assert_eq!(
        x.execute(&dma, load),
        AdminStatus::BadParam,
        "its map is gone"
    );
}
