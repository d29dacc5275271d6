//! Tracepoint arguments as raw tracepoint and tp_btf programs see them:
//! the `btf_trace_<tp>` typedef, or the `__bpf_trace_<tp>`/`__probestub_<tp>` functions.

use super::*;

impl Btf {
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
}
