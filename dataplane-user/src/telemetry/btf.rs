//! Field offsets of kernel structures from the kernel's BTF
//! (`/sys/kernel/btf/vmlinux`), for tracing programs that read a structure
//! through a pointer argument (`bpf_probe_read_kernel`): Rust eBPF has no
//! CO-RE relocations, so the controller looks the offsets up at load time
//! and hands them to the program in a map. aya parses BTF too but keeps its
//! type lookups private; this reads only what it needs: type kinds, names
//! and struct/union members.

use anyhow::{bail, Context, Result};

/// Where the running kernel's BTF is.
pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

const KIND_INT: u32 = 1;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// One type: kind, name, `size_or_type`, and members (struct/union:
/// name, type id, bit offset).
struct Type {
    kind: u32,
    name: u32,
    size_or_type: u32,
    members: Vec<(u32, u32, u32)>,
}

/// The types of one BTF blob (id 0 is `void`).
pub struct Btf {
    strings: Vec<u8>,
    types: Vec<Type>,
}

fn u32_at(d: &[u8], at: usize) -> Result<u32> {
    let b = d.get(at..at + 4).context("BTF truncated")?;
    Ok(u32::from_le_bytes(b.try_into().unwrap()))
}

impl Btf {
    /// The running kernel's BTF.
    pub fn kernel() -> Result<Btf> {
        let data = std::fs::read(VMLINUX).with_context(|| format!("reading {VMLINUX}"))?;
        Btf::parse(&data).with_context(|| format!("parsing {VMLINUX}"))
    }

    /// Parses a little-endian BTF blob (magic 0xeb9f).
    pub fn parse(d: &[u8]) -> Result<Btf> {
        if d.get(0..2) != Some(&[0x9f, 0xeb]) {
            bail!("not little-endian BTF (magic 0xeb9f)");
        }
        let hdr = u32_at(d, 4)? as usize;
        let (type_off, type_len) = (u32_at(d, 8)? as usize, u32_at(d, 12)? as usize);
        let (str_off, str_len) = (u32_at(d, 16)? as usize, u32_at(d, 20)? as usize);
        let strings = d
            .get(hdr + str_off..hdr + str_off + str_len)
            .context("BTF string section out of the file")?
            .to_vec();
        let mut types = vec![Type {
            kind: 0,
            name: 0,
            size_or_type: 0,
            members: Vec::new(),
        }];
        let (mut p, end) = (hdr + type_off, hdr + type_off + type_len);
        while p < end {
            let (name, info, size_or_type) = (u32_at(d, p)?, u32_at(d, p + 4)?, u32_at(d, p + 8)?);
            p += 12;
            let (kind, vlen, bitfields) = (
                (info >> 24) & 0x1f,
                (info & 0xffff) as usize,
                info >> 31 == 1,
            );
            let mut members = Vec::new();
            p += match kind {
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION => {
                    for i in 0..vlen {
                        let m = p + 12 * i;
                        let off = u32_at(d, m + 8)?;
                        let bits = if bitfields { off & 0xff_ffff } else { off };
                        members.push((u32_at(d, m)?, u32_at(d, m + 4)?, bits));
                    }
                    12 * vlen
                }
                KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen,
                KIND_DATASEC | KIND_ENUM64 => 12 * vlen,
                0 | 20.. => bail!("BTF type {} has unknown kind {kind}", types.len()),
                _ => 0,
            };
            types.push(Type {
                kind,
                name,
                size_or_type,
                members,
            });
        }
        Ok(Btf { strings, types })
    }

    fn name(&self, off: u32) -> &[u8] {
        let s = self.strings.get(off as usize..).unwrap_or(&[]);
        &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
    }

    /// The struct or union a type id names, through typedefs and
    /// qualifiers.
    fn composite(&self, mut id: u32) -> Option<&Type> {
        loop {
            let t = self.types.get(id as usize)?;
            match t.kind {
                KIND_STRUCT | KIND_UNION => return Some(t),
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = t.size_or_type
                }
                _ => return None,
            }
        }
    }

    /// Bit offset and type of member `name` of `t`, also inside anonymous
    /// struct/union members.
    fn member(&self, t: &Type, name: &str) -> Option<(u32, u32)> {
        for &(n, ty, bits) in &t.members {
            if self.name(n) == name.as_bytes() {
                return Some((bits, ty));
            }
            if n == 0 {
                let inner = self.composite(ty)?;
                if let Some((b, ty)) = self.member(inner, name) {
                    return Some((bits + b, ty));
                }
            }
        }
        None
    }

    /// Byte offset of `path` (members, one inside the other: `["nd_net",
    /// "net"]`) in `struct name`.
    pub fn offset(&self, name: &str, path: &[&str]) -> Result<u32> {
        let mut t = self
            .types
            .iter()
            .find(|t| t.kind == KIND_STRUCT && self.name(t.name) == name.as_bytes())
            .with_context(|| format!("no struct {name} in the kernel's BTF"))?;
        let mut bits = 0;
        for (i, field) in path.iter().enumerate() {
            let (b, ty) = self
                .member(t, field)
                .with_context(|| format!("struct {name} has no {}", path[..=i].join(".")))?;
            bits += b;
            if i + 1 < path.len() {
                t = self
                    .composite(ty)
                    .with_context(|| format!("{name}.{} is not a struct", path[..=i].join(".")))?;
            }
        }
        if bits % 8 != 0 {
            bail!("{name}.{} is a bit field", path.join("."));
        }
        Ok(bits / 8)
    }
}

#[cfg(test)]
mod tests {
    use super::Btf;

    /// A BTF blob: `int`, `struct inner { int a; int b; }`, a typedef of
    /// it, `struct outer { int x; union { int y; }; inner_t in; }`.
    fn blob() -> Vec<u8> {
        let strings = b"\0int\0inner\0a\0b\0inner_t\0outer\0x\0y\0in\0";
        let s = |n: &str| {
            let at = strings
                .windows(n.len() + 2)
                .position(|w| w[0] == 0 && &w[1..=n.len()] == n.as_bytes() && w[n.len() + 1] == 0);
            at.unwrap() as u32 + 1
        };
        let mut t: Vec<u32> = Vec::new();
        // 1: int (size 4, 32 bits signed)
        t.extend([s("int"), 1 << 24, 4, (1 << 24) | 32]);
        // 2: struct inner { a @0, b @32 }
        t.extend([s("inner"), (4 << 24) | 2, 8, s("a"), 1, 0, s("b"), 1, 32]);
        // 3: typedef inner_t -> 2
        t.extend([s("inner_t"), 8 << 24, 2]);
        // 4: anonymous union { y @0 }
        t.extend([0, (5 << 24) | 1, 4, s("y"), 1, 0]);
        // 5: struct outer { x @0, <anon union> @32, in @64 }
        t.extend([
            s("outer"),
            (4 << 24) | 3,
            16,
            s("x"),
            1,
            0,
            0,
            4,
            32,
            s("in"),
            3,
            64,
        ]);
        let types: Vec<u8> = t.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut d = vec![0x9f, 0xeb, 1, 0];
        for v in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            d.extend(v.to_le_bytes());
        }
        d.extend(types);
        d.extend(strings);
        d
    }

    #[test]
    fn offsets_through_typedefs_and_anonymous_members() {
        let b = Btf::parse(&blob()).unwrap();
        assert_eq!(b.offset("outer", &["x"]).unwrap(), 0);
        assert_eq!(b.offset("outer", &["y"]).unwrap(), 4);
        assert_eq!(b.offset("outer", &["in", "b"]).unwrap(), 12);
        assert_eq!(b.offset("inner", &["b"]).unwrap(), 4);
        let e = b.offset("outer", &["in", "c"]).unwrap_err().to_string();
        assert!(e.contains("in.c"), "{e}");
        assert!(b.offset("outer", &["x", "a"]).is_err());
        assert!(b.offset("nothing", &["x"]).is_err());
        assert!(Btf::parse(&[0; 24]).is_err());
    }

    #[test]
    fn the_kernel_has_what_the_transmit_tracer_reads() {
        let Ok(b) = Btf::kernel() else {
            eprintln!("no kernel BTF here: skipped");
            return;
        };
        for (s, path) in super::super::xmit::BTF_FIELDS {
            let off = b.offset(s, path).unwrap();
            assert!(off < 4096, "{s}.{path:?} at {off}");
        }
    }
}
