#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The driver's layers and the imports that break them.

A module uses only modules of the layers below its own, and the three
clients of the function (nic, gft, rdma) do not use each other: what
the NIC and the RDMA half need of their function they ask through
traits they own (nic::NicEvents, nic::FlowOffload, rdma::RdmaParent,
rdma::RdmaEvents), which the function implements
(Documentation/rsnic/driver.rst).

    6 rsnic_drv
    5 pci_drv
    4 function, devlink, debugfs
    3 nic, gft, rdma
    2 admin, regs, selftest
    1 hw, linux, module_parameters

Prints each `crate::` use in src/ that points up, or across the clients'
layer, as "FILE:LINE: FROM -> TO", and a count; exits 1 if there is any.
Part of `make lint`.
"""

import pathlib
import re
import sys

LAYER = {
    "rsnic_drv": 6,
    "pci_drv": 5,
    "function": 4, "devlink": 4, "debugfs": 4,
    "nic": 3, "gft": 3, "rdma": 3,
    "admin": 2, "regs": 2, "selftest": 2,
    "hw": 1, "linux": 1, "module_parameters": 1,
}
CLIENTS = 3


def top_names(text, start):
    """The top-level module names a `crate::` at `start` reaches, with
    the offset of each: one for `crate::x`, several for `crate::{x, y::z}`."""
    if text.startswith("{", start):
        depth, item_start, names = 0, start + 1, []
        for i in range(start, len(text)):
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    names.append(item_start)
                    break
            elif c == "," and depth == 1:
                names.append(item_start)
                item_start = i + 1
        out = []
        for pos in names:
            m = re.compile(r"\s*([a-z_][a-z0-9_]*)").match(text, pos)
            if m:
                out.append((m.group(1), m.start(1)))
        return out
    m = re.compile(r"([a-z_][a-z0-9_]*)").match(text, start)
    return [(m.group(1), start)] if m else []


def module_of(path, src):
    rel = path.relative_to(src).with_suffix("")
    return rel.parts[0]


def main():
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    bad = 0
    for path in sorted(src.rglob("*.rs")):
        if path.name == "bindings_generated.rs":
            continue
        me = module_of(path, src)
        if me not in LAYER:
            print(f"{path}: module {me} has no layer in qemu/layers.py")
            bad += 1
            continue
        text = path.read_text()
        # Comments name modules too; only code counts.
        code = re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)
        for m in re.finditer(r"\bcrate::", code):
            for name, pos in top_names(code, m.end()):
                if name not in LAYER:
                    continue
                up = LAYER[name] > LAYER[me]
                across = LAYER[name] == LAYER[me] == CLIENTS and name != me
                if up or across:
                    line = code.count("\n", 0, pos) + 1
                    print(f"{path}:{line}: {me} -> {name}")
                    bad += 1
    print(f"{bad} imports against the layers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
