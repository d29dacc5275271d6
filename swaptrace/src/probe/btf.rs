//! Minimal parser of the kernel's BTF blob (`/sys/kernel/btf/vmlinux`).
//!
//! Rust eBPF programs get no CO-RE relocations, so userspace resolves struct
//! member offsets, enumerator values and tracepoint argument positions here
//! before loading, and `swaptrace doctor` reports what is missing.

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

    /// Position of a tracepoint argument for a raw tracepoint / tp_btf program
    /// (0-based, without the leading `void *__data`).
    pub fn tracepoint_arg(&self, tp: &str, param: &str) -> Result<usize, BtfError> {
        self.tracepoint_params(tp)?
            .iter()
            .position(|(n, _)| n == param)
            .ok_or_else(|| BtfError::ParamNotFound {
                name: tp.to_string(),
                param: param.to_string(),
            })
    }

    /// Tracepoint arguments (name, C type), without `__data`.
    ///
    /// Sources, in order: FUNC `__bpf_trace_<tp>` (exists when the event is its
    /// own class), FUNC `__probestub_<tp>` (per tracepoint, 6.5+), then typedef
    /// `btf_trace_<tp>` (per event, unnamed params) with names taken from a
    /// `__bpf_trace_<class>` FUNC of identical parameter types (`argN` if none).
    pub fn tracepoint_params(&self, tp: &str) -> Result<Vec<(String, String)>, BtfError> {
        let drop_data = |mut v: Vec<(String, String)>| {
            if v.first()
                .is_some_and(|(n, t)| n == "__data" || t == "void *")
            {
                v.remove(0);
            }
            v
        };
        for prefix in ["__bpf_trace_", "__probestub_"] {
            let fname = format!("{prefix}{tp}");
            if self.has_func(&fname) {
                return Ok(drop_data(self.func_params(&fname)?));
            }
        }
        let missing = || BtfError::TypeNotFound(format!("__bpf_trace_{tp}"));
        let td = self
            .find_named(&format!("btf_trace_{tp}"), &[KIND_TYPEDEF])
            .ok_or_else(missing)?;
        let ptr = self.skip_mods(td)?;
        let pt = *self.ty(ptr)?;
        if pt.kind() != KIND_PTR {
            return Err(missing());
        }
        let proto = self.skip_mods(pt.st)?;
        if self.ty(proto)?.kind() != KIND_FUNC_PROTO {
            return Err(missing());
        }
        let want: Vec<u32> = self.items_of(self.ty(proto)?).iter().map(|m| m.b).collect();
        // FUNC __bpf_trace_<class> candidates with the same parameter type ids.
        let mut best: Option<(usize, u32)> = None;
        for t in self.types.iter() {
            if t.kind() != KIND_FUNC {
                continue;
            }
            let Some(class) = self.name(t.name_off).strip_prefix("__bpf_trace_") else {
                continue;
            };
            let Ok(p) = self.ty(t.st) else { continue };
            if p.kind() != KIND_FUNC_PROTO {
                continue;
            }
            let got = self.items_of(p);
            if got.len() != want.len() || got.iter().zip(&want).any(|(m, &w)| m.b != w) {
                continue;
            }
            let common = class
                .bytes()
                .zip(tp.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            if best.is_none_or(|(c, _)| common > c) {
                best = Some((common, t.st));
            }
        }
        let params = match best {
            Some((_, p)) => self.proto_params(p)?,
            None => self
                .proto_params(proto)?
                .into_iter()
                .enumerate()
                .map(|(i, (n, t))| {
                    let n = if n.is_empty() && i > 0 {
                        format!("arg{}", i - 1)
                    } else {
                        n
                    };
                    (n, t)
                })
                .collect(),
        };
        Ok(drop_data(params))
    }

    /// C spelling of a type, e.g. "struct folio *", "const char *", "unsigned long".
    pub fn type_name_of(&self, id: u32) -> String {
        self.type_name(id)
    }

    fn type_name(&self, id: u32) -> String {
        self.type_name_d(id, 0)
    }

    fn type_name_d(&self, id: u32, depth: usize) -> String {
        if id == 0 {
            return "void".into();
        }
        if depth > MAX_DEPTH {
            return "?".into();
        }
        let Some(t) = self.types.get(id as usize).copied() else {
            return format!("<bad type id {id}>");
        };
        let name = self.name(t.name_off);
        let tagged = |tag: &str| {
            if name.is_empty() {
                format!("{tag} {{...}}")
            } else {
                format!("{tag} {name}")
            }
        };
        let target_kind = || self.types.get(t.st as usize).map(Ty::kind);
        match t.kind() {
            KIND_INT | KIND_FLOAT | KIND_TYPEDEF | KIND_FUNC | KIND_VAR => name.to_string(),
            KIND_STRUCT => tagged("struct"),
            KIND_UNION => tagged("union"),
            KIND_ENUM | KIND_ENUM64 => tagged("enum"),
            KIND_FWD => tagged(if t.kflag() { "union" } else { "struct" }),
            KIND_DATASEC => format!("section {name}"),
            KIND_TYPE_TAG | KIND_DECL_TAG => self.type_name_d(t.st, depth + 1),
            KIND_PTR => {
                if target_kind() == Some(KIND_FUNC_PROTO) {
                    self.proto_name(t.st, "(*)", depth + 1)
                } else {
                    let inner = self.type_name_d(t.st, depth + 1);
                    if inner.ends_with('*') {
                        format!("{inner}*")
                    } else {
                        format!("{inner} *")
                    }
                }
            }
            KIND_CONST | KIND_VOLATILE | KIND_RESTRICT => {
                let q = match t.kind() {
                    KIND_CONST => "const",
                    KIND_VOLATILE => "volatile",
                    _ => "restrict",
                };
                let inner = self.type_name_d(t.st, depth + 1);
                if target_kind() == Some(KIND_PTR) {
                    format!("{inner}{q}")
                } else {
                    format!("{q} {inner}")
                }
            }
            KIND_ARRAY => match self.items_of(&t).first() {
                Some(a) => format!("{}[{}]", self.type_name_d(a.a, depth + 1), a.c),
                None => "?[]".into(),
            },
            KIND_FUNC_PROTO => self.proto_name(id, "", depth),
            k => format!("<kind {k}>"),
        }
    }

    fn proto_name(&self, proto: u32, mid: &str, depth: usize) -> String {
        let Some(p) = self.types.get(proto as usize).copied() else {
            return format!("<bad type id {proto}>");
        };
        let ret = self.type_name_d(p.st, depth + 1);
        let args: Vec<String> = self
            .items_of(&p)
            .iter()
            .map(|m| {
                if m.a == 0 && m.b == 0 {
                    "...".to_string()
                } else {
                    self.type_name_d(m.b, depth + 1)
                }
            })
            .collect();
        let args = if args.is_empty() {
            "void".to_string()
        } else {
            args.join(", ")
        };
        if mid.is_empty() {
            format!("{ret} ({args})")
        } else {
            format!("{ret} {mid}({args})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiny BTF writer for tests.
    struct Builder {
        types: Vec<u8>,
        strs: Vec<u8>,
        next: u32,
    }

    impl Builder {
        fn new() -> Self {
            Builder {
                types: Vec::new(),
                strs: vec![0],
                next: 1,
            }
        }
        fn s(&mut self, s: &str) -> u32 {
            if s.is_empty() {
                return 0;
            }
            let off = self.strs.len() as u32;
            self.strs.extend_from_slice(s.as_bytes());
            self.strs.push(0);
            off
        }
        fn w(&mut self, v: u32) {
            self.types.extend_from_slice(&v.to_le_bytes());
        }
        fn ty(&mut self, name: &str, kind: u8, vlen: u32, kflag: bool, st: u32) -> u32 {
            let n = self.s(name);
            self.w(n);
            self.w(((kflag as u32) << 31) | ((kind as u32) << 24) | vlen);
            self.w(st);
            self.next += 1;
            self.next - 1
        }
        fn int(&mut self, name: &str, size: u32, signed: bool) -> u32 {
            let id = self.ty(name, KIND_INT, 0, false, size);
            self.w(((signed as u32) << 24) | (size * 8));
            id
        }
        fn composite(
            &mut self,
            kind: u8,
            name: &str,
            size: u32,
            kflag: bool,
            m: &[(&str, u32, u32)],
        ) -> u32 {
            let id = self.ty(name, kind, m.len() as u32, kflag, size);
            for &(n, t, off) in m {
                let n = self.s(n);
                self.w(n);
                self.w(t);
                self.w(off);
            }
            id
        }
        fn enum32(&mut self, name: &str, signed: bool, e: &[(&str, i32)]) -> u32 {
            let id = self.ty(name, KIND_ENUM, e.len() as u32, signed, 4);
            for &(n, v) in e {
                let n = self.s(n);
                self.w(n);
                self.w(v as u32);
            }
            id
        }
        fn enum64(&mut self, name: &str, signed: bool, e: &[(&str, i64)]) -> u32 {
            let id = self.ty(name, KIND_ENUM64, e.len() as u32, signed, 8);
            for &(n, v) in e {
                let n = self.s(n);
                self.w(n);
                self.w(v as u64 as u32);
                self.w((v as u64 >> 32) as u32);
            }
            id
        }
        fn proto(&mut self, ret: u32, p: &[(&str, u32)]) -> u32 {
            let id = self.ty("", KIND_FUNC_PROTO, p.len() as u32, false, ret);
            for &(n, t) in p {
                let n = self.s(n);
                self.w(n);
                self.w(t);
            }
            id
        }
        fn build(&self) -> Vec<u8> {
            let mut out = Vec::new();
            out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
            out.push(1);
            out.push(0);
            for v in [
                24u32,
                0,
                self.types.len() as u32,
                self.types.len() as u32,
                self.strs.len() as u32,
            ] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&self.types);
            out.extend_from_slice(&self.strs);
            out
        }
    }

    fn synthetic() -> Vec<u8> {
        let mut b = Builder::new();
        let int = b.int("int", 4, true); // 1
        let ulong = b.int("unsigned long", 8, false); // 2
        let chr = b.int("char", 1, true); // 3
        let _fwd = b.ty("folio", KIND_FWD, 0, false, 0); // 4: FWD must lose to the STRUCT
        let inner = b.composite(KIND_STRUCT, "swp_entry", 8, false, &[("val", ulong, 0)]); // 5
        let swp_t = b.ty("swp_entry_t", KIND_TYPEDEF, 0, false, inner); // 6
        let anon_s = b.composite(KIND_STRUCT, "", 8, false, &[("a", int, 0), ("b", int, 32)]); // 7
        let anon_u = b.composite(
            KIND_UNION,
            "",
            8,
            false,
            &[("", anon_s, 0), ("swap", swp_t, 0)],
        ); // 8
        let c_swp = b.ty("", KIND_CONST, 0, false, swp_t); // 9
        let folio_id = b.next + 1; // PTR is 10, STRUCT folio 11
        let pfolio = b.ty("", KIND_PTR, 0, false, folio_id); // 10
        let folio = b.composite(
            KIND_STRUCT,
            "folio",
            40,
            true,
            &[
                ("flags", ulong, 0),
                ("", anon_u, 64),
                ("private", c_swp, 128),
                ("bf", int, 192 | (3 << 24)),
                ("p", pfolio, 256),
            ],
        ); // 11
        assert_eq!(folio, folio_id);
        b.enum32("color", true, &[("RED", 0), ("BLUE", -2)]);
        b.enum32("uflags", false, &[("BIG", -1)]);
        b.enum64("big64", true, &[("HUGE", 1 << 40), ("NEG", -5)]);
        let pvoid = b.ty("", KIND_PTR, 0, false, 0);
        let cchar = b.ty("", KIND_CONST, 0, false, chr);
        let pcchar = b.ty("", KIND_PTR, 0, false, cchar);
        let proto = b.proto(0, &[("__data", pvoid), ("folio", pfolio), ("nr", ulong)]);
        b.ty("__bpf_trace_mm_test", KIND_FUNC, 0, false, proto);
        let proto2 = b.proto(int, &[("x", int), ("s", pcchar), ("", 0)]);
        b.ty("do_thing", KIND_FUNC, 0, false, proto2);
        // DEFINE_EVENT-style: typedef'd pointer to an unnamed proto with the same types.
        let proto3 = b.proto(0, &[("", pvoid), ("", pfolio), ("", ulong)]);
        let pproto3 = b.ty("", KIND_PTR, 0, false, proto3);
        b.ty("btf_trace_mm_test2", KIND_TYPEDEF, 0, false, pproto3);
        let arr = b.ty("", KIND_ARRAY, 0, false, 0);
        b.w(int);
        b.w(int);
        b.w(4);
        b.ty("int4", KIND_TYPEDEF, 0, false, arr);
        b.build()
    }

    #[test]
    fn synthetic_blob() {
        let btf = Btf::parse(&synthetic()).expect("parse");
        assert_eq!(btf.member_offset("folio", "flags").unwrap(), 0);
        assert_eq!(btf.member_offset("folio", "swap").unwrap(), 8);
        assert_eq!(btf.member_offset("struct folio", "swap.val").unwrap(), 8);
        assert_eq!(btf.member_offset("folio", "b").unwrap(), 12);
        assert_eq!(btf.member_offset("folio", "private.val").unwrap(), 16);
        assert_eq!(btf.member_offset("folio", "p").unwrap(), 32);
        assert_eq!(btf.member_offset("swp_entry_t", "val").unwrap(), 0);
        assert!(matches!(
            btf.member_offset("folio", "bf"),
            Err(BtfError::Bitfield(_))
        ));
        assert!(matches!(
            btf.member_offset("folio", "p.flags"),
            Err(BtfError::MemberNotFound { .. })
        ));
        assert!(matches!(
            btf.member_offset("folio", "nope"),
            Err(BtfError::MemberNotFound { .. })
        ));
        assert!(matches!(
            btf.member_offset("nostruct", "x"),
            Err(BtfError::TypeNotFound(_))
        ));
        assert_eq!(btf.type_size("folio").unwrap(), 40);
        assert_eq!(btf.type_size("swp_entry_t").unwrap(), 8);
        assert_eq!(btf.type_size("unsigned long").unwrap(), 8);
        assert_eq!(btf.type_size("int4").unwrap(), 16);
        assert_eq!(btf.enum_value(Some("color"), "BLUE").unwrap(), -2);
        assert_eq!(btf.enum_value(None, "RED").unwrap(), 0);
        assert_eq!(btf.enum_value(None, "BIG").unwrap(), 0xffff_ffff);
        assert_eq!(btf.enum_value(Some("big64"), "HUGE").unwrap(), 1 << 40);
        assert_eq!(btf.enum_value(None, "NEG").unwrap(), -5);
        assert!(matches!(
            btf.enum_value(Some("color"), "GREEN"),
            Err(BtfError::EnumeratorNotFound(_))
        ));
        assert!(matches!(
            btf.enum_value(Some("nocolor"), "RED"),
            Err(BtfError::TypeNotFound(_))
        ));
        assert!(btf.has_func("do_thing"));
        assert!(!btf.has_func("folio"));
        let s = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            btf.func_params("do_thing").unwrap(),
            s(&[("x", "int"), ("s", "const char *"), ("", "...")])
        );
        assert_eq!(
            btf.func_params("__bpf_trace_mm_test").unwrap(),
            s(&[
                ("__data", "void *"),
                ("folio", "struct folio *"),
                ("nr", "unsigned long")
            ])
        );
        let want = s(&[("folio", "struct folio *"), ("nr", "unsigned long")]);
        assert_eq!(btf.tracepoint_params("mm_test").unwrap(), want);
        assert_eq!(btf.tracepoint_params("mm_test2").unwrap(), want);
        assert_eq!(btf.tracepoint_arg("mm_test", "nr").unwrap(), 1);
        assert_eq!(btf.tracepoint_arg("mm_test2", "folio").unwrap(), 0);
        assert!(matches!(
            btf.tracepoint_arg("mm_test", "zzz"),
            Err(BtfError::ParamNotFound { .. })
        ));
        assert!(matches!(
            btf.tracepoint_params("nope"),
            Err(BtfError::TypeNotFound(_))
        ));
    }

    fn exercise(btf: &Btf) {
        let _ = btf.member_offset("folio", "swap.val");
        let _ = btf.member_offset("folio", "b");
        let _ = btf.member_offset("folio", "p.x");
        let _ = btf.type_size("folio");
        let _ = btf.type_size("int4");
        let _ = btf.enum_value(None, "NEG");
        let _ = btf.func_params("do_thing");
        let _ = btf.tracepoint_params("mm_test2");
        for id in 0..btf.types.len() as u32 + 2 {
            let _ = btf.type_name(id);
            let _ = btf.size_of(id, 0);
        }
    }

    #[test]
    fn truncated_and_garbage() {
        let blob = synthetic();
        for n in 0..blob.len() {
            match Btf::parse(&blob[..n]) {
                Err(BtfError::Format(_)) => {}
                other => panic!("prefix {n}: expected Format error, got {other:?}"),
            }
        }
        // Corrupt each byte in turn: must never panic.
        for i in 0..blob.len() {
            for v in [0x00u8, 0xff, 0x7f, 0x13] {
                let mut b = blob.clone();
                b[i] = v;
                if let Ok(btf) = Btf::parse(&b) {
                    exercise(&btf);
                }
            }
        }
        // Self-referential typedef and struct: must terminate.
        let mut b = Builder::new();
        b.ty("loop", KIND_TYPEDEF, 0, false, 1);
        b.composite(KIND_STRUCT, "s", 4, false, &[("", 2, 0)]);
        let btf = Btf::parse(&b.build()).unwrap();
        assert!(btf.type_size("loop").is_err());
        assert!(btf.member_offset("s", "x").is_err());
        assert!(btf.member_offset("loop", "x").is_err());
        let _ = btf.type_name(1);
        let mut seed = 0x1234_5678u32;
        for len in [0usize, 1, 24, 100, 1000] {
            let g: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (seed >> 16) as u8
                })
                .collect();
            assert!(matches!(Btf::parse(&g), Err(BtfError::Format(_))));
        }
        assert!(matches!(
            Btf::from_path(Path::new("/nonexistent/btf")),
            Err(BtfError::Io { .. })
        ));
    }

    #[test]
    fn live_vmlinux() {
        let t0 = std::time::Instant::now();
        let btf = match Btf::from_sys_fs() {
            Ok(b) => {
                assert_eq!(b.func_return("do_swap_page").unwrap(), "vm_fault_t");
                assert!(b.func_return("no_such_function_here").is_err());
                b
            }
            Err(BtfError::Io { path, source }) => {
                eprintln!("skipping live BTF test: cannot read {path}: {source}");
                return;
            }
            Err(e) => panic!("parsing {SYS_BTF_PATH}: {e}"),
        };
        eprintln!("parsed {} types in {:?}", btf.len(), t0.elapsed());
        for (s, m) in [
            ("folio", "swap"),
            ("folio", "swap.val"),
            ("vm_area_struct", "vm_mm"),
            ("vm_area_struct", "swap_readahead_info"),
            ("task_struct", "mm"),
            ("task_struct", "tgid"),
            ("mm_struct", "pgd"),
            ("anon_vma", "rb_root"),
            ("anon_vma_chain", "vma"),
            ("anon_vma_chain", "rb"),
        ] {
            match btf.member_offset(s, m) {
                Ok(o) => eprintln!("offset {s}.{m} = {o}"),
                Err(e) => panic!("{s}.{m}: {e}"),
            }
        }
        let pswpin = btf
            .enum_value(Some("vm_event_item"), "PSWPIN")
            .expect("PSWPIN");
        eprintln!("enum vm_event_item::PSWPIN = {pswpin}");
        assert_eq!(
            btf.tracepoint_arg("mm_vmscan_write_folio", "folio")
                .unwrap(),
            0
        );
        let names: Vec<String> = btf
            .tracepoint_params("page_fault_user")
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["address", "regs", "error_code"]);
        for tp in [
            "count_memcg_events",
            "rss_stat",
            "page_fault_user",
            "page_fault_kernel",
            "mm_vmscan_write_folio",
            "mm_vmscan_direct_reclaim_begin",
            "mm_vmscan_direct_reclaim_end",
            "mm_vmscan_memcg_reclaim_begin",
            "mm_vmscan_memcg_reclaim_end",
            "mm_collapse_huge_page_swapin",
            "sys_enter",
            "sys_exit",
            "sched_process_exit",
        ] {
            match btf.tracepoint_params(tp) {
                Ok(p) => {
                    let p: Vec<String> = p.iter().map(|(n, t)| format!("{t} {n}")).collect();
                    eprintln!("tp {tp}({})", p.join(", "));
                }
                Err(e) => eprintln!("tp {tp}: {e}"),
            }
        }
    }
}
