use super::*;

fn table(pairs: &[(u64, u64)]) -> CountTable {
    let mut t = CountTable::new("x");
    for &(v, n) in pairs {
        t.add(v, n);
    }
    t
}

/// Metrics after one interval with a bit of everything.
fn sample_metrics(host: &str, cgroup: &str) -> Metrics {
    let mut m = Metrics::new(host, cgroup, ["swap_fault", "reclaim"]);
    let s = Summary {
        faults: 10,
        faults_major: 7,
        fault_pages_read: 20,
        other_reads_io: 3,
        swap_out_io: 5,
        reclaim_memcg: 2,
        ..Summary::default()
    };
    let mut lat = Histogram::new(FREE_LATENCY_BUCKETS);
    lat.observe(3e-6);
    lat.observe(2.0);
    let lost = BTreeMap::from([("swap_fault".to_string(), 4)]);
    m.add_interval(
        &s,
        &table(&[(1, 2), (8, 3), (1000, 1)]),
        &table(&[(4, 7)]),
        &lat,
        &lost,
    );
    m
}

/// The value of the one sample line starting with `prefix`.
fn value(text: &str, prefix: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(prefix)).collect();
    assert_eq!(lines.len(), 1, "{prefix}: {lines:?}");
    lines[0].rsplit(' ').next().unwrap_or("").to_string()
}

#[test]
fn every_family_has_help_and_type_before_its_samples() {
    let text = sample_metrics("h1", "/").render(Format::Text);
    let mut declared = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap_or("").to_string();
            // HELP comes right before TYPE, for the same name.
            declared.push(name);
        } else if !line.starts_with('#') {
            let name = line.split('{').next().unwrap_or("");
            let fam = declared.last().expect("a sample before any TYPE");
            let ok = name == fam
                || ["_bucket", "_sum", "_count"]
                    .iter()
                    .any(|s| name.strip_suffix(s) == Some(fam.as_str()));
            assert!(ok, "{name} under family {fam}");
        }
    }
    let helps = text.lines().filter(|l| l.starts_with("# HELP ")).count();
    assert_eq!(helps, declared.len());
    assert!(declared.contains(&"swaptrace_faults_total".to_string()));
    assert!(text.contains("# TYPE swaptrace_faults_total counter\n"));
    assert!(text.contains("# TYPE swaptrace_free_batch_latency_seconds histogram\n"));
    assert!(!text.contains("# EOF"));
}

#[test]
fn counters_carry_host_and_cgroup_and_sum_the_intervals() {
    let mut m = sample_metrics("h1", "/sys/fs/cgroup/memory/a");
    let text = m.render(Format::Text);
    let l = r#"{host="h1",cgroup="/sys/fs/cgroup/memory/a"}"#;
    assert_eq!(value(&text, &format!("swaptrace_faults_total{l}")), "10");
    assert_eq!(
        value(&text, &format!("swaptrace_pages_read_total{l}")),
        "23"
    );
    let reclaim =
        r#"swaptrace_reclaim_total{host="h1",cgroup="/sys/fs/cgroup/memory/a",kind="memcg"}"#;
    assert_eq!(value(&text, reclaim), "2");
    let lost = r#"swaptrace_lost_events_total{host="h1",cgroup="/sys/fs/cgroup/memory/a",reason="swap_fault"}"#;
    assert_eq!(value(&text, lost), "4");
    // A reason named up front is there at 0.
    let none = r#"swaptrace_lost_events_total{host="h1",cgroup="/sys/fs/cgroup/memory/a",reason="reclaim"}"#;
    assert_eq!(value(&text, none), "0");
    // A second interval adds to the totals.
    m.add_interval(
        &Summary {
            faults: 5,
            ..Summary::default()
        },
        &table(&[]),
        &table(&[]),
        &Histogram::new(FREE_LATENCY_BUCKETS),
        &BTreeMap::new(),
    );
    let text = m.render(Format::Text);
    assert_eq!(value(&text, &format!("swaptrace_faults_total{l}")), "15");
    assert_eq!(value(&text, &format!("swaptrace_intervals_total{l}")), "2");
}

#[test]
fn label_values_are_escaped() {
    assert_eq!(escape_label(r#"a\b"c"#), r#"a\\b\"c"#);
    assert_eq!(escape_label("x\ny"), "x\\ny");
    let text = Metrics::new("we\"ird\nhost", "c:\\g", []).render(Format::Text);
    assert!(
        text.contains(r#"swaptrace_faults_total{host="we\"ird\nhost",cgroup="c:\\g"} 0"#),
        "{text}"
    );
    // No raw line feed inside a sample line: every line is a comment or a sample.
    assert!(text
        .lines()
        .all(|l| l.starts_with('#') || l.starts_with("swaptrace_")));
}

#[test]
fn buckets_are_cumulative_and_inf_equals_count() {
    let text = sample_metrics("h", "/").render(Format::Text);
    let name = "swaptrace_readahead_window_pages";
    let buckets: Vec<(String, u64)> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{name}_bucket{{")))
        .map(|l| {
            let le = l
                .split("le=\"")
                .nth(1)
                .unwrap_or("")
                .split('"')
                .next()
                .unwrap_or("");
            let n = l
                .rsplit(' ')
                .next()
                .unwrap_or("")
                .parse()
                .unwrap_or(u64::MAX);
            (le.to_string(), n)
        })
        .collect();
    assert_eq!(buckets.len(), PAGES_BUCKETS.len() + 1);
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    let at = |le: &str| buckets.iter().find(|b| b.0 == le).map(|b| b.1);
    // Windows 1 (x2), 8 (x3) and 1000 (x1).
    assert_eq!(at("1"), Some(2));
    assert_eq!(at("4"), Some(2));
    assert_eq!(at("8"), Some(5));
    assert_eq!(at("512"), Some(5));
    assert_eq!(at("+Inf"), Some(6));
    let l = r#"{host="h",cgroup="/"}"#;
    assert_eq!(value(&text, &format!("{name}_count{l}")), "6");
    assert_eq!(value(&text, &format!("{name}_sum{l}")), "1026");
    // Latency in seconds: 3 µs and 2 s.
    let lat = "swaptrace_free_batch_latency_seconds";
    assert_eq!(
        value(
            &text,
            &format!(r#"{lat}_bucket{{host="h",cgroup="/",le="0.000005"}}"#)
        ),
        "1"
    );
    assert_eq!(
        value(
            &text,
            &format!(r#"{lat}_bucket{{host="h",cgroup="/",le="+Inf"}}"#)
        ),
        "2"
    );
    assert_eq!(value(&text, &format!("{lat}_sum{l}")), "2.000003");
}

#[test]
fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
    let text = sample_metrics("h", "/").render(Format::OpenMetrics);
    assert!(text.contains("# TYPE swaptrace_faults counter\n"));
    assert!(text.contains("# HELP swaptrace_faults "));
    assert!(text.contains("swaptrace_faults_total{host=\"h\",cgroup=\"/\"} 10\n"));
    assert!(text.ends_with("# EOF\n"));
    assert_eq!(text.matches("# EOF").count(), 1);
}

#[test]
fn accept_header_chooses_the_format() {
    assert_eq!(Format::negotiate(None), Format::Text);
    assert_eq!(
        Format::negotiate(Some("text/plain;version=0.0.4")),
        Format::Text
    );
    let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(Format::negotiate(Some(prom)), Format::OpenMetrics);
    assert!(Format::OpenMetrics
        .content_type()
        .starts_with("application/openmetrics-text"));
}

#[test]
fn histograms_merge_across_bounds_and_ignore_nan() {
    let mut a = Histogram::new(&[1.0, 10.0]);
    a.observe(f64::NAN);
    assert_eq!(a.count(), 0);
    let mut b = Histogram::new(&[0.5, 5.0, 50.0]);
    b.observe(0.2);
    b.observe(4.0);
    b.observe(100.0);
    a.merge(&b);
    // 0.2 counts at 0.5 (<= 1), 4 at 5 (<= 10), 100 at +Inf.
    assert_eq!(
        a.cumulative(),
        vec![(1.0, 1), (10.0, 2), (f64::INFINITY, 3)]
    );
    assert_eq!(a.sum(), 104.2);
    // Same bounds: bucket by bucket.
    let mut c = Histogram::new(&[1.0, 10.0]);
    c.merge(&a);
    c.merge(&a);
    assert_eq!(c.cumulative().last(), Some(&(f64::INFINITY, 6)));
}
