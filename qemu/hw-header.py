#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The provider's rsnic_hw.h against the driver's src/hw/rdma.rs, field
by field and constant by constant.

The libibverbs provider (rdma-core/providers/rsnic) writes WQEs and reads
CQEs in C; the card and the driver declare the same layouts once, in
Rust (src/hw/rdma.rs, wire_struct!). This compiles a small C program
with the header that prints the offset and size of every field of every
struct (and the value of every RSNIC_ constant), and compares each with
the Rust declaration it maps to: same offset, same size, every Rust
field of a mapped struct present in C, every C constant equal to its
Rust one. Prints what differs; exits 1 if anything does. Part of
`make lint`.

Run inside the project's rootfs (gcc): qemu/in-rootfs.sh python3 qemu/hw-header.py
"""

import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUST = ROOT / "src/hw/rdma.rs"
# The card's PCI identity (the provider matches the PF by it).
RUST_IDS = ROOT / "src/hw/mod.rs"
HEADER = ROOT / "rdma-core/providers/rsnic/rsnic_hw.h"

# C struct -> (Rust struct, {C field: Rust field} where the names differ).
STRUCTS = {
    "rsnic_sge": ("Sge", {}),
    "rsnic_av": ("AddressVector", {}),
    "rsnic_bind": ("BindParams", {}),
    "rsnic_atomic": ("AtomicParams", {}),
    "rsnic_flush": ("FlushParams", {}),
    "rsnic_atomic_write": ("AtomicWriteParams", {}),
    "rsnic_sq_wqe": ("SqWqe", {"imm": "imm_or_key", "av": "ext", "atomic": "ext", "bind": "ext",
                               "flush": "ext", "atomic_write": "ext", "inline_data": "sge"}),
    "rsnic_rq_wqe": ("RqWqe", {}),
    "rsnic_cqe": ("Cqe", {}),
}
# C structs shorter in Rust: the C one pads to the room it has in a WQE
# (the ext union); the Rust one declares only its fields.
PADDED = {"rsnic_bind", "rsnic_atomic", "rsnic_flush", "rsnic_atomic_write"}
# C constant prefix -> Rust modules to look the rest of the name up in
# (longest prefix first; "" is the top level of rdma.rs).
CONSTANTS = [
    ("RSNIC_CQE_OP_", ["wc_op"]),
    ("RSNIC_CQE_", ["cqe_flag", ""]),
    ("RSNIC_WQE_", ["wqe_op", "wqe_flag"]),
    ("RSNIC_DB_", ["udb"]),
    ("RSNIC_ARM_", ["arm"]),
    ("RSNIC_", ["", "hw"]),
]
SCALAR = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "Gid": 16}


def rust_int(expr, consts):
    """The value of a constant expression: a literal, a top-level
    constant's name, or A << B of those."""
    expr = expr.strip()
    m = re.fullmatch(r"\(?\s*(\w+)\s*<<\s*(\w+)\s*\)?", expr)
    if m:
        return rust_int(m.group(1), consts) << rust_int(m.group(2), consts)
    if re.fullmatch(r"0x[0-9a-fA-F_]+", expr):
        return int(expr.replace("_", ""), 16)
    if re.fullmatch(r"[0-9][0-9_]*", expr):
        return int(expr.replace("_", ""))
    if expr in consts.get("", {}):
        return consts[""][expr]
    raise ValueError(f"cannot evaluate {expr!r}")


def rust_constants(text):
    """{module or "": {NAME: value}} for `pub const NAME: T = EXPR;`."""
    consts = {"": {}}
    depth_mod = []
    for line in text.splitlines():
        m = re.match(r"pub mod (\w+) \{", line)
        if m:
            depth_mod.append(m.group(1))
            continue
        if depth_mod and line.startswith("}"):
            depth_mod.pop()
            continue
        m = re.match(r"\s*pub const (\w+): \w+ = ([^;]+);", line)
        if m:
            mod = depth_mod[-1] if depth_mod else ""
            try:
                consts.setdefault(mod, {})[m.group(1)] = rust_int(m.group(2), consts)
            except ValueError:
                pass
    return consts


def rust_size(ty, consts, structs):
    ty = ty.strip()
    m = re.fullmatch(r"\[(\w+);\s*(\w+)\]", ty)
    if m:
        return rust_size(m.group(1), consts, structs) * rust_int(m.group(2), consts)
    if ty in SCALAR:
        return SCALAR[ty]
    if ty in structs:
        return structs[ty][0]
    raise ValueError(f"unknown type {ty}")


def rust_structs(text, consts):
    """{Name: (len, {field: (offset, size)})} of the wire_struct! blocks."""
    structs = {}
    for m in re.finditer(r"pub struct (\w+)\[(\w+)\] \{(.*?)\n    \}", text, re.S):
        name, length, body = m.group(1), rust_int(m.group(2), consts), m.group(3)
        fields = {}
        for f in re.finditer(r"pub (\w+) @ (\w+): ([^,\n]+),", body):
            fields[f.group(1)] = (rust_int(f.group(2), consts), f.group(3))
        structs[name] = (length, fields)
    sized = {}
    for name, (length, fields) in structs.items():
        sized[name] = (length, {})
    for name, (length, fields) in structs.items():
        for field, (off, ty) in fields.items():
            sized[name][1][field] = (off, rust_size(ty, consts, sized))
    return sized


def c_fields(header):
    """{struct: [field]} of the header's structs (rsvd* left out; a
    union's members are the struct's)."""
    out = {}
    for m in re.finditer(r"struct (rsnic_\w+) \{(.*?)\n\};", header, re.S):
        names = []
        for d in re.finditer(r"(\w+)(\[[^\]]*\])?;", m.group(2)):
            if not d.group(1).startswith("rsvd"):
                names.append(d.group(1))
        out[m.group(1)] = names
    return out


def main():
    header = HEADER.read_text()
    text = RUST.read_text()
    consts = rust_constants(text)
    consts["hw"] = rust_constants(RUST_IDS.read_text())[""]
    structs = rust_structs(text, consts)
    fields = c_fields(header)
    cnames = sorted(set(re.findall(r"\b(RSNIC_[A-Z0-9_]+)\s*=", header)))
    prog = ["#include <stddef.h>", "#include <stdio.h>", f'#include "{HEADER}"', "int main(void) {"]
    for s, names in fields.items():
        prog.append(f'printf("S {s} %zu\\n", sizeof(struct {s}));')
        for f in names:
            prog.append(
                f'printf("F {s} {f} %zu %zu\\n", offsetof(struct {s}, {f}), sizeof(((struct {s} *)0)->{f}));'
            )
    for c in cnames:
        prog.append(f'printf("C {c} %lld\\n", (long long){c});')
    prog += ["return 0;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = pathlib.Path(tmp, "h.c"), pathlib.Path(tmp, "h")
        src.write_text("\n".join(prog) + "\n")
        subprocess.run(["gcc", "-Wall", "-Werror", "-o", str(exe), str(src)], check=True)
        lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    bad = []
    c_size, c_field, c_const = {}, {}, {}
    for line in lines:
        w = line.split()
        if w[0] == "S":
            c_size[w[1]] = int(w[2])
        elif w[0] == "F":
            c_field[(w[1], w[2])] = (int(w[3]), int(w[4]))
        else:
            c_const[w[1]] = int(w[2])
    for s in fields:
        if s not in STRUCTS:
            bad.append(f"struct {s}: no Rust struct mapped (add it to STRUCTS)")
    checked = 0
    for s, (r, renames) in STRUCTS.items():
        if s not in fields:
            bad.append(f"struct {s}: not in {HEADER.name}")
            continue
        length, rfields = structs[r]
        if c_size[s] != length and not (s in PADDED and c_size[s] > length):
            bad.append(f"sizeof(struct {s}) = {c_size[s]}, {r} is {length} bytes")
        seen = set()
        for f in fields[s]:
            rf = renames.get(f, f)
            if rf not in rfields:
                bad.append(f"{s}.{f}: {r} has no field {rf}")
                continue
            seen.add(rf)
            (coff, csize), (roff, rsize) = c_field[(s, f)], rfields[rf]
            if coff != roff or csize != rsize:
                bad.append(f"{s}.{f} at {coff}, {csize} bytes; {r}.{rf} at {roff}, {rsize} bytes")
            checked += 1
        for rf in sorted(set(rfields) - seen):
            bad.append(f"{r}.{rf}: not in struct {s}")
    for c in cnames:
        for prefix, mods in CONSTANTS:
            if c.startswith(prefix):
                # In a module the name lacks the prefix; at the top level
                # only "RSNIC_".
                names = {m: c[len(prefix):] if m else c[len("RSNIC_"):] for m in mods}
                hits = [(m, names[m]) for m in mods if names[m] in consts.get(m, {})]
                rest = names[mods[0]]
                break
        if not hits:
            bad.append(f"{c}: no Rust constant {rest} in {', '.join({"": "rdma.rs", "hw": "hw/mod.rs"}.get(m, m) for m in mods)}")
        elif consts[hits[0][0]][hits[0][1]] != c_const[c]:
            m, name = hits[0]
            bad.append(f"{c} = {c_const[c]}, {(m + '::') if m else ''}{name} = {consts[m][name]}")
        checked += 1
    for b in bad:
        print(b)
    print(f"{HEADER.name}: {checked} fields and constants checked against {RUST.name}, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
