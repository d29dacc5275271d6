//! Maps keyed by (address space, page), as the recorder joins records and
//! the replays keep swap PTEs: ranges taken out (unmapped) or moved
//! (`mremap()`).

use std::collections::HashMap;
use std::hash::BuildHasher;

/// Takes pages `[start, end)` of `mm` out of `map`, with their values:
/// page by page, or in one pass over the map where that is shorter.
pub fn take_range<V, S: BuildHasher>(
    map: &mut HashMap<(u32, u64), V, S>,
    mm: u32,
    start: u64,
    end: u64,
) -> Vec<(u64, V)> {
    if end.saturating_sub(start) <= map.len() as u64 {
        (start..end)
            .filter_map(|p| map.remove(&(mm, p)).map(|v| (p, v)))
            .collect()
    } else {
        map.extract_if(|&(m, p), _| m == mm && (start..end).contains(&p))
            .map(|((_, p), v)| (p, v))
            .collect()
    }
}

/// Moves pages `[from, from + len)` of `mm` to `to` (`move_vma()`).
pub fn move_range<V, S: BuildHasher>(
    map: &mut HashMap<(u32, u64), V, S>,
    mm: u32,
    from: u64,
    to: u64,
    len: u64,
) {
    for (p, v) in take_range(map, mm, from, from.saturating_add(len)) {
        map.insert((mm, p - from + to), v);
    }
}

#[cfg(test)]
mod tests {
    use super::{move_range, take_range};
    use std::collections::HashMap;

    /// Page by page or in one pass, the same pages go, and a move puts
    /// them at the same offsets from its target; other address spaces stay.
    #[test]
    fn ranges_are_taken_and_moved_whichever_way_is_shorter() {
        let filled = || -> HashMap<(u32, u64), u32> {
            [(1, 10), (1, 11), (1, 15), (1, 20), (2, 11)]
                .into_iter()
                .enumerate()
                .map(|(i, k)| (k, i as u32))
                .collect()
        };
        for (start, end) in [(11, 16), (0, 1 << 40)] {
            let mut m = filled();
            let mut took = take_range(&mut m, 1, start, end);
            took.sort_unstable();
            let want: Vec<(u64, u32)> = filled()
                .into_iter()
                .filter(|&((mm, p), _)| mm == 1 && (start..end).contains(&p))
                .map(|((_, p), v)| (p, v))
                .collect::<std::collections::BTreeMap<_, _>>()
                .into_iter()
                .collect();
            assert_eq!(took, want, "[{start}, {end})");
            assert!(m.contains_key(&(2, 11)));
        }
        let mut m = filled();
        move_range(&mut m, 1, 10, 100, 6);
        let mut keys: Vec<_> = m.keys().copied().collect();
        keys.sort_unstable();
        assert_eq!(keys, [(1, 20), (1, 100), (1, 101), (1, 105), (2, 11)]);
        assert_eq!(m[&(1, 105)], 2);
    }
}
