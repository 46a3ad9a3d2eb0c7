// SPDX-License-Identifier: GPL-2.0

//! Typed registers: a register's value as a type with named fields, as
//! nova-core's `register!` declares them, so that a bit is read and set
//! by its name and a value goes only to the register it belongs to.

/// A 32-bit BAR0 register whose value has named fields.
pub trait Register: Copy {
    /// Byte offset in BAR0.
    const OFFSET: usize;
    /// The value `raw`, as read.
    fn from_raw(raw: u32) -> Self;
    /// The value to write.
    fn into_raw(self) -> u32;
}

/// A field's type: how its bits convert.
pub trait Field: Copy {
    /// The field from its bits (already shifted down and masked).
    fn from_bits(bits: u32) -> Self;
    /// The field's bits (not yet shifted or masked).
    fn into_bits(self) -> u32;
}

impl Field for bool {
    fn from_bits(bits: u32) -> Self {
        bits != 0
    }
    fn into_bits(self) -> u32 {
        u32::from(self)
    }
}

impl Field for u8 {
    fn from_bits(bits: u32) -> Self {
        // CAST: the field is at most 8 bits wide (the declaration's).
        bits as u8
    }
    fn into_bits(self) -> u32 {
        self.into()
    }
}

impl Field for u16 {
    fn from_bits(bits: u32) -> Self {
        // CAST: the field is at most 16 bits wide (the declaration's).
        bits as u16
    }
    fn into_bits(self) -> u32 {
        self.into()
    }
}

impl Field for u32 {
    fn from_bits(bits: u32) -> Self {
        bits
    }
    fn into_bits(self) -> u32 {
        self
    }
}

/// The mask of bits `hi:lo`, shifted down to bit 0.
pub const fn mask(hi: u32, lo: u32) -> u32 {
    if hi - lo == 31 {
        u32::MAX
    } else {
        (1 << (hi - lo + 1)) - 1
    }
}

/// Declares a register value type with named fields `hi:lo name: type`
/// (and a setter where one is named), and, with `@ offset`, its
/// [`Register`] implementation.
macro_rules! register {
    (
        $(#[$meta:meta])*
        $name:ident $(@ $offset:path)? {
            $( $(#[$fmeta:meta])* $hi:literal : $lo:literal $field:ident $(/ $set:ident)? : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name(u32);

        $(
            impl $crate::hw::register::Register for $name {
                const OFFSET: usize = $offset;
                fn from_raw(raw: u32) -> Self {
                    Self(raw)
                }
                fn into_raw(self) -> u32 {
                    self.0
                }
            }
        )?

        impl $name {
            /// The value with every field zero.
            pub const fn zero() -> Self {
                Self(0)
            }

            /// The raw value.
            pub const fn raw(self) -> u32 {
                self.0
            }

            /// The value `raw`, as read from the other side (every
            /// field is then as untrusted as `raw`).
            pub const fn of_raw(raw: u32) -> Self {
                Self(raw)
            }

            $(
                $(#[$fmeta])*
                pub fn $field(self) -> $ty {
                    const { assert!($hi >= $lo && $hi < 32) };
                    <$ty as $crate::hw::register::Field>::from_bits(
                        (self.0 >> $lo) & $crate::hw::register::mask($hi, $lo),
                    )
                }

                $(
                    #[doc = concat!("Sets `", stringify!($field), "`.")]
                    pub fn $set(self, value: $ty) -> Self {
                        let mask = $crate::hw::register::mask($hi, $lo);
                        let bits = <$ty as $crate::hw::register::Field>::into_bits(value) & mask;
                        Self((self.0 & !(mask << $lo)) | (bits << $lo))
                    }
                )?
            )*
        }
    };
}
