//! Every `perf_event_attr` field write of the driver, in one place.
//!
//! [`Attr`] is a builder whose setters mirror the fields of
//! `struct perf_event_attr` (perf_event_open(2)) one to one.

use perf_event_open_sys::bindings as b;

pub use b::perf_event_attr as RawAttr;

/// `sample_type` bits used by the driver.
pub mod sample {
    use perf_event_open_sys::bindings as b;
    /// PERF_SAMPLE_IP.
    pub const IP: u64 = b::PERF_SAMPLE_IP as u64;
    /// PERF_SAMPLE_TID.
    pub const TID: u64 = b::PERF_SAMPLE_TID as u64;
    /// PERF_SAMPLE_TIME.
    pub const TIME: u64 = b::PERF_SAMPLE_TIME as u64;
    /// PERF_SAMPLE_ID.
    pub const ID: u64 = b::PERF_SAMPLE_ID as u64;
    /// PERF_SAMPLE_STREAM_ID.
    pub const STREAM_ID: u64 = b::PERF_SAMPLE_STREAM_ID as u64;
    /// PERF_SAMPLE_CPU.
    pub const CPU: u64 = b::PERF_SAMPLE_CPU as u64;
    /// PERF_SAMPLE_PERIOD.
    pub const PERIOD: u64 = b::PERF_SAMPLE_PERIOD as u64;
    /// PERF_SAMPLE_RAW.
    pub const RAW: u64 = b::PERF_SAMPLE_RAW as u64;
    /// PERF_SAMPLE_IDENTIFIER.
    pub const IDENTIFIER: u64 = b::PERF_SAMPLE_IDENTIFIER as u64;
    /// PERF_SAMPLE_CALLCHAIN.
    pub const CALLCHAIN: u64 = b::PERF_SAMPLE_CALLCHAIN as u64;
    /// PERF_SAMPLE_BRANCH_STACK.
    pub const BRANCH_STACK: u64 = b::PERF_SAMPLE_BRANCH_STACK as u64;
    /// PERF_SAMPLE_REGS_USER.
    pub const REGS_USER: u64 = b::PERF_SAMPLE_REGS_USER as u64;
    /// PERF_SAMPLE_STACK_USER.
    pub const STACK_USER: u64 = b::PERF_SAMPLE_STACK_USER as u64;
}

/// Setters that write one field of the raw struct as given, each named
/// after its field.
macro_rules! setters {
    ($($(#[$doc:meta])* $field:ident: $t:ty;)*) => {$(
        $(#[$doc])*
        pub fn $field(mut self, v: $t) -> Self {
            self.raw.$field = v;
            self
        }
    )*};
}

/// A `perf_event_attr` under construction. Starts zeroed with `size` set,
/// `disabled = 1`, `use_clockid = 1` and `clockid = CLOCK_MONOTONIC_RAW`
/// (every event of the driver shares that clock, so SET_OUTPUT works and
/// timestamps compare with clock_gettime(CLOCK_MONOTONIC_RAW)).
#[derive(Clone)]
pub struct Attr {
    raw: RawAttr,
}

impl std::fmt::Debug for Attr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attr")
            .field("type", &self.raw.type_)
            .field("config", &self.raw.config)
            .field("sample_type", &self.raw.sample_type)
            .field("read_format", &self.raw.read_format)
            .finish_non_exhaustive()
    }
}

impl Default for Attr {
    fn default() -> Self {
        Self::new()
    }
}

impl Attr {
    /// A zeroed attr with the driver's defaults (see the type docs).
    pub fn new() -> Attr {
        let mut raw = RawAttr {
            size: std::mem::size_of::<RawAttr>() as u32,
            ..RawAttr::default()
        };
        raw.set_disabled(1);
        raw.set_use_clockid(1);
        raw.clockid = libc::CLOCK_MONOTONIC_RAW;
        Attr { raw }
    }

    setters! {
        /// `type`.
        type_: u32;
        /// `config`.
        config: u64;
        /// `sample_type` (PERF_SAMPLE_* bits, see [`sample`]).
        sample_type: u64;
        /// `read_format` (PERF_FORMAT_* bits).
        read_format: u64;
        /// `sample_regs_user`: which user registers PERF_SAMPLE_REGS_USER copies.
        sample_regs_user: u64;
        /// `sample_stack_user`: bytes of user stack PERF_SAMPLE_STACK_USER copies
        /// (a multiple of 8 below 65535, or the open fails with EINVAL).
        sample_stack_user: u32;
        /// `branch_sample_type` (PERF_SAMPLE_BRANCH_* bits).
        branch_sample_type: u64;
    }

    /// `sample_freq` and the `freq` bit.
    pub fn sample_freq(mut self, hz: u64) -> Self {
        self.raw.sample_freq = hz;
        self.raw.set_freq(1);
        self
    }
    /// `sample_period` (clears the `freq` bit).
    pub fn sample_period(mut self, period: u64) -> Self {
        self.raw.sample_period = period;
        self.raw.set_freq(0);
        self
    }
    /// `sample_id_all`: LOST/THROTTLE/... records carry the sample id trailer.
    pub fn sample_id_all(mut self, yes: bool) -> Self {
        self.raw.set_sample_id_all(u64::from(yes));
        self
    }
    /// `exclude_callchain_user`: the callchain stops at the kernel frames
    /// (what `perf record --call-graph dwarf` sets: user frames come from the
    /// stack copy).
    pub fn exclude_callchain_user(mut self, yes: bool) -> Self {
        self.raw.set_exclude_callchain_user(u64::from(yes));
        self
    }

    /// The raw struct, for [`super::sys::perf_event_open`].
    pub fn raw_mut(&mut self) -> &mut RawAttr {
        &mut self.raw
    }
}
