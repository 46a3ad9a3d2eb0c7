// SPDX-License-Identifier: GPL-2.0

//! Switchdev mode: the card as a switch between the wire and its VF,
//! programmed with masked rules (tc flower on representors, Open
//! vSwitch). Each packet from the wire or the VF is decided by the rules
//! alone; what no rule forwards goes to the representor of the port it
//! came in on: the PF itself for the wire, an exception
//! ([`ExceptionReason::PortMiss`]) for the VF. The exact-match flows and
//! the exception path's policy are legacy mode's.

use std::time::Instant;

use crate::hw::gft::{Direction, ExceptionMeta, ExceptionReason, FlowKey, META_LEN};

use super::classifier::port;
use super::rules::Decision;
use super::{direction, Gft, Output};

impl Gft {
    /// Whether the card is in switchdev mode.
    pub fn switchdev(&self) -> bool {
        self.switchdev
    }

    /// Switchdev mode on or off. The rules stay (the driver removes
    /// them before a mode change).
    pub fn set_switchdev(&mut self, on: bool) {
        self.switchdev = on;
    }

    /// Where a packet that came in on switch port `from` goes in
    /// switchdev mode; `None`: dropped.
    pub fn switch(&mut self, frame: Vec<u8>, from: u16, now: Instant) -> Option<Output> {
        let dir = direction(from);
        let decided = if self.rules.is_empty() {
            None
        } else {
            let now_ms = self.table.ms(now);
            self.rule_lookup(&frame, from, now, now_ms)
        };
        let out = match decided {
            Some(Decision::Act(act)) => {
                self.act_then(frame, &act, None, |f| to_representor(f, from))
            }
            Some(d) => self.by_rule(frame, d, dir),
            None => Some(to_representor(frame, from)),
        };
        if matches!(out, Some(Output::Exception(_))) {
            self.stats.port_misses += 1;
        }
        out
    }
}

/// A packet from switch port `from` that no rule forwarded: for the
/// port's representor.
fn to_representor(frame: Vec<u8>, from: u16) -> Output {
    if from == port::UPLINK {
        return Output::Host(frame);
    }
    let meta = ExceptionMeta {
        reason: ExceptionReason::PortMiss,
        tcp_flags: 0,
        // No key: the packet need not be IP. A placeholder the header's
        // checks accept.
        key: FlowKey {
            vport: 0,
            dir: Direction::Tx,
            tunnel: None,
            ip_version: 4,
            proto: 0,
            src: [0; 16],
            dst: [0; 16],
            sport: 0,
            dport: 0,
        },
        generation: 0,
        port: from,
    };
    let mut out = Vec::with_capacity(META_LEN + frame.len());
    out.extend_from_slice(&meta.to_bytes());
    out.extend_from_slice(&frame);
    Output::Exception(out)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use crate::hw::gft::{action, Action, Direction, ExceptionReason};

    use super::super::parse::tests::udp4;
    use super::super::tests::{exception_meta, port_rule, reinjected};
    use super::super::{Gft, Output};
    use super::port;

    fn switchdev() -> Gft {
        let mut g = Gft::default();
        g.set_switchdev(true);
        g
    }

    fn forward(to: u16) -> Action {
        Action {
            flags: action::FORWARD,
            port: to,
            ..Default::default()
        }
    }

    #[test]
    fn without_rules_each_port_reaches_its_representor() {
        let mut g = switchdev();
        let now = Instant::now();
        let f = udp4(1, 2, b"x");
        let out = g.switch(f.clone(), port::VF0, now).unwrap();
        let meta = exception_meta(&out);
        assert_eq!(meta.reason, ExceptionReason::PortMiss);
        assert_eq!(meta.port, port::VF0);
        let Output::Exception(data) = out else {
            unreachable!()
        };
        assert_eq!(&data[crate::hw::gft::META_LEN..], &f[..]);
        assert!(matches!(
            g.switch(f, port::UPLINK, now),
            Some(Output::Host(_))
        ));
        assert_eq!(g.stats.port_misses, 1);
    }

    #[test]
    fn rules_forward_between_the_wire_and_the_vf() {
        let mut g = switchdev();
        let now = Instant::now();
        g.rules
            .add(
                port_rule(1, 1, port::VF0, |_, _| {}),
                forward(port::UPLINK),
                now,
            )
            .unwrap();
        g.rules
            .add(
                port_rule(2, 1, port::UPLINK, |_, _| {}),
                forward(port::VF0),
                now,
            )
            .unwrap();
        let f = udp4(1, 2, b"x");
        assert!(matches!(
            g.switch(f.clone(), port::VF0, now),
            Some(Output::Wire(_))
        ));
        assert!(matches!(
            g.switch(f, port::UPLINK, now),
            Some(Output::Vf(_))
        ));
        assert_eq!(g.rules.stats(1).unwrap().packets, 1);
        assert_eq!(g.rules.stats(2).unwrap().packets, 1);
        assert_eq!(g.stats.port_misses, 0);
    }

    #[test]
    fn a_rule_that_does_not_forward_leaves_the_packet_to_the_representor() {
        let mut g = switchdev();
        let now = Instant::now();
        let mut nat = Action {
            flags: action::NAT_DST_PORT,
            ..Default::default()
        };
        nat.nat_dport = 99;
        g.rules
            .add(port_rule(1, 1, port::VF0, |_, _| {}), nat, now)
            .unwrap();
        let out = g.switch(udp4(1, 2, b"x"), port::VF0, now).unwrap();
        assert_eq!(exception_meta(&out).reason, ExceptionReason::PortMiss);
        let Output::Exception(data) = out else {
            unreachable!()
        };
        let frame = &data[crate::hw::gft::META_LEN..];
        let key = super::super::parse::parse(frame, Direction::Tx)
            .unwrap()
            .key;
        assert_eq!(key.dport, 99);
    }

    #[test]
    fn a_representor_sends_to_its_vf_by_reinjection() {
        let mut g = switchdev();
        let data = reinjected(Direction::Tx, forward(port::VF0), &udp4(1, 2, b"x"));
        assert!(matches!(g.reinject(&data), Some(Output::Vf(_))));
    }
}
