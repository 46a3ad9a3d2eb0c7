// SPDX-License-Identifier: GPL-2.0

//! Hardware layouts declared once.
//!
//! Every structure the driver and the card exchange (descriptors,
//! completions, admin commands and their results, the blocks commands
//! point at) is declared with [`wire_struct!`]: each field once, with its
//! byte offset. The macro generates the Rust struct, its encoder and
//! decoder, and a compile-time proof that the fields lie inside the
//! structure and do not overlap. Enumerations with a wire value are
//! declared with [`wire_enum!`], which generates the decoder that refuses
//! values the interface does not define. Admin commands are declared with
//! [`admin_commands!`] (in the parent module): opcode, parameters and their
//! offsets in the admin entry, once each.
//!
//! The encoding is little-endian throughout. Decoding never panics on
//! data from the other side: fixed-size structures decode every bit
//! pattern, and "checked" ones return `None` for values the interface
//! does not define.

/// A value with a fixed little-endian encoding of [`Field::LEN`] bytes,
/// every bit pattern of which is a valid value.
pub trait Field: Sized {
    /// Encoded length in bytes.
    const LEN: usize;
    /// Writes the encoding into `out` (exactly [`Field::LEN`] bytes).
    fn put(&self, out: &mut [u8]);
    /// Reads the value from `b` (exactly [`Field::LEN`] bytes).
    fn get(b: &[u8]) -> Self;
}

/// A value with a fixed encoding of [`CheckedField::LEN`] bytes, some bit
/// patterns of which are not valid (they decode to `None`). Every
/// [`Field`] is one.
pub trait CheckedField: Sized {
    /// Encoded length in bytes.
    const LEN: usize;
    /// Writes the encoding into `out` (exactly [`CheckedField::LEN`] bytes).
    fn put(&self, out: &mut [u8]);
    /// Reads the value from `b` (exactly [`CheckedField::LEN`] bytes), if
    /// it is one the interface defines.
    fn get(b: &[u8]) -> Option<Self>;
}

impl<T: Field> CheckedField for T {
    const LEN: usize = <T as Field>::LEN;

    fn put(&self, out: &mut [u8]) {
        Field::put(self, out);
    }

    fn get(b: &[u8]) -> Option<Self> {
        Some(<T as Field>::get(b))
    }
}

/// `N` bytes at the start of `b`, zeros where `b` is shorter (it never is
/// when the layout check passed).
fn bytes<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    for (o, &i) in out.iter_mut().zip(b) {
        *o = i;
    }
    out
}

macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            const LEN: usize = core::mem::size_of::<$t>();

            fn put(&self, out: &mut [u8]) {
                for (o, &i) in out.iter_mut().zip(self.to_le_bytes().iter()) {
                    *o = i;
                }
            }

            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes(b))
            }
        }
    )*};
}

int_field!(u8, u16, u32, u64, i64);

impl<T: Field + Copy + Default, const N: usize> Field for [T; N] {
    const LEN: usize = T::LEN * N;

    fn put(&self, out: &mut [u8]) {
        for (v, chunk) in self.iter().zip(out.chunks_exact_mut(T::LEN)) {
            v.put(chunk);
        }
    }

    fn get(b: &[u8]) -> Self {
        let mut out = [T::default(); N];
        for (v, chunk) in out.iter_mut().zip(b.chunks_exact(T::LEN)) {
            *v = T::get(chunk);
        }
        out
    }
}

/// A flag: 0 or 1 in a 32-bit word; anything else is not a flag.
impl CheckedField for bool {
    const LEN: usize = 4;

    fn put(&self, out: &mut [u8]) {
        Field::put(&u32::from(*self), out);
    }

    fn get(b: &[u8]) -> Option<Self> {
        match <u32 as Field>::get(b) {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

/// Fails to compile unless every `(offset, length)` of `fields` lies
/// inside `size` bytes and no two overlap.
pub const fn check_layout(size: usize, fields: &[(usize, usize)]) {
    let mut i = 0;
    while i < fields.len() {
        let (off, len) = fields[i];
        assert!(off + len <= size, "a field ends beyond its structure");
        let mut j = i + 1;
        while j < fields.len() {
            let (o, l) = fields[j];
            assert!(off + len <= o || o + l <= off, "two fields overlap");
            j += 1;
        }
        i += 1;
    }
}

/// Declares a structure of the hardware interface, each field with its
/// byte offset, and generates its encoding:
///
/// ```ignore
/// wire_struct! {
///     /// A receive descriptor.
///     #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
///     pub struct RxDesc[16] {
///         /// Bus address of the buffer.
///         pub addr @ 0: u64,
///         /// Buffer size in bytes.
///         pub len @ 8: u32,
///     }
/// }
/// ```
///
/// gives `RxDesc::SIZE`, `to_bytes() -> [u8; 16]`, `from_bytes(&[u8; 16])
/// -> RxDesc` and an implementation of [`Field`], so the structure can be
/// a field of another. Bytes no field covers are written as zero and
/// ignored when read.
///
/// With `checked_by PATH` after the size, fields may be [`CheckedField`]s
/// and `PATH(&value) -> bool` validates the whole: `from_bytes(&[u8])`
/// then returns `Option` (`None` also for a short buffer) and the
/// structure is a [`CheckedField`]. `checked` alone is the same with no
/// check of the whole beyond its fields'.
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident [$size:expr] {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident @ $off:literal : $fty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $fty, )*
        }

        impl $name {
            /// Bytes the structure takes.
            pub const SIZE: usize = $size;

            /// The encoding.
            // By reference: the macro cannot know whether the type is `Copy`.
            #[allow(clippy::wrong_self_convention)]
            pub fn to_bytes(&self) -> [u8; $size] {
                let mut b = [0u8; $size];
                $crate::hw::layout::Field::put(self, &mut b);
                b
            }

            /// Decodes an encoding.
            pub fn from_bytes(b: &[u8; $size]) -> Self {
                <Self as $crate::hw::layout::Field>::get(b)
            }
        }

        impl $crate::hw::layout::Field for $name {
            const LEN: usize = $size;

            fn put(&self, out: &mut [u8]) {
                $(
                    $crate::hw::layout::Field::put(
                        &self.$field,
                        &mut out[$off..$off + <$fty as $crate::hw::layout::Field>::LEN],
                    );
                )*
            }

            fn get(b: &[u8]) -> Self {
                Self {
                    $(
                        $field: <$fty as $crate::hw::layout::Field>::get(
                            &b[$off..$off + <$fty as $crate::hw::layout::Field>::LEN],
                        ),
                    )*
                }
            }
        }

        const _: () = $crate::hw::layout::check_layout(
            $size,
            &[$(($off, <$fty as $crate::hw::layout::Field>::LEN)),*],
        );
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident [$size:expr] checked_by $check:path {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident @ $off:literal : $fty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $fty, )*
        }

        impl $name {
            /// Bytes the structure takes.
            pub const SIZE: usize = $size;

            /// The encoding.
            // By reference: the macro cannot know whether the type is `Copy`.
            #[allow(clippy::wrong_self_convention)]
            pub fn to_bytes(&self) -> [u8; $size] {
                let mut b = [0u8; $size];
                $crate::hw::layout::CheckedField::put(self, &mut b);
                b
            }

            /// Decodes the encoding at the start of `b`; `None` if `b` is
            /// short or does not hold a valid value.
            pub fn from_bytes(b: &[u8]) -> Option<Self> {
                <Self as $crate::hw::layout::CheckedField>::get(b.get(..$size)?)
            }
        }

        impl $crate::hw::layout::CheckedField for $name {
            const LEN: usize = $size;

            fn put(&self, out: &mut [u8]) {
                $(
                    $crate::hw::layout::CheckedField::put(
                        &self.$field,
                        &mut out[$off..$off + <$fty as $crate::hw::layout::CheckedField>::LEN],
                    );
                )*
            }

            fn get(b: &[u8]) -> Option<Self> {
                let v = Self {
                    $(
                        $field: <$fty as $crate::hw::layout::CheckedField>::get(
                            &b[$off..$off + <$fty as $crate::hw::layout::CheckedField>::LEN],
                        )?,
                    )*
                };
                $check(&v).then_some(v)
            }
        }

        const _: () = $crate::hw::layout::check_layout(
            $size,
            &[$(($off, <$fty as $crate::hw::layout::CheckedField>::LEN)),*],
        );
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident [$size:expr] checked {
            $($body:tt)*
        }
    ) => {
        wire_struct! {
            $(#[$meta])*
            $vis struct $name[$size] checked_by $crate::hw::layout::always_valid {
                $($body)*
            }
        }
    };
}

/// The whole-structure check of a `checked` structure whose fields are
/// all it needs checking: always passes.
pub fn always_valid<T>(_: &T) -> bool {
    true
}

/// Declares an enumeration of the hardware interface encoded as an
/// integer of type `$repr`, each variant with its value, and generates
/// `from_raw` (`None` for a value the interface does not define) and an
/// implementation of [`CheckedField`].
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $repr:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr($repr)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant = $value, )*
        }

        impl $name {
            /// Decodes a wire value; `None` for values this interface
            /// does not define.
            pub const fn from_raw(v: $repr) -> Option<Self> {
                match v {
                    $( $value => Some(Self::$variant), )*
                    _ => None,
                }
            }
        }

        impl $crate::hw::layout::CheckedField for $name {
            const LEN: usize = core::mem::size_of::<$repr>();

            fn put(&self, out: &mut [u8]) {
                $crate::hw::layout::Field::put(&(*self as $repr), out);
            }

            fn get(b: &[u8]) -> Option<Self> {
                Self::from_raw(<$repr as $crate::hw::layout::Field>::get(b))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    wire_struct! {
        /// A test layout with a hole and a nested array.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        struct Sample[24] {
            a @ 0: u8,
            b @ 2: u16,
            c @ 4: u32,
            d @ 8: u64,
            e @ 16: [u16; 3],
        }
    }

    wire_enum! {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum Colour: u8 {
            Red = 1,
            Blue = 7,
        }
    }

    fn even_a(s: &Checked) -> bool {
        s.a.is_multiple_of(2)
    }

    wire_struct! {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        struct Checked[8] checked_by even_a {
            a @ 0: u8,
            colour @ 1: Colour,
            flag @ 4: bool,
        }
    }

    #[test]
    fn offsets_and_little_endian() {
        let s = Sample {
            a: 0x11,
            b: 0x2233,
            c: 0x4455_6677,
            d: 0x8899_aabb_ccdd_eeff,
            e: [1, 2, 0x0304],
        };
        let b = s.to_bytes();
        assert_eq!(b[0], 0x11);
        assert_eq!(b[1], 0, "a hole stays zero");
        assert_eq!(&b[2..4], &[0x33, 0x22]);
        assert_eq!(&b[4..8], &[0x77, 0x66, 0x55, 0x44]);
        assert_eq!(b[8], 0xff);
        assert_eq!(&b[16..22], &[1, 0, 2, 0, 4, 3]);
        assert_eq!(Sample::from_bytes(&b), s);
        assert_eq!(Sample::SIZE, 24);
    }

    #[test]
    fn checked_values_refuse_what_is_undefined() {
        let c = Checked {
            a: 2,
            colour: Colour::Blue,
            flag: true,
        };
        let b = c.to_bytes();
        assert_eq!(b, [2, 7, 0, 0, 1, 0, 0, 0]);
        assert_eq!(Checked::from_bytes(&b), Some(c));
        assert_eq!(Checked::from_bytes(&b[..7]), None, "short");
        let mut bad = b;
        bad[1] = 3;
        assert_eq!(Checked::from_bytes(&bad), None, "unknown colour");
        let mut bad = b;
        bad[4] = 2;
        assert_eq!(Checked::from_bytes(&bad), None, "a flag of 2");
        let mut bad = b;
        bad[0] = 3;
        assert_eq!(Checked::from_bytes(&bad), None, "the whole is invalid");
        assert_eq!(Colour::from_raw(1), Some(Colour::Red));
        assert_eq!(Colour::from_raw(0), None);
    }

    #[test]
    fn layouts_are_checked() {
        check_layout(8, &[(0, 4), (4, 4)]);
        let overlap = std::panic::catch_unwind(|| check_layout(8, &[(0, 4), (3, 2)]));
        assert!(overlap.is_err());
        let beyond = std::panic::catch_unwind(|| check_layout(8, &[(6, 4)]));
        assert!(beyond.is_err());
    }
}
