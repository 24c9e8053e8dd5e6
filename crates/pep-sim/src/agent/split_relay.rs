//! The simulator's driver of the split-connection relay
//! ([`pep_core::relay::Relay`], the one the daemon's connections drive).
//!
//! Simulated TCP endpoints carry byte counts, not bytes, so the relay holds
//! its data "outside" (its external-buffer mode): it counts what it holds
//! against the same bound and decides exactly as for bytes. A leg event
//! becomes one relay call: what the terminating receiver has to read is
//! [`SimRelay::read`], room in the forwarding sender's send buffer is
//! [`SimRelay::write`], the receiver's in-order FIN with nothing left to
//! read is [`SimRelay::eof`]. Each action the relay answers with becomes
//! an [`Effect`] on the simulated legs ([`SimRelay::next_effect`]).
//!
//! An optional [`Shaper`] paces what leaves toward the destination
//! ([`Dir::Up`]): the relay says how much may leave, the shaper how much
//! leaves now.

use pep_core::relay::{Action, ActionLog, Dir, Leg, Relay, RelayConfig};
use pep_core::shaper::{Shaper, ShaperConfig};
use pep_core::Instant;

/// What a simulated leg does for a relay action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Close the sending side toward this leg (a FIN after the data).
    Fin(Leg),
    /// Nothing: reading and writing follow [`SimRelay::read`]'s and
    /// [`SimRelay::write`]'s room, and simulated TCP has no RST.
    Nothing,
}

impl Effect {
    pub fn of(action: Action) -> Effect {
        match action {
            Action::ShutdownWrite(leg) => Effect::Fin(leg),
            Action::PauseRead(_)
            | Action::ResumeRead(_)
            | Action::Write(_)
            | Action::Reset(_)
            | Action::Close => Effect::Nothing,
        }
    }

    /// How [`ActionLog`] names it.
    pub fn name(self) -> &'static str {
        match self {
            Effect::Fin(_) => "close the sender (FIN after the data)",
            Effect::Nothing => "nothing (room is polled; no RST)",
        }
    }
}

/// Byte counts of the relay toward the destination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Bytes read from the receiving leg.
    pub bytes_in: u64,
    /// Bytes handed to the sending leg.
    pub bytes_out: u64,
    /// Most bytes held at once.
    pub max_held: u64,
    /// Times the buffer filled (reading the receiving leg stopped).
    pub fills: u64,
    /// Releases the shaper cut short (bytes held back for lack of tokens).
    pub shaped: u64,
}

/// The relay of one simulated split connection, and its shaper.
#[derive(Debug)]
pub struct SimRelay {
    relay: Relay,
    shaper: Option<Shaper>,
    /// Most bytes held at once, per direction.
    max_held: [u64; 2],
}

impl SimRelay {
    /// The simulator's setting: at most `buffer` bytes per direction, read
    /// again as soon as there is room (a paused direction resumes one byte
    /// below the bound, so the relay takes exactly what it has room for),
    /// no idle timeout.
    pub fn config(buffer: u64) -> RelayConfig {
        let buffer = usize::try_from(buffer).unwrap_or(usize::MAX).max(1);
        RelayConfig {
            buffer,
            resume_at: buffer - 1,
            idle_timeout: None,
        }
    }

    /// A relay whose server leg is still to be connected.
    pub fn new(cfg: RelayConfig, shaper: Option<ShaperConfig>) -> SimRelay {
        SimRelay {
            relay: Relay::new(cfg, Instant::ZERO),
            shaper: shaper.map(Shaper::new),
            max_held: [0; 2],
        }
    }

    pub fn connected(&mut self, now: Instant) {
        self.relay.handle_connected(now);
    }

    /// The source leg of `dir` has `available` bytes to read: returns how
    /// many the relay takes (the driver reads exactly that many).
    pub fn read(&mut self, now: Instant, dir: Dir, available: u64) -> u64 {
        let n = available.min(self.relay.read_room(dir) as u64);
        if n > 0 {
            self.relay.commit_read_external(now, dir, n as usize);
            let held = self.held(dir);
            let max = &mut self.max_held[dir as usize];
            *max = (*max).max(held);
        }
        n
    }

    /// The destination leg of `dir` takes up to `space` bytes: returns how
    /// many leave the relay now (the driver writes exactly that many).
    pub fn write(&mut self, now: Instant, dir: Dir, space: u64) -> u64 {
        let want = (self.relay.external_pending(dir) as u64).min(space);
        if want == 0 {
            return 0;
        }
        let n = match (&mut self.shaper, dir) {
            (Some(s), Dir::Up) => s.release(now, want),
            _ => want,
        };
        self.relay.commit_write_external(now, dir, n as usize);
        n
    }

    /// The source leg of `dir` ended its stream.
    pub fn eof(&mut self, now: Instant, dir: Dir) {
        self.relay.handle_eof(now, dir);
    }

    /// `leg` failed.
    pub fn reset(&mut self, now: Instant, leg: Leg) {
        self.relay.handle_reset(now, leg);
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.relay.handle_timeout(now);
    }

    /// The relay's deadline, or when the shaper lets held bytes leave.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let shaper = self
            .shaper
            .as_ref()
            .filter(|_| self.held(Dir::Up) > 0)
            .and_then(|s| s.poll_timeout());
        [self.relay.poll_timeout(), shaper]
            .into_iter()
            .flatten()
            .min()
    }

    /// The next action the relay asks for, as what the legs must do; `log`
    /// notes both.
    pub fn next_effect(&mut self, log: &mut impl ActionLog) -> Option<Effect> {
        let a = self.relay.poll_action()?;
        let e = Effect::of(a);
        log.note(a, e.name());
        Some(e)
    }

    /// Bytes held for `dir` now.
    pub fn held(&self, dir: Dir) -> u64 {
        self.relay.stats(dir).buffered as u64
    }

    /// Counts toward the destination ([`Dir::Up`]).
    pub fn stats(&self) -> RelayStats {
        let s = self.relay.stats(Dir::Up);
        RelayStats {
            bytes_in: s.read,
            bytes_out: s.written,
            max_held: self.max_held[Dir::Up as usize],
            fills: s.pauses,
            shaped: self.shaper.as_ref().map_or(0, |s| s.cut_short()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pep_core::relay::golden::{conversations, Event};

    /// Sameness (issue 33, item 5): the golden conversations through this
    /// adapter give, step by step, exactly the actions the bare relay
    /// gives (pep-core's test) and the daemon's driver gives (its test),
    /// each carried out as a simulated leg does.
    #[test]
    fn golden_conversations_give_the_relays_actions() {
        for c in conversations() {
            let mut r = SimRelay::new(c.config, None);
            for (k, s) in c.steps.iter().enumerate() {
                let now = s.at;
                match s.event {
                    Event::Connected => r.connected(now),
                    Event::Readable(d, n) => {
                        r.read(now, d, n as u64);
                    }
                    Event::Writable(d, n) => {
                        r.write(now, d, n as u64);
                    }
                    Event::Eof(d) => r.eof(now, d),
                    Event::LegReset(leg) => r.reset(now, leg),
                    Event::Timeout => r.handle_timeout(now),
                }
                let mut log = Vec::new();
                let mut effects = Vec::new();
                while let Some(e) = r.next_effect(&mut log) {
                    effects.push(e);
                }
                let actions: Vec<Action> = log.iter().map(|&(a, _)| a).collect();
                assert_eq!(actions, s.expect, "{}: step {k} {:?}", c.name, s.event);
                let want: Vec<Effect> = s.expect.iter().map(|&a| Effect::of(a)).collect();
                assert_eq!(effects, want, "{}: step {k}", c.name);
                assert!(log.iter().all(|&(a, name)| name == Effect::of(a).name()));
            }
        }
    }

    #[test]
    fn the_shaper_paces_only_what_the_relay_lets_leave() {
        // 8 Mbit/s, 1000 B quanta, a bucket of two: 2000 B at once, then one
        // quantum per ms; the relay's bound still holds the source back.
        let shaper = ShaperConfig {
            rate: pep_core::Rate::mbps(8),
            depth: 2000,
            overhead: 0,
            quantum: 1000,
        };
        let mut r = SimRelay::new(SimRelay::config(5000), Some(shaper));
        r.connected(Instant::ZERO);
        assert_eq!(r.read(Instant::ZERO, Dir::Up, 9000), 5000);
        assert_eq!(r.write(Instant::ZERO, Dir::Up, u64::MAX), 2000);
        let t = r.poll_timeout().expect("held back");
        assert_eq!(t, Instant::from_nanos(1_000_000));
        assert_eq!(r.read(t, Dir::Up, 4000), 2000, "only the room");
        assert_eq!(r.write(t, Dir::Up, u64::MAX), 1000);
        let s = r.stats();
        assert_eq!(
            (s.bytes_in, s.bytes_out, s.max_held, s.fills),
            (7000, 3000, 5000, 2)
        );
        assert_eq!(s.shaped, 2);
    }
}
