// SPDX-License-Identifier: GPL-2.0

//! Raw bindings generated at build time from `bindings_helper.h`: the net
//! device, ethtool and ib_verbs interfaces the kernel crate does not bind,
//! and the C helpers (`helpers.c`: one-line wrappers of static inline
//! functions and macros, as upstream's `rust/helpers/`). Private to the
//! abstraction layer ([`crate::linux`]).

#![allow(
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unnecessary_transmutes,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    clippy::cast_lossless,
    clippy::as_underscore
)]

#[allow(unused_imports)]
use kernel::ffi;

// Mapped by hand, as in the kernel's own bindings (see bindgen_parameters).
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

include!("bindings_generated.rs");
