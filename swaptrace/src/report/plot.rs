//! `swaptrace plot`: PNG charts of a trace and of its replayed policies.

use crate::replay::Metrics;
use crate::trace::{Loaded, Record};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("{path}: {why}")]
    Draw { path: String, why: String },
    #[error("{0}: {1}")]
    Dir(String, #[source] std::io::Error),
}

const SIZE: (u32, u32) = (1000, 560);
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Runs a drawing closure on a PNG, mapping plotters' errors to ours.
fn png(
    path: &Path,
    draw: impl FnOnce(&DrawingArea<BitMapBackend, plotters::coord::Shift>) -> Result<(), String>,
) -> Result<PathBuf, PlotError> {
    let err = |why: String| PlotError::Draw {
        path: path.display().to_string(),
        why,
    };
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    draw(&root).map_err(err)?;
    root.present().map_err(|e| err(e.to_string()))?;
    Ok(path.to_path_buf())
}

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

type Chart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The series legend, boxed on a translucent white ground.
fn legend<'a, 'b>(chart: &mut Chart<'a, 'b>, pos: SeriesLabelPosition) -> Result<(), String>
where
    'b: 'a,
{
    chart
        .configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(s)
}

/// Grouped bars: one group per category, one bar per series.
fn grouped_bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<PathBuf, PlotError> {
    png(path, |root| {
        let ymax = series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(1.0f64, f64::max)
            * 1.1;
        let n = categories.len().max(1);
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..ymax)
            .map_err(s)?;
        let cats = categories.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 0.01 && i >= 0.0 {
                    cats.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| format!("{v:.0}"))
            .y_desc(y_desc)
            .draw()
            .map_err(s)?;
        let k = series.len().max(1) as f64;
        let w = 0.8 / k;
        for (si, (name, vals)) in series.iter().enumerate() {
            let c = color(si);
            chart
                .draw_series(vals.iter().enumerate().map(|(ci, &v)| {
                    let x0 = ci as f64 - 0.4 + w * si as f64;
                    Rectangle::new([(x0, 0.0), (x0 + w * 0.95, v)], c.filled())
                }))
                .map_err(s)?
                .label(name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// Readahead window histogram: live (when the trace has windows) and per policy.
pub fn windows_png(
    path: &Path,
    live: Option<&BTreeMap<u64, u64>>,
    results: &[Metrics],
) -> Result<PathBuf, PlotError> {
    let mut cols: Vec<(String, BTreeMap<u64, u64>)> = Vec::new();
    if let Some(l) = live {
        cols.push(("live".into(), l.clone()));
    }
    for m in results {
        cols.push((
            m.policy.clone(),
            m.windows.iter().map(|(&w, &n)| (w as u64, n)).collect(),
        ));
    }
    let mut values: Vec<u64> = cols.iter().flat_map(|(_, c)| c.keys().copied()).collect();
    values.sort_unstable();
    values.dedup();
    let categories: Vec<String> = values.iter().map(|v| format!("$retval = {v}")).collect();
    let series: Vec<(String, Vec<f64>)> = cols
        .iter()
        .map(|(n, c)| {
            (
                n.clone(),
                values
                    .iter()
                    .map(|v| *c.get(v).unwrap_or(&0) as f64)
                    .collect(),
            )
        })
        .collect();
    grouped_bars(
        path,
        "readahead window per swap-cache miss",
        "misses",
        &categories,
        &series,
    )
}

/// The policies side by side: pages read, major faults, readahead hits.
pub fn policies_png(path: &Path, results: &[Metrics]) -> Result<PathBuf, PlotError> {
    let categories: Vec<String> = results.iter().map(|m| m.policy.clone()).collect();
    let series = vec![
        (
            "pswpin".to_string(),
            results.iter().map(|m| m.pswpin as f64).collect(),
        ),
        (
            "pgmajfault".to_string(),
            results.iter().map(|m| m.pgmajfault as f64).collect(),
        ),
        (
            "swap_ra_hit".to_string(),
            results.iter().map(|m| m.swap_ra_hit as f64).collect(),
        ),
    ];
    grouped_bars(
        path,
        "replayed policies",
        "pages / faults",
        &categories,
        &series,
    )
}

/// An x/y chart from 0 to (xmax, ymax) with its mesh and axis names drawn.
fn xy_chart<'a, 'b>(
    root: &'a DrawingArea<BitMapBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xmax: f64,
    ymax: f64,
) -> Result<Chart<'a, 'b>, String> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(s)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(s)?;
    Ok(chart)
}

/// Named series of (x, y) points.
type Lines = [(String, Vec<(f64, f64)>)];

/// Line charts of several series over the same x axis.
fn lines_png(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &Lines,
) -> Result<PathBuf, PlotError> {
    let pts = series.iter().flat_map(|(_, v)| v.iter());
    let xmax = pts.clone().map(|p| p.0).fold(1e-3, f64::max);
    let ymax = pts.map(|p| p.1).fold(1.0, f64::max) * 1.1;
    png(path, |root| {
        let mut chart = xy_chart(root, title, x_desc, y_desc, xmax, ymax)?;
        for (i, (name, v)) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(v.clone(), c.stroke_width(2)))
                .map_err(s)?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}

/// Swap-in faults over time (major and minor) in 100 ms bins.
pub fn swapins_png(path: &Path, t: &Loaded) -> Result<PathBuf, PlotError> {
    let t0 = t.header.monotonic_start_ns;
    let bin = 100_000_000u64;
    let (mut major, mut minor): (BTreeMap<u64, u64>, BTreeMap<u64, u64>) = Default::default();
    for r in &t.records {
        if let Record::SwapFault { ts, major: m, .. } = r {
            let b = ts.saturating_sub(t0) / bin;
            *if *m { &mut major } else { &mut minor }
                .entry(b)
                .or_default() += 1;
        }
    }
    let last = major.keys().chain(minor.keys()).max().copied().unwrap_or(1) + 1;
    let series: Vec<(String, Vec<(f64, f64)>)> = [("major", &major), ("minor", &minor)]
        .into_iter()
        .map(|(name, m)| {
            let pts = (0..last)
                .map(|b| (b as f64 / 10.0, *m.get(&b).unwrap_or(&0) as f64))
                .collect();
            (name.to_string(), pts)
        })
        .collect();
    lines_png(
        path,
        "swap-in faults per 100 ms",
        "seconds since recording started",
        "faults",
        &series,
    )
}

/// zswap replayed per policy: the pool's size over time (with the live
/// pool, when the trace sampled it) and the swap-ins that went to disk.
pub fn zswap_png(
    dir: &Path,
    t: &Loaded,
    results: &[crate::replay::zswap::ZswapMetrics],
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir(dir.display().to_string(), e))?;
    let t0 = t.header.monotonic_start_ns;
    let mut pool: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut disk: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    if let Some(f) = t.footer.as_ref().filter(|f| !f.zswap_pool.is_empty()) {
        let pts = f
            .zswap_pool
            .iter()
            .map(|p| {
                (
                    p.ts.saturating_sub(t0) as f64 / 1e9,
                    (p.pool_kib / 4) as f64,
                )
            })
            .collect();
        pool.push(("live (system-wide)".into(), pts));
    }
    // Live disk reads on the replay's time buckets: zswap_load() misses
    // (exact probes), else the pages faults read by I/O.
    if let Some(grid) = results.first().map(|m| &m.series).filter(|g| !g.is_empty()) {
        let mut bins = vec![0f64; grid.len()];
        let exact = t
            .records
            .iter()
            .any(|r| matches!(r, Record::ZswapOp { .. }));
        for r in &t.records {
            let (ts, n) = match *r {
                Record::ZswapOp {
                    ts,
                    load: true,
                    ok: false,
                    ..
                } => (ts, 1),
                Record::SwapFault { ts, pages_read, .. } if !exact => (ts, pages_read),
                _ => continue,
            };
            let x = ts.saturating_sub(t0) as f64 / 1e9;
            let i = grid.partition_point(|g| g.0 < x).min(grid.len() - 1);
            bins[i] += n as f64;
        }
        let pts = grid.iter().zip(bins).map(|(g, n)| (g.0, n)).collect();
        disk.push(("live".to_string(), pts));
    }
    for m in results {
        pool.push((
            m.policy.clone(),
            m.series.iter().map(|r| (r.0, r.1 as f64)).collect(),
        ));
        disk.push((
            m.policy.clone(),
            m.series.iter().map(|r| (r.0, r.2 as f64)).collect(),
        ));
    }
    Ok(vec![
        lines_png(
            &dir.join("zswap-pool.png"),
            "zswap pool size (compressed)",
            "seconds since recording started",
            "pages",
            &pool,
        )?,
        lines_png(
            &dir.join("zswap-swapins.png"),
            "swap-ins read from disk (not found in zswap)",
            "seconds since recording started",
            "pages per interval",
            &disk,
        )?,
    ])
}

/// Time × swap offset of every swap-in fault (major dark, minor light).
pub fn heatmap_png(path: &Path, t: &Loaded) -> Result<PathBuf, PlotError> {
    let t0 = t.header.monotonic_start_ns;
    let pts: Vec<(f64, f64, bool)> = t
        .records
        .iter()
        .filter_map(|r| match r {
            Record::SwapFault {
                ts,
                entry: Some(e),
                major,
                ..
            } => Some((ts.saturating_sub(t0) as f64 / 1e9, e.offset as f64, *major)),
            _ => None,
        })
        .collect();
    // At most 200k points: every k-th.
    let step = (pts.len() / 200_000).max(1);
    let xmax = pts.iter().map(|p| p.0).fold(1e-3, f64::max) * 1.02;
    let ymax = pts.iter().map(|p| p.1).fold(1.0, f64::max) * 1.02;
    png(path, |root| {
        let mut chart = xy_chart(
            root,
            "swap-in faults: time × swap offset",
            "seconds since recording started",
            "swap offset",
            xmax,
            ymax,
        )?;
        for (i, want) in [(1usize, false), (0usize, true)] {
            let c = color(i);
            chart
                .draw_series(
                    pts.iter()
                        .step_by(step)
                        .filter(|p| p.2 == want)
                        .map(|&(x, y, _)| Circle::new((x, y), 1, c.filled())),
                )
                .map_err(s)?
                .label(if want { "major" } else { "minor" })
                .legend(move |(x, y)| Circle::new((x + 6, y), 4, c.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::MiddleRight)
    })
}

/// All charts into `dir`; returns the files written.
pub fn plot_all(
    t: &Loaded,
    live_windows: Option<&BTreeMap<u64, u64>>,
    results: &[Metrics],
    dir: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir(dir.display().to_string(), e))?;
    let mut out = vec![
        windows_png(&dir.join("windows.png"), live_windows, results)?,
        swapins_png(&dir.join("swapins.png"), t)?,
        heatmap_png(&dir.join("heatmap.png"), t)?,
    ];
    if !results.is_empty() {
        out.push(policies_png(&dir.join("policies.png"), results)?);
    }
    Ok(out)
}

/// A/B charts of `compare`: the counters side by side, the window
/// histograms, and swap-in faults over time for both.
pub fn compare_png(
    dir: &Path,
    a: &Loaded,
    b: &Loaded,
    c: &super::Comparison,
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir(dir.display().to_string(), e))?;
    let (la, lb) = &c.labels;
    let counters: Vec<&super::compare::Row> = c
        .rows
        .iter()
        .filter(|r| r.metric != "runtime" && (r.a, r.b) != (0.0, 0.0))
        .collect();
    let mut out = vec![grouped_bars(
        &dir.join("compare-counters.png"),
        "counters",
        "count",
        &counters
            .iter()
            .map(|r| r.metric.clone())
            .collect::<Vec<_>>(),
        &[
            (la.clone(), counters.iter().map(|r| r.a).collect()),
            (lb.clone(), counters.iter().map(|r| r.b).collect()),
        ],
    )?];
    if let Some((wa, wb)) = &c.windows {
        let mut keys: Vec<u64> = wa.keys().chain(wb.keys()).copied().collect();
        keys.sort_unstable();
        keys.dedup();
        let col = |w: &BTreeMap<u64, u64>| {
            keys.iter()
                .map(|k| *w.get(k).unwrap_or(&0) as f64)
                .collect()
        };
        out.push(grouped_bars(
            &dir.join("compare-windows.png"),
            "readahead window per swap-cache miss",
            "misses",
            &keys
                .iter()
                .map(|k| format!("$retval = {k}"))
                .collect::<Vec<_>>(),
            &[(la.clone(), col(wa)), (lb.clone(), col(wb))],
        )?);
    }
    let per_second = |t: &Loaded| {
        let t0 = t.header.monotonic_start_ns;
        let mut bins: BTreeMap<u64, u64> = BTreeMap::new();
        for r in &t.records {
            if let Record::SwapFault { ts, .. } = r {
                *bins.entry(ts.saturating_sub(t0) / 100_000_000).or_default() += 1;
            }
        }
        let last = bins.keys().max().copied().unwrap_or(0);
        (0..=last)
            .map(|b| (b as f64 / 10.0, *bins.get(&b).unwrap_or(&0) as f64))
            .collect::<Vec<_>>()
    };
    out.push(lines_png(
        &dir.join("compare-swapins.png"),
        "swap-in faults per 100 ms",
        "seconds since recording started",
        "faults",
        &[(la.clone(), per_second(a)), (lb.clone(), per_second(b))],
    )?);
    Ok(out)
}
