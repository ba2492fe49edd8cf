//! Map-value layouts of the buffer model: size asserts and aya::Pod.

use super::*;

const _: () =
    assert!(core::mem::size_of::<EgressQueue>() == 4 + 4 + 8 + 8 + 8 + 4 * MODEL_PORTS + 4 + 4);
const _: () = assert!(core::mem::size_of::<EgressQueue>() == 104);
const _: () = assert!(core::mem::size_of::<WredProfile>() == 12);
const _: () = assert!(core::mem::size_of::<BufferProfile>() == 24);
const _: () = assert!(core::mem::size_of::<SharedPool>() == 8);
const _: () = assert!(core::mem::size_of::<PgState>() == 16);
const _: () = assert!(core::mem::size_of::<PfcTxState>() == 24);
const _: () = assert!(core::mem::size_of::<PfcWdConfig>() == 12);
const _: () = assert!(core::mem::size_of::<PfcWd>() == 32);
const _: () = assert!(core::mem::size_of::<Watermark>() == 16);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), only integer fields and arrays of integers, no padding
    // (asserted above), every bit pattern valid.
    unsafe impl aya::Pod for super::EgressQueue {}
    unsafe impl aya::Pod for super::WredProfile {}
    unsafe impl aya::Pod for super::BufferProfile {}
    unsafe impl aya::Pod for super::SharedPool {}
    unsafe impl aya::Pod for super::PgState {}
    unsafe impl aya::Pod for super::PfcTxState {}
    unsafe impl aya::Pod for super::PfcWdConfig {}
    unsafe impl aya::Pod for super::PfcWd {}
    unsafe impl aya::Pod for super::Watermark {}
}
