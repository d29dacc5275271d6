//! One policy's replay over the events: the time series of the pool, and
//! what runs the shrinker (recorded writebacks, reclaims, or every N
//! swap-outs) over the pool model of `sim`.

use super::sim::Sim;
use super::{ZswapEvent, ZswapInput, ZswapMetrics, ZswapParams, ZswapPolicy};

/// Time buckets over `[t0, t0 + span]`.
struct Series {
    t0: u64,
    span: u64,
    rows: Vec<(f64, u64, u64, u64)>,
    last: usize,
}

impl Series {
    fn new(t0: u64, t1: u64, buckets: usize) -> Series {
        let span = t1.saturating_sub(t0);
        let n = if span == 0 { 1 } else { buckets.max(1) };
        let rows = (0..n)
            .map(|b| {
                let t = (b as u128 * (span as u128 + 1) / n as u128) as f64 / 1e9;
                (t, 0, 0, 0)
            })
            .collect();
        Series {
            t0,
            span,
            rows,
            last: 0,
        }
    }

    fn bucket(&self, now: u64) -> usize {
        let off = now.saturating_sub(self.t0).min(self.span) as u128;
        let b = off * self.rows.len() as u128 / (self.span as u128 + 1);
        (b as usize).min(self.rows.len() - 1)
    }

    /// Moves to `now`'s bucket, carrying `pool` through skipped ones.
    fn advance(&mut self, now: u64, pool: u64) -> usize {
        let b = self.bucket(now);
        while self.last < b {
            self.rows[self.last].1 = pool;
            self.last += 1;
        }
        b
    }
}

/// What a replay needs of the whole trace before its first event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Span {
    /// [`ZswapInput::memory_figure`].
    pub(super) memory_figure: u64,
    pub(super) has_reclaim: bool,
    pub(super) has_writebacks: bool,
    pub(super) kernel_policy: Option<ZswapPolicy>,
    /// The recording's zswap stored pages: its refusals were exceptions.
    pub(super) stored: bool,
    /// The earliest and latest event (0, 0 without events).
    pub(super) t0: u64,
    pub(super) t1: u64,
    /// [`ZswapInput::resident_pages`].
    pub(super) resident_pages: Option<u64>,
}

impl Span {
    pub(super) fn of(input: &ZswapInput) -> Span {
        let ts = || {
            input
                .events
                .iter()
                .filter(|e| !e.is_writeback())
                .map(|e| e.ts())
        };
        Span {
            memory_figure: input.memory_figure(),
            has_reclaim: input.has_reclaim,
            has_writebacks: input.has_writebacks,
            kernel_policy: input.kernel_policy,
            stored: input.live.zswap_stores > 0,
            resident_pages: input.resident_pages,
            t0: ts().min().unwrap_or(0),
            t1: ts().max().unwrap_or(0),
        }
    }
}

/// What runs the dynamic shrinker in a replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Pressure {
    /// One `do_shrink_slab()` per N swap-out pages (no reclaim recorded).
    Every(u64),
    /// One `do_shrink_slab()` per recorded reclaim.
    Reclaim,
    /// The recorded writebacks of the kernel's policy (see [`Replayer::paced`]).
    Writebacks(ZswapPolicy),
}

impl Pressure {
    fn of(span: &Span, p: &ZswapParams) -> Pressure {
        let open = if span.has_reclaim {
            Pressure::Reclaim
        } else {
            Pressure::Every(p.shrinker_interval.max(1))
        };
        match span.kernel_policy {
            Some(k) if k.dynamic() && span.has_writebacks && p.follow_writebacks => {
                Pressure::Writebacks(k)
            }
            _ => open,
        }
    }

    pub(super) fn describe(self) -> String {
        match self {
            Pressure::Every(n) => format!("every {n} swap-outs"),
            Pressure::Reclaim => "reclaim".to_string(),
            Pressure::Writebacks(k) => format!("recorded writebacks ({k})"),
        }
    }
}

/// One policy's replay, fed an event at a time ([`step`](Self::step)).
pub(super) struct Replayer {
    sim: Sim,
    /// The recording kernel's policy, replayed beside `sim` when that is
    /// another: how far its shrinker walked for the recorded writebacks.
    kernel: Option<Box<Sim>>,
    pressure: Pressure,
    /// Entries `sim`'s shrinker owes the kernel's walk, in part.
    budget: f64,
    series: Series,
    span: Span,
    now: u64,
    pool: u64,
    area: f64,
    outs: u64,
}

impl Replayer {
    pub(super) fn new(span: Span, policy: ZswapPolicy, p: &ZswapParams) -> Replayer {
        let pressure = Pressure::of(&span, p);
        let kernel = match pressure {
            Pressure::Writebacks(k) if k != policy => {
                Some(Box::new(Sim::new(&span, k, p, pressure)))
            }
            _ => None,
        };
        Replayer {
            sim: Sim::new(&span, policy, p, pressure),
            kernel,
            pressure,
            budget: 0.0,
            series: Series::new(span.t0, span.t1, p.buckets),
            span,
            now: span.t0,
            pool: 0,
            area: 0.0,
            outs: 0,
        }
    }

    /// The kernel wrote `nr` entries back. The kernel's policy writes back
    /// as many; another walks as many entries as the kernel's did, scaled
    /// by its freeable count against the kernel's (`do_shrink_slab()`
    /// scans in proportion to `count_objects()`: the same reclaim
    /// priority, this policy's count).
    fn paced(&mut self, nr: u64) {
        let Some(k) = self.kernel.as_deref_mut() else {
            self.sim.write_back_recorded(nr);
            return;
        };
        let (walked, k_freeable) = k.write_back_recorded(nr);
        let share = match k_freeable {
            0 => 1.0,
            f => self.sim.freeable() as f64 / f as f64,
        };
        self.budget += walked as f64 * share;
        let n = self.budget.floor();
        self.budget -= n;
        self.sim.scan(n as u64);
    }

    /// The next event, in trace order.
    pub(super) fn step(&mut self, ev: &ZswapEvent) {
        let ts = ev.ts().max(self.now);
        self.area += self.pool as f64 * (ts - self.now) as f64;
        self.now = ts;
        let b = self.series.advance(self.now, self.pool);
        let dynamic = self.sim.policy.dynamic();
        match (*ev, self.pressure) {
            (ZswapEvent::Out { .. }, Pressure::Every(n)) if dynamic => {
                self.outs += 1;
                if self.outs.is_multiple_of(n) {
                    self.sim.do_shrink_slab();
                }
            }
            (ZswapEvent::Reclaim { begin: true, .. }, Pressure::Reclaim) if dynamic => {
                self.sim.do_shrink_slab()
            }
            (ZswapEvent::Reclaim { begin: true, .. }, Pressure::Writebacks(_)) => {
                // Each reclaim's do_shrink_slab() counts once (6.12
                // consumes nr_disk_swapins there).
                self.sim.m.pressure_episodes += 1;
                self.sim.shrinker_count();
                if let Some(k) = self.kernel.as_deref_mut() {
                    k.shrinker_count();
                }
            }
            (ZswapEvent::Writeback { nr, .. }, Pressure::Writebacks(_)) if dynamic => {
                self.paced(nr.into())
            }
            _ => {}
        }
        self.sim.apply(ev, &mut self.series.rows[b]);
        if let Some(k) = self.kernel.as_deref_mut() {
            k.apply(ev, &mut (0.0, 0, 0, 0));
        }
        self.pool = self.sim.pool_pages();
        self.sim.m.peak_pool_pages = self.sim.m.peak_pool_pages.max(self.pool);
        self.series.rows[b].1 = self.pool;
    }

    /// The metrics, once every event went through [`step`](Self::step).
    pub(super) fn finish(self) -> ZswapMetrics {
        let Replayer {
            sim,
            mut series,
            span: Span { t0, t1, .. },
            pool,
            area,
            ..
        } = self;
        let last = series.rows.len();
        series.advance(t1, pool);
        for r in &mut series.rows[series.last..last] {
            r.1 = pool;
        }
        let mut m = sim.m;
        m.end_pool_pages = pool;
        m.mean_pool_pages = if t1 > t0 {
            area / (t1 - t0) as f64
        } else {
            pool as f64
        };
        m.series = series.rows;
        m
    }
}

/// One policy over a whole input: [`Replayer`] fed its events.
pub(super) fn replay_one(input: &ZswapInput, policy: ZswapPolicy, p: &ZswapParams) -> ZswapMetrics {
    let mut r = Replayer::new(Span::of(input), policy, p);
    for ev in &input.events {
        r.step(ev);
    }
    r.finish()
}
