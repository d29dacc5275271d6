//! The family's registry of policies by name, and `run`: a trace in, the
//! default set replayed with the trace's memory, device and swapoff.

use super::*;
// The family's `run`, not the tests' helper of that name.
use super::super::run;

/// The default set as `replay` chose it before the family owned it.
#[test]
fn the_default_set_is_the_standard_one_plus_other_kernels_swapoff() {
    let mut inp = input(&[0, 1, 2, 3], 1 << 20, 0);
    let plain = ["cluster", "vma", "none", "fixed:8", "leap", "oracle"];
    assert_eq!(default_names(&inp), plain);
    inp.events.push(Event::Swapoff { ts: 100, dev: 0 });
    let with = |variants: [&'static str; 4]| {
        let mut v: Vec<&str> = plain.to_vec();
        v.splice(2..2, variants);
        v
    };
    for (mode, variants) in [
        (
            SwapoffMode::Readahead,
            [
                "cluster-swapoff-fix",
                "cluster-swapoff-nostats",
                "vma-swapoff-fix",
                "vma-swapoff-nostats",
            ],
        ),
        (
            SwapoffMode::LookupStats,
            [
                "cluster-no-swapoff-fix",
                "cluster-swapoff-nostats",
                "vma-no-swapoff-fix",
                "vma-swapoff-nostats",
            ],
        ),
        (
            SwapoffMode::LookupNoStats,
            [
                "cluster-no-swapoff-fix",
                "cluster-swapoff-fix",
                "vma-no-swapoff-fix",
                "vma-swapoff-fix",
            ],
        ),
    ] {
        inp.swapoff_mode = mode;
        assert_eq!(default_names(&inp), with(variants), "{mode:?}");
    }
}

#[test]
fn the_registry_lists_the_names_policy_takes() {
    assert_eq!(
        POLICY_NAMES,
        [
            "cluster",
            "vma",
            "cluster-swapoff-fix",
            "vma-swapoff-fix",
            "cluster-no-swapoff-fix",
            "vma-no-swapoff-fix",
            "cluster-swapoff-nostats",
            "vma-swapoff-nostats",
            "none",
            "fixed:N",
            "leap",
            "oracle",
        ]
    );
    assert_eq!(POLICIES.len(), REGISTRY.len());
    for p in POLICIES {
        assert!(!p.help.is_empty() && !p.help.contains("seed"), "{p:?}");
    }
    // Every default is built by its row.
    let inp = input(&[0, 1, 2, 3], 1 << 20, 0);
    for r in REGISTRY {
        if let Some(n) = r.default {
            assert_eq!(policy_by_name(n, &inp).unwrap().name(), n);
        }
    }
}

#[test]
fn policies_by_name_as_before() {
    let inp = input(&[0, 1, 2, 3], 1 << 20, 0);
    let by = |n: &str| policy_by_name(n, &inp).map(|p| (p.name(), p.swapoff_mode()));
    assert_eq!(
        by("cluster").unwrap(),
        ("cluster".into(), SwapoffMode::LookupStats)
    );
    assert_eq!(
        by("vma-no-swapoff-fix").unwrap(),
        ("vma-no-swapoff-fix".into(), SwapoffMode::Readahead)
    );
    assert_eq!(
        by("cluster-swapoff-nostats").unwrap(),
        ("cluster-swapoff-nostats".into(), SwapoffMode::LookupNoStats)
    );
    assert_eq!(by("fixed:1").unwrap().0, "none");
    assert_eq!(by("fixed:64").unwrap().0, "fixed:64");
    // Other policies take a swapoff suffix and ignore it.
    assert_eq!(by("leap-swapoff-fix").unwrap().0, "leap");
    let err = |n: &str| by(n).err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        err("lru"),
        format!("unknown policy `lru` (known: {})", POLICY_NAMES.join(", "))
    );
    assert_eq!(err("cluster-foo").split(' ').nth(2), Some("`cluster-foo`"));
    assert_eq!(
        err("fixed:x"),
        "bad policy parameter `fixed:x`: N must be a number"
    );
    assert_eq!(
        err("fixed:3"),
        "bad policy parameter `fixed:3`: N must be a power of two from 1 to 1024"
    );
    assert_eq!(
        err("fixed:8-swapoff-fix"),
        "bad policy parameter `fixed:8-swapoff-fix`: N must be a number"
    );
}

/// A policy whose model has a bug.
struct Panics;

impl Policy for Panics {
    fn name(&self) -> String {
        "panics".into()
    }

    fn readahead(&mut self, _: &FaultCtx, _: &SwapView, _: &mut Vec<SwapEntry>) -> u32 {
        panic!("a deliberate bug")
    }
}

#[test]
fn a_panicking_policy_fails_the_replay_and_is_named() {
    let inp = input(&[0, 1, 2, 3], 1 << 20, 0);
    let policies = vec![policy_by_name("cluster", &inp).unwrap(), Box::new(Panics)];
    match replay_all(&inp, policies) {
        Err(ReplayError::PolicyPanicked(name)) => assert_eq!(name, "panics"),
        other => panic!("expected a panicked policy, got {other:?}"),
    }
    let ok = replay_all(&inp, vec![policy_by_name("none", &inp).unwrap()]).unwrap();
    assert_eq!(ok[0].faults, 4);
}

#[test]
fn run_replays_the_default_set_with_the_trace_s_memory_and_device() {
    let t = loaded(false);
    let r = run(&t, &crate::replay::family::ReplayRequest::default()).unwrap();
    let names: Vec<&str> = r.results.iter().map(|m| m.policy.as_str()).collect();
    assert_eq!(
        names,
        ["cluster", "vma", "none", "fixed:8", "leap", "oracle"]
    );
    // synth's faults carry no durations: the recorded devices' preset, and why.
    assert_eq!(r.device, DeviceModel::for_trace(&t.header));
    match &r.cost.model {
        super::CostSource::Fallback { why } => assert!(why.contains("a fit needs 16"), "{why}"),
        other => panic!("expected the fallback, got {other:?}"),
    }
    // The same replay by hand: memory from the header.
    let inp = ReplayInput::from_trace(&t, t.header.memory_pages()).unwrap();
    let mut p = policy_by_name("vma", &inp).unwrap();
    assert_eq!(
        serde_json::to_value(&r.results[1]).unwrap(),
        serde_json::to_value(replay(&inp, p.as_mut())).unwrap()
    );
    // `all` is the default set; a list is taken as written.
    let req = |policies, params: &'static [String]| crate::replay::family::ReplayRequest {
        policies,
        params,
        memory_pages: Some(8),
        device: Some("nvme"),
    };
    let all = run(&t, &req(Some("all"), &[])).unwrap();
    assert_eq!(all.results.len(), 6);
    let two = run(&t, &req(Some("leap, fixed:4"), &[])).unwrap();
    let names: Vec<&str> = two.results.iter().map(|m| m.policy.as_str()).collect();
    assert_eq!(names, ["leap", "fixed:4"]);
    assert_eq!(two.device.name, "nvme");
    assert_eq!(two.cost.model, super::CostSource::Preset);
}

#[test]
fn run_fits_the_io_model_to_the_trace_s_major_faults() {
    let mut t = loaded(false);
    // Major faults reading 1 to 4 pages in 0.05 ms + 0.01 ms per page.
    let mut i = 0u32;
    for r in &mut t.records {
        if let Record::SwapFault {
            dur_ns,
            major,
            pages_read,
            ..
        } = r
        {
            i += 1;
            *major = true;
            *pages_read = 1 + i % 4;
            *dur_ns = 50_000 + 10_000 * *pages_read;
        }
    }
    let r = run(&t, &crate::replay::family::ReplayRequest::default()).unwrap();
    let super::CostSource::Fit(f) = &r.cost.model else {
        panic!("expected a fit, got {:?}", r.cost.model);
    };
    assert!((f.request_ms - 0.05).abs() < 1e-9, "{f:?}");
    assert!((f.page_ms - 0.01).abs() < 1e-9, "{f:?}");
    assert_eq!(f.faults, u64::from(i));
    assert_eq!(r.device, DeviceModel::fitted(f));
    assert_eq!(r.device.name, "fit");
    assert_eq!(r.cost.measured.major_faults, u64::from(i));
    // --device still names a preset, and the measured side is kept.
    let req = crate::replay::family::ReplayRequest {
        device: Some("hdd"),
        ..Default::default()
    };
    let r = run(&t, &req).unwrap();
    assert_eq!(
        (r.device.name, &r.cost.model),
        ("hdd", &super::CostSource::Preset)
    );
    assert_eq!(r.cost.measured.major_faults, u64::from(i));
}

#[test]
fn run_takes_the_params_with_the_errors_of_before() {
    let t = loaded(false);
    let with = |params: Vec<String>| {
        let req = crate::replay::family::ReplayRequest {
            policies: Some("cluster"),
            params: &params,
            ..Default::default()
        };
        run(&t, &req).map_err(|e| e.to_string())
    };
    let p = |s: &str| vec![s.to_string()];
    let r = with(vec!["request-us=5".into(), "page-us=0.5".into()]).unwrap();
    assert_eq!((r.device.request_us, r.device.page_us), (5.0, 0.5));
    let pc0 = with(p("page-cluster=0")).unwrap();
    assert_eq!(
        pc0.results[0].windows.keys().copied().collect::<Vec<_>>(),
        [1]
    );
    assert_eq!(
        with(p("page-cluster=11")).unwrap_err(),
        "--param page-cluster=11: page-cluster is 0 to 10"
    );
    assert_eq!(
        with(p("page-us=-1")).unwrap_err(),
        "--param page-us=-1: a cost in µs, 0 or more"
    );
    assert_eq!(
        with(p("pool-pages=4")).unwrap_err(),
        "--param pool-pages=4: known parameters: page-cluster=N, request-us=F, page-us=F"
    );
}

#[test]
fn run_adds_the_other_kernels_swapoff_when_the_trace_has_one() {
    let t = loaded(true);
    let r = run(&t, &crate::replay::family::ReplayRequest::default()).unwrap();
    let names: Vec<&str> = r.results.iter().map(|m| m.policy.as_str()).collect();
    // "synthetic" is no release: the 5.8 to 6.17 way.
    assert_eq!(
        names,
        [
            "cluster",
            "vma",
            "cluster-no-swapoff-fix",
            "cluster-swapoff-nostats",
            "vma-no-swapoff-fix",
            "vma-swapoff-nostats",
            "none",
            "fixed:8",
            "leap",
            "oracle"
        ]
    );
}
