//! tracefs `format` files: field offsets and symbolic value names, so that
//! classic tracepoint programs read fields where this kernel puts them
//! (fields get added upstream, e.g. an `order` in huge_memory's events).

use std::collections::BTreeMap;

/// The `format` file of tracepoint `category/name` (tracefs mounted if needed).
pub fn read_format(category: &str, name: &str) -> Result<String, String> {
    let _ = crate::lab::mount_tracefs();
    let path = format!("/sys/kernel/tracing/events/{category}/{name}/format");
    std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))
}

/// Offset of a field in a `format` file.
pub fn field_offset(format: &str, field: &str) -> Option<u64> {
    format.lines().find_map(|l| {
        let l = l.trim();
        let decl = l.strip_prefix("field:")?.split(';').next()?;
        let name = decl.rsplit([' ', '*']).next()?;
        if name != field {
            return None;
        }
        let off = l.split("offset:").nth(1)?.split(';').next()?;
        off.trim().parse().ok()
    })
}

/// The names `__print_symbolic(REC->field, {0, "failed"}, …)` gives values.
pub fn symbols(format: &str, field: &str) -> BTreeMap<i32, String> {
    let key = format!("__print_symbolic(REC->{field},");
    let Some(start) = format.find(&key) else {
        return BTreeMap::new();
    };
    let rest = &format[start + key.len()..];
    let mut out = BTreeMap::new();
    for pair in rest.split('{').skip(1) {
        let Some(body) = pair.split('}').next() else {
            break;
        };
        let Some((num, name)) = body.split_once(',') else {
            break;
        };
        let Ok(v) = num.trim().parse::<i32>() else {
            break;
        };
        out.insert(v, name.trim().trim_matches('"').to_string());
        if pair.contains(')') && !pair.contains("},") && pair.trim_end().ends_with(')') {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCAN: &str = "name: mm_khugepaged_scan_pmd\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:struct mm_struct * mm;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:int referenced;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int status;\toffset:32;\tsize:4;\tsigned:1;\n\tfield:int unmapped;\toffset:36;\tsize:4;\tsigned:1;\n\nprint fmt: \"mm=%p, status=%s, unmapped=%d\", REC->mm, __print_symbolic(REC->status, {0, \"failed\"}, {1, \"succeeded\"}, {6, \"exceed_swap_pte\"}), REC->unmapped\n";

    #[test]
    fn offsets_and_symbols_from_a_format_file() {
        assert_eq!(field_offset(SCAN, "mm"), Some(8));
        assert_eq!(field_offset(SCAN, "unmapped"), Some(36));
        assert_eq!(field_offset(SCAN, "order"), None);
        let s = symbols(SCAN, "status");
        assert_eq!(s.len(), 3);
        assert_eq!(s[&6], "exceed_swap_pte");
        assert!(symbols(SCAN, "result").is_empty());
    }
}
