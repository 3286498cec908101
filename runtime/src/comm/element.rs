//! Message element types: plain numeric scalars that travel as bytes, and the reduction
//! operators over them.
//!
//! Every [`Element`] is a primitive number: it has no padding and every bit pattern is a valid
//! value, so a slice of elements can be viewed as bytes and bytes copied back into elements.
//! The trait is sealed so that this stays true.

use std::mem::size_of;

/// A reduction operator (`MPI_SUM`, `MPI_MIN`, `MPI_MAX`, `MPI_PROD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (integers wrap).
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Product (integers wrap).
    Prod,
}

/// The element type of a byte buffer, so that byte-level backends can reduce it (and the `mpi`
/// backend can name the MPI datatype).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemKind {
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `usize`.
    Usize,
    /// `isize`.
    Isize,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

mod sealed {
    pub trait Sealed {}
}

/// A numeric type that can be sent, received and reduced. Integer sums and products wrap.
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The [`ElemKind`] naming this type in byte-level calls.
    const KIND: ElemKind;
    /// `a op b`.
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

macro_rules! int_element {
    ($($t:ty => $k:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const KIND: ElemKind = ElemKind::$k;
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Max => a.max(b),
                }
            }
        }
    )*};
}

macro_rules! float_element {
    ($($t:ty => $k:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const KIND: ElemKind = ElemKind::$k;
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Max => a.max(b),
                }
            }
        }
    )*};
}

int_element!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32,
             u64 => U64, i64 => I64, usize => Usize, isize => Isize);
float_element!(f32 => F32, f64 => F64);

impl ElemKind {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ElemKind::U8 | ElemKind::I8 => 1,
            ElemKind::U16 | ElemKind::I16 => 2,
            ElemKind::U32 | ElemKind::I32 | ElemKind::F32 => 4,
            ElemKind::U64 | ElemKind::I64 | ElemKind::F64 => 8,
            ElemKind::Usize | ElemKind::Isize => size_of::<usize>(),
        }
    }
}

/// View elements as bytes.
pub fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
    // SAFETY: `Element` types are sealed primitives without padding; any initialised value is a
    // valid sequence of bytes, and the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// View elements as writable bytes.
pub fn as_bytes_mut<T: Element>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; moreover every bit pattern is a valid `Element`, so any bytes
    // written through the view leave valid values behind.
    unsafe {
        std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(data))
    }
}

/// `acc[i] = acc[i] op other[i]` over two equally long byte buffers of elements of `kind`.
/// Buffers need not be aligned.
pub fn reduce_bytes(kind: ElemKind, op: ReduceOp, acc: &mut [u8], other: &[u8]) {
    fn typed<T: Element>(op: ReduceOp, acc: &mut [u8], other: &[u8]) {
        let n = acc.len().min(other.len()) / size_of::<T>();
        for i in 0..n {
            // SAFETY: `i * size_of::<T>() + size_of::<T>() <= len` for both buffers; unaligned
            // reads and writes of a padding-free primitive are sound.
            unsafe {
                let pa = acc.as_mut_ptr().add(i * size_of::<T>()).cast::<T>();
                let pb = other.as_ptr().add(i * size_of::<T>()).cast::<T>();
                let value = T::combine(op, pa.read_unaligned(), pb.read_unaligned());
                pa.write_unaligned(value);
            }
        }
    }
    match kind {
        ElemKind::U8 => typed::<u8>(op, acc, other),
        ElemKind::I8 => typed::<i8>(op, acc, other),
        ElemKind::U16 => typed::<u16>(op, acc, other),
        ElemKind::I16 => typed::<i16>(op, acc, other),
        ElemKind::U32 => typed::<u32>(op, acc, other),
        ElemKind::I32 => typed::<i32>(op, acc, other),
        ElemKind::U64 => typed::<u64>(op, acc, other),
        ElemKind::I64 => typed::<i64>(op, acc, other),
        ElemKind::Usize => typed::<usize>(op, acc, other),
        ElemKind::Isize => typed::<isize>(op, acc, other),
        ElemKind::F32 => typed::<f32>(op, acc, other),
        ElemKind::F64 => typed::<f64>(op, acc, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_views_round_trip() {
        let xs = [1.5f64, -2.0, 3.25];
        let mut ys = [0.0f64; 3];
        as_bytes_mut(&mut ys).copy_from_slice(as_bytes(&xs));
        assert_eq!(xs, ys);
        assert_eq!(as_bytes(&xs).len(), 24);
    }

    #[test]
    fn reduce_bytes_on_unaligned_buffers() {
        let a = [1i32, 7, -3];
        let b = [4i32, 2, -8];
        let mut acc = [0u8; 13];
        acc[1..].copy_from_slice(as_bytes(&a));
        let mut other = [0u8; 13];
        other[1..].copy_from_slice(as_bytes(&b));
        reduce_bytes(ElemKind::I32, ReduceOp::Max, &mut acc[1..], &other[1..]);
        let mut out = [0i32; 3];
        as_bytes_mut(&mut out).copy_from_slice(&acc[1..]);
        assert_eq!(out, [4, 7, -3]);
    }

    #[test]
    fn integer_sums_wrap() {
        assert_eq!(u8::combine(ReduceOp::Sum, 250, 10), 4);
        assert_eq!(i64::combine(ReduceOp::Prod, -3, 4), -12);
        assert_eq!(f32::combine(ReduceOp::Min, 1.0, -2.0), -2.0);
    }
}
