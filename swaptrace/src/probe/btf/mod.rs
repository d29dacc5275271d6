//! Minimal parser of the kernel's BTF blob (`/sys/kernel/btf/vmlinux`).
//!
//! Rust eBPF programs get no CO-RE relocations, so userspace resolves struct
//! member offsets, enumerator values and tracepoint argument positions here
//! before loading, and `swaptrace doctor` reports what is missing.
//!
//! Why our own parser: aya-obj (aya 0.14's, 0.3) parses BTF for its own
//! relocations but keeps type-by-id, the string table and struct members
//! private, so it cannot answer these queries; the `btf` crate reads files
//! only and has no member offsets; btf-rs serves but is LGPL-2.1, which the
//! statically linked MIT/Apache binary a fleet copies should not carry;
//! libbpf-rs needs the C libbpf. What is here: the type section (all 19
//! kinds), name lookup, member paths through anonymous members, enum values,
//! function prototypes ([`tracepoint`]: the kernel's `btf_trace_*` naming)
//! and C spellings of types ([`cdecl`]).

mod cdecl;
#[cfg(test)]
mod tests;
mod tracepoint;

use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum BtfError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("not BTF: {0}")]
    Format(String),
    #[error("type `{0}` not found in BTF")]
    TypeNotFound(String),
    #[error("`{ty}` has no member `{member}`")]
    MemberNotFound { ty: String, member: String },
    #[error("enumerator `{0}` not found")]
    EnumeratorNotFound(String),
    #[error("`{name}` has no parameter `{param}`")]
    ParamNotFound { name: String, param: String },
    #[error("member `{0}` is a bitfield")]
    Bitfield(String),
}

pub const SYS_BTF_PATH: &str = "/sys/kernel/btf/vmlinux";

const BTF_MAGIC: u16 = 0xEB9F;
const HDR_MIN: usize = 24;
/// Limit on typedef/const/pointer chains and anonymous-member nesting.
const MAX_DEPTH: usize = 64;

const KIND_INT: u8 = 1;
const KIND_PTR: u8 = 2;
const KIND_ARRAY: u8 = 3;
const KIND_STRUCT: u8 = 4;
const KIND_UNION: u8 = 5;
const KIND_ENUM: u8 = 6;
const KIND_FWD: u8 = 7;
const KIND_TYPEDEF: u8 = 8;
const KIND_VOLATILE: u8 = 9;
const KIND_CONST: u8 = 10;
const KIND_RESTRICT: u8 = 11;
const KIND_FUNC: u8 = 12;
const KIND_FUNC_PROTO: u8 = 13;
const KIND_VAR: u8 = 14;
const KIND_DATASEC: u8 = 15;
const KIND_FLOAT: u8 = 16;
const KIND_DECL_TAG: u8 = 17;
const KIND_TYPE_TAG: u8 = 18;
const KIND_ENUM64: u8 = 19;

/// One type record. `st` is size_or_type; `first` indexes `Btf::items`.
#[derive(Clone, Copy, Debug)]
struct Ty {
    name_off: u32,
    info: u32,
    st: u32,
    first: u32,
}

impl Ty {
    fn kind(&self) -> u8 {
        ((self.info >> 24) & 0x1f) as u8
    }
    fn vlen(&self) -> usize {
        (self.info & 0xffff) as usize
    }
    fn kflag(&self) -> bool {
        self.info >> 31 == 1
    }
}

/// Kind-specific trailing record, up to three u32 words.
/// STRUCT/UNION: (name, type, offset); ENUM: (name, val, 0); ENUM64: (name, lo, hi);
/// FUNC_PROTO: (name, type, 0); ARRAY: (elem, index, nelems); DATASEC: (type, off, size);
/// INT: (encoding, 0, 0); VAR: (linkage, 0, 0); DECL_TAG: (component_idx, 0, 0).
#[derive(Clone, Copy, Debug)]
struct Item {
    a: u32,
    b: u32,
    c: u32,
}

/// Parsed BTF: types (index 0 is `void`), their trailing records, the string
/// table and a name → type ids index.
pub struct Btf {
    types: Vec<Ty>,
    items: Vec<Item>,
    strings: Vec<u8>,
    by_name: HashMap<Box<str>, Vec<u32>>,
}

impl std::fmt::Debug for Btf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Btf")
            .field("types", &self.types.len().saturating_sub(1))
            .field("strings", &self.strings.len())
            .finish()
    }
}

fn fmt_err(msg: impl Into<String>) -> BtfError {
    BtfError::Format(msg.into())
}

fn read_u32(buf: &[u8], off: usize) -> Result<u32, BtfError> {
    off.checked_add(4)
        .and_then(|end| buf.get(off..end))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| fmt_err(format!("truncated at offset {off} (length {})", buf.len())))
}

/// (number of trailing items, bytes per item) for a kind.
fn trailing(kind: u8, vlen: usize) -> Option<(usize, usize)> {
    Some(match kind {
        KIND_INT => (1, 4),
        KIND_PTR | KIND_FWD | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT
        | KIND_FUNC | KIND_FLOAT | KIND_TYPE_TAG => (0, 0),
        KIND_ARRAY => (1, 12),
        KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => (vlen, 12),
        KIND_ENUM | KIND_FUNC_PROTO => (vlen, 8),
        KIND_VAR | KIND_DECL_TAG => (1, 4),
        _ => return None,
    })
}

fn strip_tag(name: &str) -> &str {
    for p in ["struct ", "union ", "enum "] {
        if let Some(rest) = name.strip_prefix(p) {
            return rest.trim_start();
        }
    }
    name
}

impl Btf {
    pub fn from_sys_fs() -> Result<Btf, BtfError> {
        Self::from_path(Path::new(SYS_BTF_PATH))
    }

    pub fn from_path(p: &Path) -> Result<Btf, BtfError> {
        let bytes = std::fs::read(p).map_err(|source| BtfError::Io {
            path: p.display().to_string(),
            source,
        })?;
        Self::parse(&bytes)
    }

    /// Parses a little-endian BTF blob. Never panics; malformed input gives
    /// `BtfError::Format` naming the byte offset.
    pub fn parse(bytes: &[u8]) -> Result<Btf, BtfError> {
        if bytes.len() < HDR_MIN {
            return Err(fmt_err(format!(
                "truncated header: {} bytes, need {HDR_MIN} at offset 0",
                bytes.len()
            )));
        }
        let magic = u16::from_le_bytes([bytes[0], bytes[1]]);
        if magic != BTF_MAGIC {
            if magic == BTF_MAGIC.swap_bytes() {
                return Err(fmt_err("big-endian BTF is not supported (offset 0)"));
            }
            return Err(fmt_err(format!("bad magic {magic:#06x} at offset 0")));
        }
        if bytes[2] != 1 {
            return Err(fmt_err(format!(
                "unsupported version {} at offset 2",
                bytes[2]
            )));
        }
        let hdr_len = read_u32(bytes, 4)? as usize;
        let type_off = read_u32(bytes, 8)? as usize;
        let type_len = read_u32(bytes, 12)? as usize;
        let str_off = read_u32(bytes, 16)? as usize;
        let str_len = read_u32(bytes, 20)? as usize;
        if hdr_len < HDR_MIN || hdr_len > bytes.len() {
            return Err(fmt_err(format!(
                "header length {hdr_len} at offset 4 out of range (blob is {} bytes)",
                bytes.len()
            )));
        }
        let section = |off: usize, len: usize, what: &str, at: usize| {
            let start = hdr_len.checked_add(off);
            let end = start.and_then(|s| s.checked_add(len));
            match (start, end) {
                (Some(s), Some(e)) if e <= bytes.len() => Ok((s, e)),
                _ => Err(fmt_err(format!(
                    "{what} section (offset {off}, length {len}, header offset {at}) \
                     extends past end of blob ({} bytes)",
                    bytes.len()
                ))),
            }
        };
        let (ts, te) = section(type_off, type_len, "type", 8)?;
        let (ss, se) = section(str_off, str_len, "string", 16)?;
        let strings = bytes[ss..se].to_vec();
        if strings.first() != Some(&0) || strings.last() != Some(&0) {
            return Err(fmt_err(format!(
                "string section at offset {ss} must start and end with NUL"
            )));
        }

        let tbuf = &bytes[..te];
        let mut types = vec![Ty {
            name_off: 0,
            info: 0,
            st: 0,
            first: 0,
        }];
        let mut items: Vec<Item> = Vec::new();
        // (type-ref value, byte offset where it was read) checked after all types are known.
        let mut refs: Vec<(u32, usize)> = Vec::new();
        let mut names: Vec<(u32, usize)> = Vec::new();
        let mut pos = ts;
        while pos < te {
            if te - pos < 12 {
                return Err(fmt_err(format!("truncated type record at offset {pos}")));
            }
            let name_off = read_u32(tbuf, pos)?;
            let info = read_u32(tbuf, pos + 4)?;
            let st = read_u32(tbuf, pos + 8)?;
            let kind = ((info >> 24) & 0x1f) as u8;
            let vlen = (info & 0xffff) as usize;
            let (n, sz) = trailing(kind, vlen)
                .ok_or_else(|| fmt_err(format!("unknown type kind {kind} at offset {pos}")))?;
            let body = pos + 12;
            let need = n * sz; // n <= 0xffff, sz <= 12: no overflow
            if te - body < need {
                return Err(fmt_err(format!(
                    "truncated type record (kind {kind}, {need} trailing bytes) at offset {pos}"
                )));
            }
            let id = types.len();
            if id > u32::MAX as usize - 1 {
                return Err(fmt_err(format!("too many types at offset {pos}")));
            }
            let first = u32::try_from(items.len())
                .map_err(|_| fmt_err(format!("too many records at offset {pos}")))?;
            names.push((name_off, pos));
            if matches!(
                kind,
                KIND_PTR
                    | KIND_TYPEDEF
                    | KIND_VOLATILE
                    | KIND_CONST
                    | KIND_RESTRICT
                    | KIND_FUNC
                    | KIND_FUNC_PROTO
                    | KIND_VAR
                    | KIND_DECL_TAG
                    | KIND_TYPE_TAG
            ) {
                refs.push((st, pos + 8));
            }
            for i in 0..n {
                let o = body + i * sz;
                let a = read_u32(tbuf, o)?;
                let b = if sz >= 8 { read_u32(tbuf, o + 4)? } else { 0 };
                let c = if sz >= 12 { read_u32(tbuf, o + 8)? } else { 0 };
                match kind {
                    KIND_STRUCT | KIND_UNION => {
                        names.push((a, o));
                        refs.push((b, o + 4));
                    }
                    KIND_FUNC_PROTO => {
                        names.push((a, o));
                        refs.push((b, o + 4));
                    }
                    KIND_ENUM | KIND_ENUM64 => names.push((a, o)),
                    KIND_ARRAY => {
                        refs.push((a, o));
                        refs.push((b, o + 4));
                    }
                    KIND_DATASEC => refs.push((a, o)),
                    _ => {}
                }
                items.push(Item { a, b, c });
            }
            types.push(Ty {
                name_off,
                info,
                st,
                first,
            });
            pos = body + need;
        }
        let ntypes = types.len();
        if let Some(&(r, at)) = refs.iter().find(|(r, _)| *r as usize >= ntypes) {
            return Err(fmt_err(format!(
                "type id {r} at offset {at} out of range ({} types)",
                ntypes - 1
            )));
        }
        if let Some(&(n, at)) = names.iter().find(|(n, _)| *n as usize >= strings.len()) {
            return Err(fmt_err(format!(
                "string offset {n} at offset {at} out of range (string section is {} bytes)",
                strings.len()
            )));
        }

        let mut btf = Btf {
            types,
            items,
            strings,
            by_name: HashMap::new(),
        };
        let mut by_name: HashMap<Box<str>, Vec<u32>> = HashMap::with_capacity(ntypes);
        for (id, t) in btf.types.iter().enumerate().skip(1) {
            let name = btf.name(t.name_off);
            if name.is_empty() {
                continue;
            }
            match by_name.get_mut(name) {
                Some(v) => v.push(id as u32),
                None => {
                    by_name.insert(name.into(), vec![id as u32]);
                }
            }
        }
        btf.by_name = by_name;
        Ok(btf)
    }

    /// Number of types (without `void`).
    pub fn len(&self) -> usize {
        self.types.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn name(&self, off: u32) -> &str {
        let s = self.strings.get(off as usize..).unwrap_or(&[]);
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        std::str::from_utf8(&s[..end]).unwrap_or("<non-utf8>")
    }

    fn ty(&self, id: u32) -> Result<&Ty, BtfError> {
        self.types
            .get(id as usize)
            .ok_or_else(|| fmt_err(format!("type id {id} out of range")))
    }

    fn items_of(&self, t: &Ty) -> &[Item] {
        let n = match t.kind() {
            KIND_INT | KIND_ARRAY | KIND_VAR | KIND_DECL_TAG => 1,
            KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM | KIND_ENUM64 | KIND_FUNC_PROTO => {
                t.vlen()
            }
            _ => 0,
        };
        let s = t.first as usize;
        self.items.get(s..s.saturating_add(n)).unwrap_or(&[])
    }

    /// First id named `name` whose kind is in `kinds`, trying kinds in order.
    fn find_named(&self, name: &str, kinds: &[u8]) -> Option<u32> {
        let ids = self.by_name.get(name)?;
        kinds.iter().find_map(|&k| {
            ids.iter()
                .copied()
                .find(|&id| self.types.get(id as usize).map(Ty::kind) == Some(k))
        })
    }

    /// Follows typedef/const/volatile/restrict/type_tag.
    fn skip_mods(&self, mut id: u32) -> Result<u32, BtfError> {
        for _ in 0..MAX_DEPTH {
            let t = self.ty(id)?;
            match t.kind() {
                KIND_TYPEDEF | KIND_CONST | KIND_VOLATILE | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = t.st
                }
                _ => return Ok(id),
            }
        }
        Err(fmt_err(format!("type chain too deep at type id {id}")))
    }

    /// A struct/union named `name` (a FWD never wins), or a typedef of one.
    fn find_composite(&self, name: &str) -> Result<u32, BtfError> {
        let bare = strip_tag(name);
        if let Some(id) = self.find_named(bare, &[KIND_STRUCT, KIND_UNION]) {
            return Ok(id);
        }
        if let Some(td) = self.find_named(bare, &[KIND_TYPEDEF]) {
            let id = self.skip_mods(td)?;
            if matches!(self.ty(id)?.kind(), KIND_STRUCT | KIND_UNION) {
                return Ok(id);
            }
        }
        Err(BtfError::TypeNotFound(name.to_string()))
    }

    /// Finds `name` in composite `cid`, descending into anonymous members.
    /// Returns (bit offset, member type, bitfield size or 0).
    fn find_member(
        &self,
        cid: u32,
        name: &str,
        depth: usize,
    ) -> Result<Option<(u64, u32, u32)>, BtfError> {
        if depth > MAX_DEPTH {
            return Err(fmt_err(format!(
                "anonymous members nested too deep at type id {cid}"
            )));
        }
        let t = *self.ty(cid)?;
        for m in self.items_of(&t) {
            let (bit_off, bits) = if t.kflag() {
                (m.c & 0x00ff_ffff, m.c >> 24)
            } else {
                (m.c, 0)
            };
            let mname = self.name(m.a);
            if mname == name {
                let bits = if bits == 0 && !t.kflag() {
                    self.int_bitfield_bits(m.b)?
                } else {
                    bits
                };
                return Ok(Some((bit_off as u64, m.b, bits)));
            }
            if mname.is_empty() {
                let inner = self.skip_mods(m.b)?;
                if matches!(self.ty(inner)?.kind(), KIND_STRUCT | KIND_UNION) {
                    if let Some((o, ty, b)) = self.find_member(inner, name, depth + 1)? {
                        return Ok(Some((bit_off as u64 + o, ty, b)));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Old-style (kflag = 0) bitfield: an INT whose encoding is narrower than its size.
    fn int_bitfield_bits(&self, id: u32) -> Result<u32, BtfError> {
        let t = *self.ty(self.skip_mods(id)?)?;
        if t.kind() != KIND_INT {
            return Ok(0);
        }
        let enc = self.items_of(&t).first().map(|i| i.a).unwrap_or(0);
        let (bits, off) = (enc & 0xff, (enc >> 16) & 0xff);
        if off != 0 || (bits as u64) != (t.st as u64) * 8 {
            Ok(bits.max(1))
        } else {
            Ok(0)
        }
    }

    /// Byte offset of a (possibly nested) member path in a struct or union, e.g.
    /// ("folio", "swap.val"), ("vm_area_struct", "vm_mm"), ("anon_vma", "rb_root.rb_root.rb_node").
    /// Members inside anonymous structs/unions are found transparently.
    /// Typedefs/const/volatile are followed when descending; pointers are not.
    pub fn member_offset(&self, struct_name: &str, path: &str) -> Result<u32, BtfError> {
        let mut cur = self.find_composite(struct_name)?;
        let mut cur_name = self.type_name(cur);
        let mut bits_total: u64 = 0;
        let mut walked = String::new();
        for comp in path.split('.') {
            if !walked.is_empty() {
                walked.push('.');
            }
            walked.push_str(comp);
            let cid = self.skip_mods(cur)?;
            let kind = self.ty(cid)?.kind();
            if !matches!(kind, KIND_STRUCT | KIND_UNION) {
                let why = if kind == KIND_PTR {
                    " (a pointer: not followed)"
                } else {
                    " (not a struct or union)"
                };
                return Err(BtfError::MemberNotFound {
                    ty: format!("{cur_name}{why}"),
                    member: comp.to_string(),
                });
            }
            let (off, mty, bits) =
                self.find_member(cid, comp, 0)?
                    .ok_or_else(|| BtfError::MemberNotFound {
                        ty: cur_name.clone(),
                        member: comp.to_string(),
                    })?;
            if bits != 0 {
                return Err(BtfError::Bitfield(format!("{struct_name}.{walked}")));
            }
            bits_total += off;
            cur = mty;
            cur_name = self.type_name(mty);
        }
        if !bits_total.is_multiple_of(8) {
            return Err(BtfError::Bitfield(format!("{struct_name}.{path}")));
        }
        u32::try_from(bits_total / 8)
            .map_err(|_| fmt_err(format!("offset of {struct_name}.{path} overflows")))
    }

    /// Size in bytes of a named struct/union/int/typedef (also enum/float).
    pub fn type_size(&self, name: &str) -> Result<u32, BtfError> {
        let id = self
            .find_named(
                strip_tag(name),
                &[
                    KIND_STRUCT,
                    KIND_UNION,
                    KIND_TYPEDEF,
                    KIND_INT,
                    KIND_ENUM,
                    KIND_ENUM64,
                    KIND_FLOAT,
                ],
            )
            .ok_or_else(|| BtfError::TypeNotFound(name.to_string()))?;
        let sz = self.size_of(id, 0)?;
        u32::try_from(sz).map_err(|_| fmt_err(format!("size of `{name}` overflows")))
    }

    fn size_of(&self, id: u32, depth: usize) -> Result<u64, BtfError> {
        if depth > MAX_DEPTH {
            return Err(fmt_err(format!("type chain too deep at type id {id}")));
        }
        let t = *self.ty(id)?;
        match t.kind() {
            KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 | KIND_FLOAT
            | KIND_DATASEC => Ok(t.st as u64),
            KIND_PTR => Ok(std::mem::size_of::<usize>() as u64),
            KIND_TYPEDEF | KIND_CONST | KIND_VOLATILE | KIND_RESTRICT | KIND_TYPE_TAG
            | KIND_VAR => self.size_of(t.st, depth + 1),
            KIND_ARRAY => {
                let a = self
                    .items_of(&t)
                    .first()
                    .copied()
                    .ok_or_else(|| fmt_err(format!("array type id {id} without data")))?;
                let elem = self.size_of(a.a, depth + 1)?;
                elem.checked_mul(a.c as u64)
                    .ok_or_else(|| fmt_err(format!("array type id {id} size overflows")))
            }
            _ => Err(BtfError::TypeNotFound(format!(
                "{} (incomplete or unsized)",
                self.type_name(id)
            ))),
        }
    }

    /// Value of an enumerator; `enum_name` None searches all ENUM and ENUM64 types.
    pub fn enum_value(&self, enum_name: Option<&str>, enumerator: &str) -> Result<i64, BtfError> {
        let ids: Vec<u32> = match enum_name {
            Some(n) => {
                let bare = strip_tag(n);
                let mut v: Vec<u32> = self
                    .by_name
                    .get(bare)
                    .map(|ids| {
                        ids.iter()
                            .copied()
                            .filter_map(|id| self.skip_mods(id).ok())
                            .filter(|&id| {
                                matches!(
                                    self.types.get(id as usize).map(Ty::kind),
                                    Some(KIND_ENUM | KIND_ENUM64)
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                v.dedup();
                if v.is_empty() {
                    return Err(BtfError::TypeNotFound(n.to_string()));
                }
                v
            }
            None => (1..self.types.len() as u32)
                .filter(|&id| matches!(self.types[id as usize].kind(), KIND_ENUM | KIND_ENUM64))
                .collect(),
        };
        for id in ids {
            let t = *self.ty(id)?;
            for e in self.items_of(&t) {
                if self.name(e.a) != enumerator {
                    continue;
                }
                return Ok(match (t.kind(), t.kflag()) {
                    (KIND_ENUM, true) => e.b as i32 as i64,
                    (KIND_ENUM, false) => e.b as i64,
                    _ => (((e.c as u64) << 32) | e.b as u64) as i64,
                });
            }
        }
        Err(BtfError::EnumeratorNotFound(match enum_name {
            Some(n) => format!("{n}::{enumerator}"),
            None => enumerator.to_string(),
        }))
    }

    /// Whether a FUNC named `name` exists (i.e. not inlined away).
    pub fn has_func(&self, name: &str) -> bool {
        self.find_named(name, &[KIND_FUNC]).is_some()
    }

    /// Parameter names and C type names of FUNC `name`. A variadic tail is ("", "...").
    pub fn func_params(&self, name: &str) -> Result<Vec<(String, String)>, BtfError> {
        let f = self
            .find_named(name, &[KIND_FUNC])
            .ok_or_else(|| BtfError::TypeNotFound(name.to_string()))?;
        self.proto_params(self.ty(f)?.st)
    }

    /// C type name of the return value of FUNC `name` ("void" for none).
    pub fn func_return(&self, name: &str) -> Result<String, BtfError> {
        let f = self
            .find_named(name, &[KIND_FUNC])
            .ok_or_else(|| BtfError::TypeNotFound(name.to_string()))?;
        let proto = *self.ty(self.ty(f)?.st)?;
        if proto.kind() != KIND_FUNC_PROTO {
            return Err(fmt_err(format!("{name} has no FUNC_PROTO")));
        }
        Ok(self.type_name(proto.st))
    }

    fn proto_params(&self, proto: u32) -> Result<Vec<(String, String)>, BtfError> {
        let p = *self.ty(proto)?;
        if p.kind() != KIND_FUNC_PROTO {
            return Err(fmt_err(format!(
                "type id {proto} is kind {}, expected FUNC_PROTO",
                p.kind()
            )));
        }
        Ok(self
            .items_of(&p)
            .iter()
            .map(|m| {
                let ty = if m.b == 0 && m.a == 0 {
                    "...".to_string()
                } else {
                    self.type_name(m.b)
                };
                (self.name(m.a).to_string(), ty)
            })
            .collect())
    }
}
