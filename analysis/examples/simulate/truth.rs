//! The scenarios: what sampling truly costs the loop in each, and the
//! noise around it. Everything the sweep writer draws comes from here.

/// One simulated host: the true cost of a sample and the noise.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    /// One sentence for the table's legend.
    pub about: &'static str,
    /// Direct cost of a sample: the excess of its gap, ns.
    pub direct_ns: f64,
    /// After-effect of an interruption (sample or background): the time
    /// the loop loses to slow chunks right after the gap, ns, decaying
    /// with [`AFTER_TAU_NS`].
    pub after_ns: f64,
    /// Cost per sample outside every gap, ns (a slower speed mode between
    /// interruptions), applied to the whole loop of a sampled run: the
    /// off phases of a paired or split run too.
    pub outside_ns: f64,
    /// Per-run relative noise (sd) of the sample's cost.
    pub cost_noise: f64,
    /// Between-run relative noise (sd) of the loop's speed.
    pub speed_noise: f64,
    /// Per-phase relative noise (sd) of the loop's speed within a run.
    pub phase_noise: f64,
    /// Another process on the measured CPU: each run's speed times
    /// U(lo, 1), its interruptions (not samples) and speed modes.
    pub hog: Option<Hog>,
    /// A requested rate the kernel throttles and the rate it delivers.
    pub throttle: Option<(u64, f64)>,
    /// The sampled rates of the sweep, Hz.
    pub rates: &'static [u64],
}

/// The busy host's other process.
#[derive(Debug, Clone, Copy)]
pub struct Hog {
    /// Each run's speed is multiplied by U(`run_factor_lo`, 1).
    pub run_factor_lo: f64,
    /// Its interruptions per second (Poisson), in every run.
    pub per_s: f64,
    /// Mean excess of one, ns (exponential, capped at `max_ns`).
    pub mean_ns: f64,
    pub max_ns: f64,
    /// Speed modes: starts per second of sweep time (Poisson), each lasting
    /// U(`mode_min_s`, `mode_max_s`), the loop at `mode_factor` of its
    /// speed meanwhile (across run and phase boundaries).
    pub modes_per_s: f64,
    pub mode_min_s: f64,
    pub mode_max_s: f64,
    pub mode_factor: f64,
}

/// Time constant of the after-effect's decay after a gap, ns.
pub const AFTER_TAU_NS: f64 = 1_000.0;

/// The default sweep's rates.
const RATES: &[u64] = &[100, 500, 2000, 4000, 20_000];
/// With the rate the kernel throttles.
const RATES_THROTTLED: &[u64] = &[100, 500, 2000, 4000, 20_000, 100_000];

const QUIET: Scenario = Scenario {
    name: "quiet",
    about: "c = 12 us direct + 3 us after-effect, no outside part; cost noise 5 % per run, \
            loop speed 1 % between runs, 0.3 % between phases",
    direct_ns: 12_000.0,
    after_ns: 3_000.0,
    outside_ns: 0.0,
    cost_noise: 0.05,
    speed_noise: 0.01,
    phase_noise: 0.003,
    hog: None,
    throttle: None,
    rates: RATES,
};

/// The scenarios, in table order.
pub fn all() -> Vec<Scenario> {
    vec![
        QUIET,
        Scenario {
            name: "busy",
            about: "quiet's cost and no outside part, on a host at ~60 % load: each run's speed x \
                    U(0.6, 1), 5 % between phases, 60 hog interruptions/s (exponential, mean \
                    250 us, at most 3 ms) in every run, 0 Hz included, and speed modes (x0.5 for \
                    U(1, 4) s, 0.15 starts/s) across run and phase boundaries",
            phase_noise: 0.05,
            hog: Some(Hog {
                run_factor_lo: 0.6,
                per_s: 60.0,
                mean_ns: 250_000.0,
                max_ns: 3_000_000.0,
                modes_per_s: 0.15,
                mode_min_s: 1.0,
                mode_max_s: 4.0,
                mode_factor: 0.5,
            }),
            ..QUIET
        },
        Scenario {
            name: "xeon",
            about: "c = 12 us (9.6 direct + 2.4 after-effect) and a true outside part o = 20 us \
                    per sample over the whole sampled run (off phases too); loop speed 10 % \
                    between runs",
            direct_ns: 9_600.0,
            after_ns: 2_400.0,
            outside_ns: 20_000.0,
            speed_noise: 0.10,
            ..QUIET
        },
        Scenario {
            name: "throttled",
            about: "quiet, plus 100 kHz requested: the kernel throttles it to ~30 kHz \
                    (runs.csv throttled > 0, perf_event_max_sample_rate lowered to 30000)",
            throttle: Some((100_000, 30_000.0)),
            rates: RATES_THROTTLED,
            ..QUIET
        },
    ]
}

impl Scenario {
    /// True cost per sample in and right after the gaps, ns (c).
    pub fn c_ns(&self) -> f64 {
        self.direct_ns + self.after_ns
    }

    /// The rate the kernel delivers at a request of `freq_hz` (its mean).
    pub fn achieved_hz(&self, freq_hz: u64) -> f64 {
        match self.throttle {
            Some((req, got)) if freq_hz >= req => got,
            _ => freq_hz as f64,
        }
    }

    /// True loss fraction at a requested rate: min(a (c + o) 1e-9, 0.99).
    pub fn true_loss(&self, freq_hz: u64) -> f64 {
        (self.achieved_hz(freq_hz) * (self.c_ns() + self.outside_ns) * 1e-9).min(0.99)
    }

    /// The true highest rate within `budget_pct` %, Hz (no saturation).
    pub fn true_max_hz(&self, budget_pct: f64) -> f64 {
        budget_pct / 100.0 / ((self.c_ns() + self.outside_ns) * 1e-9)
    }

    /// Whether the truth holds a cost outside the gaps (a charge of one is
    /// then right, and its rate is the power).
    pub fn has_outside(&self) -> bool {
        self.outside_ns > 0.0
    }

    /// The parameters in one line for the output.
    pub fn legend(&self) -> String {
        format!(
            "`{}`: {} (c = {:.1} us, o = {:.1} us)",
            self.name,
            self.about,
            self.c_ns() / 1e3,
            self.outside_ns / 1e3
        )
    }
}
