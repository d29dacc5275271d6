//! `swaptrace plot`: PNG charts of a trace and of its replayed policies.

use crate::replay::Metrics;
use crate::trace::output::{OutputFile, OutputPolicy};
use crate::trace::{Loaded, Record};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod text;
use super::timeline::{self as series, swapin_ts, Timeline, TICKS};
use text::Glyphs;

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("{path}: {why}")]
    Draw { path: String, why: String },
    #[error("{0}: {1}")]
    Dir(String, #[source] std::io::Error),
}

const SIZE: (u32, u32) = (1000, 560);
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The line under every chart's title: the trace, its kernel, the memory
/// limit replay uses and the readahead knobs it was recorded with.
pub fn caption(t: &Loaded, file: &str) -> String {
    let h = &t.header;
    let limit = match h.memory_limit_bytes {
        Some(b) => format!("memory limit {} MiB", b >> 20),
        None => format!("no memory limit (host {} MiB)", h.mem_total_kib >> 10),
    };
    let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
    let file = if file.is_empty() {
        String::new()
    } else {
        format!("{file} · ")
    };
    format!(
        "{file}kernel {} · {limit} · page-cluster {} · vma_ra_enabled {}",
        h.kernel_release,
        opt(h.readahead.page_cluster.map(|v| v.to_string())),
        opt(h.readahead.vma_ra_enabled.map(|v| v.to_string())),
    )
}

type Area<'b> = DrawingArea<Glyphs<BitMapBackend<'b>>, plotters::coord::Shift>;

/// Runs a drawing closure on a PNG under a title and a caption line,
/// mapping plotters' errors to ours.
fn png(
    path: &Path,
    title: &str,
    caption: &str,
    draw: impl FnOnce(&Area) -> Result<(), String>,
) -> Result<PathBuf, PlotError> {
    let err = |why: String| PlotError::Draw {
        path: path.display().to_string(),
        why,
    };
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = Glyphs(BitMapBackend::with_buffer(&mut rgb, SIZE)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let lines: Vec<&str> = caption.lines().collect();
        let (top, body) = root.split_vertically(44 + 18 * lines.len() as u32);
        let mid = SIZE.0 as i32 / 2;
        let at = plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Top,
        );
        top.draw_text(
            title,
            &("sans-serif", 22).into_font().color(&BLACK).pos(at),
            (mid, 6),
        )
        .map_err(|e| err(e.to_string()))?;
        let grey = ("sans-serif", 14).into_font().color(&RGBColor(90, 90, 90));
        for (i, line) in lines.iter().enumerate() {
            top.draw_text(line, &grey.pos(at), (mid, 36 + 18 * i as i32))
                .map_err(|e| err(e.to_string()))?;
        }
        draw(&body).map_err(err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    write_png(path, &rgb).map_err(err)?;
    Ok(path.to_path_buf())
}

/// The pixels as a PNG, through the output helper: a temporary file
/// renamed into place, never through a symlink as root.
fn write_png(path: &Path, rgb: &[u8]) -> Result<(), String> {
    use image::ImageEncoder;
    let out =
        OutputFile::create(path, &OutputPolicy::replace(), 0o644).map_err(|e| e.to_string())?;
    let mut w = std::io::BufWriter::new(out.file());
    image::codecs::png::PngEncoder::new(&mut w)
        .write_image(rgb, SIZE.0, SIZE.1, image::ColorType::Rgb8)
        .map_err(|e| e.to_string())?;
    std::io::Write::flush(&mut w).map_err(|e| e.to_string())?;
    drop(w);
    out.commit().map_err(|e| e.to_string())
}

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

type Chart<'a, 'b> =
    ChartContext<'a, Glyphs<BitMapBackend<'b>>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The series legend, boxed on a white ground.
fn legend<'a, 'b>(chart: &mut Chart<'a, 'b>, pos: SeriesLabelPosition) -> Result<(), String>
where
    'b: 'a,
{
    chart
        .configure_series_labels()
        .position(pos)
        .label_font(("sans-serif", 15))
        .margin(10)
        .background_style(WHITE.mix(0.92))
        .border_style(BLACK)
        .draw()
        .map_err(s)
}

/// Where the legend goes: the plot corner (a quarter of the width by a
/// third of the height) holding the fewest points. When every corner holds
/// some, the y range is stretched so the top third is empty and the legend
/// goes there. Returns the corner and the y maximum to use.
pub(crate) fn legend_place(pts: &[(f64, f64)], xmax: f64, ymax: f64) -> (SeriesLabelPosition, f64) {
    use SeriesLabelPosition::*;
    let (x_lo, x_hi) = (xmax * 0.35, xmax * 0.65);
    let (y_lo, y_hi) = (ymax * 0.33, ymax * 0.67);
    let mut best: Option<(SeriesLabelPosition, usize)> = None;
    for (pos, right, upper) in [
        (UpperRight, true, true),
        (UpperLeft, false, true),
        (LowerRight, true, false),
        (LowerLeft, false, false),
    ] {
        let n = pts
            .iter()
            .filter(|p| {
                let in_x = if right { p.0 >= x_hi } else { p.0 <= x_lo };
                let in_y = if upper { p.1 >= y_hi } else { p.1 <= y_lo };
                in_x && in_y
            })
            .count();
        if best.as_ref().is_none_or(|b| n < b.1) {
            best = Some((pos, n));
        }
    }
    match best {
        Some((pos, 0)) => (pos, ymax),
        _ => (UpperRight, ymax * 1.5),
    }
}

/// Grouped bars: one group per category, one bar per series. The y range
/// leaves the top free for the legend.
#[allow(clippy::too_many_arguments)]
fn grouped_bars(
    path: &Path,
    title: &str,
    caption: &str,
    x_desc: &str,
    y_desc: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<PathBuf, PlotError> {
    png(path, title, caption, |root| {
        let top = series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(1.0f64, f64::max);
        // The legend box: one 20 px row per series on a ~400 px plot.
        let frac = ((series.len() as f64 * 20.0 + 30.0) / 400.0).min(0.6);
        let ymax = top * 1.05 / (1.0 - frac);
        let n = categories.len().max(1);
        // Names wider than their slot (~7 px a character) are staggered
        // over as many rows as they need, with room below the axis.
        let longest = categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0);
        let slot = ((SIZE.0 as usize - 120) / n).max(1);
        let rows = (longest * 7).div_ceil(slot).clamp(1, 4);
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(32 + 18 * rows as u32)
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
                if rows == 1 && (x - i).abs() < 0.01 && i >= 0.0 {
                    cats.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(s)?;
        if rows > 1 {
            let base = root.get_base_pixel();
            let at = plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            );
            for (i, c) in categories.iter().enumerate() {
                let (x, y) = chart.backend_coord(&(i as f64, 0.0));
                let y = y + 6 + 18 * (i % rows) as i32;
                root.draw_text(
                    c,
                    &("sans-serif", 14).into_font().color(&BLACK).pos(at),
                    (x - base.0, y - base.1),
                )
                .map_err(s)?;
            }
        }
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

/// Readahead window histogram: live (when the trace has windows, labelled
/// by where they come from) and per policy. Policy `none` reads one page per miss, so its single bar would
/// dwarf every other: it is left out (and the chart says so) unless it is
/// the only policy.
pub fn windows_png(
    path: &Path,
    caption: &str,
    live: Option<(&str, &BTreeMap<u64, u64>)>,
    results: &[Metrics],
) -> Result<PathBuf, PlotError> {
    let mut cols: Vec<(String, BTreeMap<u64, u64>)> = Vec::new();
    if let Some((name, l)) = live {
        cols.push((name.to_string(), l.clone()));
    }
    let drop_none = results.len() > 1 || live.is_some();
    let mut title = "readahead window per swap-cache miss".to_string();
    for m in results {
        if drop_none && m.policy == "none" {
            title.push_str(" (policy none left out: every miss reads 1 page)");
            continue;
        }
        cols.push((
            format!("{} (replayed)", m.policy),
            m.windows.iter().map(|(&w, &n)| (w as u64, n)).collect(),
        ));
    }
    let mut values: Vec<u64> = cols.iter().flat_map(|(_, c)| c.keys().copied()).collect();
    values.sort_unstable();
    values.dedup();
    let categories: Vec<String> = values.iter().map(|v| v.to_string()).collect();
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
        &title,
        caption,
        "readahead window (pages), swapin_nr_pages() return value",
        "misses",
        &categories,
        &series,
    )
}

/// The policies side by side: pages read, major faults, readahead hits.
pub fn policies_png(path: &Path, caption: &str, results: &[Metrics]) -> Result<PathBuf, PlotError> {
    let categories: Vec<String> = results.iter().map(|m| m.policy.clone()).collect();
    let series = vec![
        (
            "pswpin (pages read)".to_string(),
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
        caption,
        "policy",
        "pages / faults",
        &categories,
        &series,
    )
}

/// An x/y chart from 0 to (xmax, ymax) with its mesh and axis names drawn.
fn xy_chart<'a, 'b>(
    root: &'a Area<'b>,
    x_desc: &str,
    y_desc: &str,
    xmax: f64,
    ymax: f64,
) -> Result<Chart<'a, 'b>, String> {
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(s)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(s)?;
    Ok(chart)
}

/// Named series of (x, y) points.
type Lines = [(String, Vec<(f64, f64)>)];

/// Line charts of several series over the same x axis, from 0 to at
/// least `xmin_end`.
fn lines_png(
    path: &Path,
    title: &str,
    caption: &str,
    axes: (&str, &str),
    xmin_end: f64,
    series: &Lines,
) -> Result<PathBuf, PlotError> {
    let all: Vec<(f64, f64)> = series.iter().flat_map(|(_, v)| v.iter().copied()).collect();
    let xmax = all.iter().map(|p| p.0).fold(xmin_end.max(1e-3), f64::max);
    let ymax = all.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let (pos, ymax) = legend_place(&all, xmax, ymax);
    png(path, title, caption, |root| {
        let mut chart = xy_chart(root, axes.0, axes.1, xmax, ymax)?;
        for (i, (name, v)) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(v.clone(), c.stroke_width(2)))
                .map_err(s)?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
        }
        legend(&mut chart, pos)
    })
}

/// Seconds from the start of the recording to its end: the footer's end
/// time, or the last fault or swap read when the trace was cut short.
pub(crate) fn span_s(t: &Loaded) -> f64 {
    let last = t.records.iter().filter_map(swapin_ts).max();
    let end = t.footer.as_ref().map(|f| f.monotonic_end_ns);
    series::span_s(t.header.monotonic_start_ns, last, end)
}

/// The name of the pages read outside faults: swapoff's, when the trace
/// saw a swapoff call.
fn outside_reads_name(swapoff: bool) -> &'static str {
    if swapoff {
        "swapoff reads (pages)"
    } else {
        "reads outside faults (pages)"
    }
}

/// Swap-in faults over time (major and minor) and the pages read outside
/// faults (swapoff), in 100 ms bins (wider past [`super::BINS_MAX`] of them) over
/// the whole recording.
pub fn swapins_png(path: &Path, caption: &str, tl: &Timeline) -> Result<PathBuf, PlotError> {
    let names = [
        "major faults",
        "minor faults (swap-cache hits)",
        outside_reads_name(tl.swapoff),
    ];
    let series: Vec<(String, Vec<(f64, f64)>)> = names
        .iter()
        .enumerate()
        .filter(|(i, n)| !tl.bins.series[*i].is_empty() || !n.contains("reads"))
        .map(|(i, name)| (name.to_string(), tl.bins.points(&[i], tl.span_s())))
        .collect();
    lines_png(
        path,
        &format!("swap-ins per {} (live)", tl.bins.width_text()),
        caption,
        ("seconds since recording started", "faults / pages"),
        tl.span_s(),
        &series,
    )
}

/// zswap replayed per policy: the pool's size over time (with the live
/// pool, when the trace sampled it) and the swap-ins that went to disk.
pub fn zswap_png(
    dir: &Path,
    file: &str,
    t: &Loaded,
    results: &[crate::replay::zswap::ZswapMetrics],
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir(dir.display().to_string(), e))?;
    let t0 = t.header.monotonic_start_ns;
    let cap = caption(t, file);
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
            &cap,
            ("seconds since recording started", "pages"),
            span_s(t),
            &pool,
        )?,
        lines_png(
            &dir.join("zswap-swapins.png"),
            "swap-ins read from disk (not found in zswap)",
            &cap,
            ("seconds since recording started", "pages per interval"),
            span_s(t),
            &disk,
        )?,
    ])
}

/// Time × swap offset of every swap-in fault: majors drawn first, minors
/// (swap-cache hits) over them so neither hides the other; swapoff's reads,
/// which carry no offset, as ticks along the top edge.
pub fn heatmap_png(path: &Path, caption: &str, tl: &Timeline) -> Result<PathBuf, PlotError> {
    // A sample of the faults and reads (all of them up to twice the points
    // drawn), drawn every k-th up to POINTS / TICKS.
    let pts = &tl.points.items;
    let reads = &tl.reads.items;
    let step = (pts.len() / series::POINTS).max(1);
    let xmax = pts
        .iter()
        .map(|p| p.0)
        .chain(reads.iter().copied())
        .fold(tl.span_s().max(1e-3), f64::max)
        * 1.02;
    let ymax = tl.offset_max * 1.05;
    // The legend avoids the faults and the ticks along the top edge.
    let xy: Vec<(f64, f64)> = pts
        .iter()
        .map(|p| (p.0, p.1))
        .chain(reads.iter().map(|&x| (x, ymax)))
        .collect();
    let (pos, ymax) = legend_place(&xy, xmax, ymax);
    let n_major = tl.majors;
    let n_minor = tl.points.seen() - n_major;
    let n_reads = tl.reads.seen();
    png(
        path,
        "swap-in faults: time × swap offset (live)",
        caption,
        |root| {
            let mut chart = xy_chart(
                root,
                "seconds since recording started",
                "swap offset",
                xmax,
                ymax,
            )?;
            for (i, want, r, label) in [
                (0usize, true, 2u32, format!("major ({n_major})")),
                (
                    1usize,
                    false,
                    1u32,
                    format!("minor, swap-cache hit ({n_minor})"),
                ),
            ] {
                let c = color(i);
                chart
                    .draw_series(
                        pts.iter()
                            .step_by(step)
                            .filter(|p| p.2 == want)
                            .map(|&(x, y, _)| Circle::new((x, y), r, c.mix(0.6).filled())),
                    )
                    .map_err(s)?
                    .label(label)
                    .legend(move |(x, y)| Circle::new((x + 6, y), 4, c.filled()));
            }
            if !reads.is_empty() {
                let c = color(3);
                let tick = ymax * 0.03;
                let rstep = (reads.len() / TICKS).max(1);
                chart
                    .draw_series(
                        reads.iter().step_by(rstep).map(|&x| {
                            PathElement::new(vec![(x, ymax), (x, ymax - tick)], c.mix(0.5))
                        }),
                    )
                    .map_err(s)?
                    .label(format!(
                        "{} ({n_reads}), time only",
                        outside_reads_name(tl.swapoff).trim_end_matches(" (pages)"),
                    ))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x + 6, y - 5), (x + 6, y + 5)], c)
                    });
            }
            legend(&mut chart, pos)
        },
    )
}

/// All charts into `dir`; returns the files written. `file` names the trace
/// in every chart's caption.
pub fn plot_all(
    t: &Loaded,
    tl: &Timeline,
    file: &str,
    live_windows: Option<(&str, &BTreeMap<u64, u64>)>,
    results: &[Metrics],
    dir: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir(dir.display().to_string(), e))?;
    let cap = caption(t, file);
    let mut out = vec![
        windows_png(&dir.join("windows.png"), &cap, live_windows, results)?,
        swapins_png(&dir.join("swapins.png"), &cap, tl)?,
        heatmap_png(&dir.join("heatmap.png"), &cap, tl)?,
    ];
    if !results.is_empty() {
        out.push(policies_png(&dir.join("policies.png"), &cap, results)?);
    }
    Ok(out)
}

/// A/B charts of `compare`: the counters side by side, the window
/// histograms, and swap-in faults over time for both (each trace with its
/// [`Timeline`]).
pub fn compare_png(
    dir: &Path,
    (a, ta): (&Loaded, &Timeline),
    (b, tb): (&Loaded, &Timeline),
    c: &super::Comparison,
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir(dir.display().to_string(), e))?;
    let (la, lb) = &c.labels;
    let cap = format!("{la}: {}\n{lb}: {}", caption(a, ""), caption(b, ""));
    let counters: Vec<&super::compare::Row> = c
        .rows
        .iter()
        .filter(|r| r.metric != "runtime" && (r.a, r.b) != (0.0, 0.0))
        .collect();
    let mut out = vec![grouped_bars(
        &dir.join("compare-counters.png"),
        "counters",
        &cap,
        "counter",
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
            &cap,
            "readahead window (pages)",
            "misses",
            &keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
            &[(la.clone(), col(wa)), (lb.clone(), col(wb))],
        )?);
    }
    // Both on the wider bins.
    let (mut ba, mut bb) = (ta.bins.clone(), tb.bins.clone());
    let w = ba.width_ns.max(bb.width_ns);
    ba.widen_to(w);
    bb.widen_to(w);
    out.push(lines_png(
        &dir.join("compare-swapins.png"),
        &format!("swap-in faults per {}", ba.width_text()),
        &cap,
        ("seconds since recording started", "faults"),
        ta.span_s().max(tb.span_s()),
        &[
            (la.clone(), ba.points(&[0, 1], ta.span_s())),
            (lb.clone(), bb.points(&[0, 1], tb.span_s())),
        ],
    )?);
    Ok(out)
}

#[cfg(test)]
mod tests;
