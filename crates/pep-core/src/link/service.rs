//! Link service that changes over time: what a direction's transmitter
//! offers, when it is not a fixed rate and delay. Each kind is its own
//! piece ([`super::schedule`], [`super::trace`], [`super::leo`]); this
//! file only chooses between them. A direction without one (the common
//! case) never reaches this code.

use alloc::boxed::Box;
use alloc::sync::Arc;

use super::leo::{Leo, LeoParams};
use super::schedule::Schedule;
use super::trace::{MmTrace, TraceCursor};
use crate::loss::LossModel;
use crate::rng::Stream;
use crate::segment::Segment;
use crate::time::{Duration, Instant, Rate};

/// What a direction's service follows, as configured.
#[derive(Clone, Debug, PartialEq)]
pub enum ServiceSpec {
    /// Steps and ramps of rate, delay and loss.
    Schedule(Arc<Schedule>),
    /// Delivery opportunities from an `mm-link` trace; the delay stays the
    /// link's.
    Trace(Arc<MmTrace>),
    /// The LEO preset: the link's rate, the preset's delay and loss.
    Leo(LeoParams),
}

/// A direction's service, running.
#[derive(Clone, Debug)]
pub(crate) struct Service {
    kind: Kind,
    epoch: Instant,
}

/// A service's own losses: a packet leaving at `t` is lost with the
/// probability the schedule or the LEO preset gives for `t`, on top of
/// (and after consulting) the link's own model.
#[derive(Clone, Debug)]
pub struct TimedLoss {
    by: LossBy,
    epoch: Instant,
    rng: Stream,
    inner: LossModel,
}

#[derive(Clone, Debug)]
enum LossBy {
    Schedule(Arc<Schedule>),
    Leo(LeoParams),
}

impl TimedLoss {
    /// The losses of `spec`, if it has any.
    pub(crate) fn new(spec: &ServiceSpec, epoch: Instant, rng: Stream) -> Option<TimedLoss> {
        let by = match spec {
            ServiceSpec::Schedule(s) if s.has_loss() => LossBy::Schedule(s.clone()),
            ServiceSpec::Leo(p) => LossBy::Leo(*p),
            _ => return None,
        };
        Some(TimedLoss {
            by,
            epoch,
            rng,
            inner: LossModel::None,
        })
    }

    /// These losses on top of `inner`.
    pub(crate) fn over(mut self, inner: LossModel) -> TimedLoss {
        self.inner = inner;
        self
    }

    pub(crate) fn lose(&mut self, t: Instant, seg: &Segment) -> bool {
        let own = self.inner.lose(t, seg);
        let off = t.saturating_since(self.epoch);
        let p = match &self.by {
            LossBy::Schedule(s) => s.at(off).loss,
            LossBy::Leo(l) => l.loss_at(off),
        };
        self.rng.bernoulli(p) | own
    }
}

#[derive(Clone, Debug)]
enum Kind {
    Schedule(Arc<Schedule>),
    Trace(TraceCursor),
    Leo(Box<Leo>),
}

impl Service {
    /// `spec` starting at `epoch` (time zero of the schedule, trace or
    /// LEO minute), drawing from `rng`.
    pub(crate) fn new(spec: &ServiceSpec, epoch: Instant, mut rng: Stream) -> Service {
        let kind = match spec {
            ServiceSpec::Schedule(s) => Kind::Schedule(s.clone()),
            ServiceSpec::Trace(t) => Kind::Trace(TraceCursor::new(t.clone(), epoch)),
            ServiceSpec::Leo(p) => Kind::Leo(Box::new(Leo::new(
                *p,
                epoch,
                Stream::derive(rng.next_u64(), "leo/floor"),
            ))),
        };
        Service { kind, epoch }
    }

    /// When a transmission of `len` bytes starting at `at` ends, on a link
    /// whose own rate is `rate`. `continuing`: it starts as the previous
    /// one ends, from the queue (a trace may finish it in the same
    /// opportunity).
    pub(crate) fn tx_end(
        &mut self,
        at: Instant,
        len: u32,
        rate: Rate,
        continuing: bool,
    ) -> Instant {
        match &mut self.kind {
            Kind::Schedule(s) => {
                at + s
                    .at(at.saturating_since(self.epoch))
                    .rate
                    .tx_time(len as u64)
            }
            Kind::Trace(c) => c.tx_end(at, len, continuing),
            Kind::Leo(_) => at + rate.tx_time(len as u64),
        }
    }

    /// The propagation delay of a packet leaving at `t`, on a link whose
    /// own delay is `delay`.
    pub(crate) fn delay(&mut self, t: Instant, delay: Duration) -> Duration {
        match &mut self.kind {
            Kind::Schedule(s) => s.at(t.saturating_since(self.epoch)).delay,
            Kind::Trace(_) => delay,
            Kind::Leo(l) => l.delay(t),
        }
    }
}
