//! C spellings of BTF types, e.g. "struct folio *", "const char *".

use super::*;

impl Btf {
    /// C spelling of a type, e.g. "struct folio *", "const char *", "unsigned long".
    pub fn type_name_of(&self, id: u32) -> String {
        self.type_name(id)
    }

    pub(super) fn type_name(&self, id: u32) -> String {
        self.type_name_d(id, 0)
    }

    pub(super) fn type_name_d(&self, id: u32, depth: usize) -> String {
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
