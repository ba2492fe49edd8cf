//! The LLDP TLV framing (IEEE 802.1AB) shared by [`super::lldp`] and the
//! DCBX TLVs of [`super::dcbx`]: a 7-bit type, a 9-bit length, the value.

/// Organizationally specific TLV type.
pub const TLV_ORG: u8 = 127;
/// Largest TLV value (9-bit length).
pub const MAX_TLV: usize = 511;

/// A bounded writer of TLVs into a caller's buffer: writes past its end
/// are refused (the result is `None`), never a panic.
pub struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
    overflow: bool,
}

impl<'a> Writer<'a> {
    pub fn new(buf: &'a mut [u8]) -> Writer<'a> {
        Writer {
            buf,
            len: 0,
            overflow: false,
        }
    }

    /// Appends raw bytes.
    pub fn put(&mut self, b: &[u8]) {
        match self.buf.get_mut(self.len..self.len + b.len()) {
            Some(dst) if !self.overflow => {
                dst.copy_from_slice(b);
                self.len += b.len();
            }
            _ => self.overflow = true,
        }
    }

    /// A TLV header of `kind` for a value of `len` bytes (at most 511).
    pub fn header(&mut self, kind: u8, len: usize) {
        if len > MAX_TLV {
            self.overflow = true;
            return;
        }
        self.put(&((u16::from(kind) << 9) | len as u16).to_be_bytes());
    }

    /// A whole TLV.
    pub fn tlv(&mut self, kind: u8, value: &[u8]) {
        self.header(kind, value.len());
        self.put(value);
    }

    /// Zero bytes up to `len` bytes written (nothing after an overflow).
    pub fn pad_to(&mut self, len: usize) {
        while self.len < len && !self.overflow {
            self.put(&[0]);
        }
    }

    /// Bytes written, or `None` when something did not fit.
    pub fn finish(self) -> Option<usize> {
        (!self.overflow).then_some(self.len)
    }
}
