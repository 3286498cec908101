//! The numeric element types an out-of-core array can hold, and their on-disk encoding.
//!
//! Block files store elements little-endian, so a store written on one machine reads the same
//! on another.

/// A numeric element of an out-of-core array: fixed size, plain bits, little-endian on disk.
pub trait Element: Copy + Default + Send + Sync + 'static {
    /// Bytes per element on disk and in memory.
    const SIZE: usize;
    /// Write `self` into `out` (exactly `SIZE` bytes), little-endian.
    fn put(self, out: &mut [u8]);
    /// Read an element from `bytes` (exactly `SIZE` bytes), little-endian.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                <$t>::from_le_bytes(raw)
            }
        }
    )*};
}

element!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

/// Encode `values` into `out` (resized to fit).
pub(crate) fn encode<T: Element>(values: &[T], out: &mut Vec<u8>) {
    out.clear();
    out.resize(values.len() * T::SIZE, 0);
    for (value, chunk) in values.iter().zip(out.chunks_exact_mut(T::SIZE)) {
        value.put(chunk);
    }
}

/// Decode `bytes` into `out`; `bytes.len()` must be `out.len() * T::SIZE`.
pub(crate) fn decode<T: Element>(bytes: &[u8], out: &mut [T]) {
    debug_assert_eq!(bytes.len(), out.len() * T::SIZE);
    for (value, chunk) in out.iter_mut().zip(bytes.chunks_exact(T::SIZE)) {
        *value = T::get(chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_is_exact_and_little_endian() {
        let values = [1.5f64, -0.0, f64::MAX, f64::MIN_POSITIVE];
        let mut bytes = Vec::new();
        encode(&values, &mut bytes);
        assert_eq!(bytes.len(), 32);
        assert_eq!(&bytes[..8], &1.5f64.to_le_bytes());
        let mut back = [0.0f64; 4];
        decode(&bytes, &mut back);
        assert_eq!(back.map(f64::to_bits), values.map(f64::to_bits));

        let ints = [0x0102_0304u32];
        encode(&ints, &mut bytes);
        assert_eq!(bytes, vec![4, 3, 2, 1]);
    }
}
