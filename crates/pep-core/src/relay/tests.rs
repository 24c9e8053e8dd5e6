//! Scripted transitions, one per behaviour, then a property: any
//! interleaving of reads, partial writes, FINs and the connect delivers
//! both streams byte-exact within the bound.

use super::*;
use proptest::prelude::*;

fn t(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn drain(r: &mut Relay) -> Vec<Action> {
    std::iter::from_fn(|| r.poll_action()).collect()
}

fn connected(buffer: usize) -> Relay {
    let mut r = Relay::new(RelayConfig::new(buffer, None), t(0));
    r.handle_connected(t(0));
    assert!(drain(&mut r).is_empty());
    r
}

/// Writes everything `dir` holds, returning it.
fn flush(r: &mut Relay, now: Instant, dir: Dir) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let s = r.write_slot(dir).to_vec();
        if s.is_empty() {
            return out;
        }
        r.commit_write(now, dir, s.len());
        out.extend(s);
    }
}

#[test]
fn data_in_an_empty_buffer_asks_for_a_write() {
    let mut r = connected(100);
    assert_eq!(r.handle_read(t(1), Dir::Up, b"hello"), 5);
    assert_eq!(drain(&mut r), [Action::Write(Dir::Up)]);
    assert_eq!(r.handle_read(t(1), Dir::Up, b" world"), 6);
    assert!(drain(&mut r).is_empty(), "already pending");
    assert_eq!(flush(&mut r, t(2), Dir::Up), b"hello world");
    assert_eq!(r.stats(Dir::Up).written, 11);
    assert!(!r.wants_write(Dir::Up));
}

#[test]
fn external_bytes_count_against_the_bound_and_hold_the_fin() {
    let mut r = connected(10);
    assert_eq!(r.read_room(Dir::Down), 10);
    r.commit_read_external(t(1), Dir::Down, 10);
    assert_eq!(
        drain(&mut r),
        [Action::Write(Dir::Down), Action::PauseRead(Dir::Down)]
    );
    assert_eq!(
        (r.read_room(Dir::Down), r.external_pending(Dir::Down)),
        (0, 10)
    );
    assert_eq!(r.stats(Dir::Down).buffered, 10);
    r.handle_eof(t(1), Dir::Down);
    assert!(drain(&mut r).is_empty(), "no FIN while the pipe holds data");
    r.commit_write_external(t(2), Dir::Down, 5);
    assert_eq!(drain(&mut r), [Action::ResumeRead(Dir::Down)]);
    r.commit_write_external(t(2), Dir::Down, 5);
    assert_eq!(drain(&mut r), [Action::ShutdownWrite(Leg::Client)]);
    assert_eq!(r.stats(Dir::Down).written, 10);
    // Before the server leg is up, client data waits in the pipe.
    let mut r = Relay::new(RelayConfig::new(10, None), t(0));
    r.commit_read_external(t(1), Dir::Up, 3);
    assert_eq!(r.external_pending(Dir::Up), 0);
    r.handle_connected(t(2));
    assert_eq!(drain(&mut r), [Action::Write(Dir::Up)]);
    assert_eq!(r.external_pending(Dir::Up), 3);
    r.handle_reset(t(3), Leg::Client);
    assert_eq!(
        r.stats(Dir::Up).buffered,
        0,
        "an abort drops the pipe's bytes"
    );
}

#[test]
fn full_buffer_pauses_and_drain_to_low_water_resumes() {
    let mut r = connected(10);
    assert_eq!(r.handle_read(t(1), Dir::Down, &[7; 25]), 10);
    assert_eq!(
        drain(&mut r),
        [Action::Write(Dir::Down), Action::PauseRead(Dir::Down)]
    );
    assert!(!r.wants_read(Dir::Down) && r.read_slot(Dir::Down).is_empty());
    r.commit_write(t(2), Dir::Down, 4); // 6 left, above 5
    assert!(drain(&mut r).is_empty());
    r.commit_write(t(2), Dir::Down, 1); // 5 left: resume
    assert_eq!(drain(&mut r), [Action::ResumeRead(Dir::Down)]);
    assert!(r.wants_read(Dir::Down));
    assert_eq!(r.stats(Dir::Down).pauses, 1);
}

#[test]
fn client_data_waits_for_the_server_leg() {
    let mut r = Relay::new(RelayConfig::new(100, None), t(0));
    assert!(!r.wants_read(Dir::Down), "no server socket yet");
    assert_eq!(r.handle_read(t(1), Dir::Up, b"GET /"), 5);
    assert!(drain(&mut r).is_empty());
    assert!(r.write_slot(Dir::Up).is_empty());
    r.handle_eof(t(1), Dir::Up);
    assert!(drain(&mut r).is_empty(), "FIN must wait for the data");
    r.handle_connected(t(2));
    assert_eq!(drain(&mut r), [Action::Write(Dir::Up)]);
    assert_eq!(flush(&mut r, t(3), Dir::Up), b"GET /");
    assert_eq!(drain(&mut r), [Action::ShutdownWrite(Leg::Server)]);
}

#[test]
fn half_close_each_way_then_close() {
    let mut r = connected(100);
    r.handle_eof(t(1), Dir::Up);
    assert_eq!(drain(&mut r), [Action::ShutdownWrite(Leg::Server)]);
    // The server still answers after the client's FIN.
    r.handle_read(t(2), Dir::Down, b"reply");
    assert_eq!(drain(&mut r), [Action::Write(Dir::Down)]);
    r.handle_eof(t(2), Dir::Down);
    assert!(drain(&mut r).is_empty(), "reply not written yet");
    assert_eq!(flush(&mut r, t(3), Dir::Down), b"reply");
    assert_eq!(
        drain(&mut r),
        [Action::ShutdownWrite(Leg::Client), Action::Close]
    );
    assert!(r.is_closed() && r.abort_reason().is_none());
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn eof_is_idempotent_and_stops_reading() {
    let mut r = connected(100);
    r.handle_eof(t(1), Dir::Down);
    r.handle_eof(t(1), Dir::Down);
    assert_eq!(drain(&mut r), [Action::ShutdownWrite(Leg::Client)]);
    assert!(!r.wants_read(Dir::Down));
    assert_eq!(r.handle_read(t(1), Dir::Down, b"late"), 0);
}

#[test]
fn reset_propagates_to_the_other_leg_and_drops_data() {
    for leg in [Leg::Client, Leg::Server] {
        let mut r = connected(100);
        r.handle_read(t(1), Dir::Up, b"pending");
        drain(&mut r);
        r.handle_reset(t(2), leg);
        assert_eq!(drain(&mut r), [Action::Reset(leg.other()), Action::Close]);
        assert_eq!(r.abort_reason(), Some(AbortReason::Reset(leg)));
        assert!(r.write_slot(Dir::Up).is_empty());
        assert_eq!(r.stats(Dir::Up).allocated, 0, "buffers freed");
        // Nothing after the end.
        r.handle_reset(t(3), leg.other());
        r.handle_eof(t(3), Dir::Down);
        assert!(drain(&mut r).is_empty());
    }
}

#[test]
fn failed_connect_resets_the_client() {
    let mut r = Relay::new(RelayConfig::new(100, None), t(0));
    r.handle_read(t(0), Dir::Up, b"early");
    r.handle_connect_failed(t(1));
    assert_eq!(drain(&mut r), [Action::Reset(Leg::Client), Action::Close]);
    assert_eq!(r.abort_reason(), Some(AbortReason::ConnectFailed));
}

#[test]
fn client_reset_while_connecting_abandons_the_server_leg() {
    let mut r = Relay::new(RelayConfig::new(100, None), t(0));
    r.handle_reset(t(1), Leg::Client);
    assert_eq!(drain(&mut r), [Action::Reset(Leg::Server), Action::Close]);
}

#[test]
fn idle_timeout_resets_both_legs_and_activity_defers_it() {
    let mut r = Relay::new(RelayConfig::new(100, Some(Duration::from_secs(10))), t(0));
    r.handle_connected(t(0));
    assert_eq!(r.poll_timeout(), Some(t(10_000)));
    r.handle_read(t(4_000), Dir::Up, b"x");
    assert_eq!(r.poll_timeout(), Some(t(14_000)));
    r.handle_timeout(t(13_999));
    assert_eq!(drain(&mut r), [Action::Write(Dir::Up)]);
    r.handle_timeout(t(14_000));
    assert_eq!(
        drain(&mut r),
        [
            Action::Reset(Leg::Client),
            Action::Reset(Leg::Server),
            Action::Close
        ]
    );
    assert_eq!(r.abort_reason(), Some(AbortReason::Idle));
}

#[test]
fn abort_resets_both() {
    let mut r = connected(100);
    r.handle_abort(t(1));
    assert_eq!(
        drain(&mut r),
        [
            Action::Reset(Leg::Client),
            Action::Reset(Leg::Server),
            Action::Close
        ]
    );
}

#[test]
fn memory_grows_with_use_and_never_passes_the_bound() {
    let mut r = connected(1 << 20);
    r.handle_read(t(1), Dir::Up, &[1; 100]);
    assert!(r.stats(Dir::Up).allocated < 64 << 10, "small at first");
    assert_eq!(r.stats(Dir::Down).allocated, 0, "unused direction");
    r.handle_read(t(1), Dir::Up, &vec![2; 3 << 20]);
    let s = r.stats(Dir::Up);
    assert_eq!((s.buffered, s.allocated), (1 << 20, 1 << 20));
}

#[test]
fn zero_length_commits_change_nothing() {
    let mut r = connected(10);
    r.commit_read(t(1), Dir::Up, 0);
    r.commit_write(t(1), Dir::Up, 0);
    assert!(drain(&mut r).is_empty());
}

#[derive(Clone, Debug)]
enum Op {
    Read(Dir, usize),
    Write(Dir, usize),
    Connect,
}

fn op() -> impl Strategy<Value = Op> {
    let dir = prop_oneof![Just(Dir::Up), Just(Dir::Down)];
    prop_oneof![
        4 => (dir.clone(), 1usize..300).prop_map(|(d, n)| Op::Read(d, n)),
        4 => (dir, 1usize..300).prop_map(|(d, n)| Op::Write(d, n)),
        1 => Just(Op::Connect),
    ]
}

/// A source leg: a fixed stream, then EOF.
struct Src {
    data: Vec<u8>,
    pos: usize,
    eof_sent: bool,
}

proptest! {
    #[test]
    fn any_interleaving_is_byte_exact_and_bounded(
        up in proptest::collection::vec(any::<u8>(), 0..2000),
        down in proptest::collection::vec(any::<u8>(), 0..2000),
        buffer in 1usize..700,
        ops in proptest::collection::vec(op(), 0..300),
        // The driver keeps the bytes (a pipe, modelled by a queue) and the
        // relay only counts them.
        external in any::<bool>(),
    ) {
        let mut r = Relay::new(RelayConfig::new(buffer, None), t(0));
        let mut src = [
            Src { data: up.clone(), pos: 0, eof_sent: false },
            Src { data: down.clone(), pos: 0, eof_sent: false },
        ];
        let mut sink: [Vec<u8>; 2] = [vec![], vec![]];
        let mut pipes: [std::collections::VecDeque<u8>; 2] = Default::default();
        let mut fins = Vec::new();
        let mut closes = 0;
        let step = |r: &mut Relay, op: &Op, src: &mut [Src; 2], sink: &mut [Vec<u8>; 2],
                    pipes: &mut [std::collections::VecDeque<u8>; 2]| {
            match *op {
                Op::Connect => r.handle_connected(t(1)),
                Op::Read(d, n) => {
                    let s = &mut src[d.index()];
                    if !r.wants_read(d) { return; }
                    if s.pos == s.data.len() {
                        if !s.eof_sent { s.eof_sent = true; r.handle_eof(t(1), d); }
                        return;
                    }
                    let k = n.min(s.data.len() - s.pos);
                    if external {
                        let k = k.min(r.read_room(d));
                        pipes[d.index()].extend(&s.data[s.pos..s.pos + k]);
                        r.commit_read_external(t(1), d, k);
                        s.pos += k;
                        return;
                    }
                    let took = r.handle_read(t(1), d, &s.data[s.pos..s.pos + k]);
                    s.pos += took;
                }
                Op::Write(d, n) if external => {
                    let k = n.min(r.external_pending(d));
                    sink[d.index()].extend(pipes[d.index()].drain(..k));
                    r.commit_write_external(t(1), d, k);
                }
                Op::Write(d, n) => {
                    let w = r.write_slot(d);
                    let k = n.min(w.len());
                    sink[d.index()].extend_from_slice(&w[..k]);
                    r.commit_write(t(1), d, k);
                }
            }
        };
        let check = |r: &mut Relay, fins: &mut Vec<Leg>, closes: &mut u32, sink: &[Vec<u8>; 2],
                     pipes: &[std::collections::VecDeque<u8>; 2]| {
            while let Some(a) = r.poll_action() {
                match a {
                    Action::ShutdownWrite(leg) => {
                        let d = if leg == Leg::Server { Dir::Up } else { Dir::Down };
                        let want = if d == Dir::Up { &up } else { &down };
                        prop_assert_eq!(&sink[d.index()], want, "FIN before all data");
                        prop_assert!(!fins.contains(&leg));
                        fins.push(leg);
                    }
                    Action::Close => *closes += 1,
                    Action::Reset(_) => prop_assert!(false, "no reset expected"),
                    _ => {}
                }
            }
            for d in Dir::BOTH {
                prop_assert!(r.stats(d).buffered <= buffer);
                prop_assert!(r.stats(d).allocated <= buffer);
                if external {
                    prop_assert_eq!(r.stats(d).buffered, pipes[d.index()].len());
                    prop_assert_eq!(r.stats(d).allocated, 0);
                }
            }
            Ok(())
        };
        for o in &ops {
            step(&mut r, o, &mut src, &mut sink, &mut pipes);
            check(&mut r, &mut fins, &mut closes, &sink, &pipes)?;
        }
        // Then run to completion in a fixed order.
        let finish = [Op::Connect, Op::Read(Dir::Up, 500), Op::Read(Dir::Down, 500),
                      Op::Write(Dir::Up, 500), Op::Write(Dir::Down, 500)];
        for _ in 0..100_000 {
            if r.is_closed() { break; }
            for o in &finish {
                step(&mut r, o, &mut src, &mut sink, &mut pipes);
                check(&mut r, &mut fins, &mut closes, &sink, &pipes)?;
            }
        }
        prop_assert!(r.is_closed());
        prop_assert_eq!(closes, 1);
        prop_assert_eq!(&sink[0], &up);
        prop_assert_eq!(&sink[1], &down);
        prop_assert_eq!(fins.len(), 2);
    }
}

/// The golden conversations on the bare relay (bytes counted, as an
/// external buffer): the drivers' sameness tests compare with the same.
#[test]
fn golden_conversations_on_the_bare_relay() {
    use super::golden::{conversations, Event};
    for c in conversations() {
        let mut r = Relay::new(c.config, Instant::ZERO);
        for (k, s) in c.steps.iter().enumerate() {
            let now = s.at;
            match s.event {
                Event::Connected => r.handle_connected(now),
                Event::Readable(d, n) => {
                    let n = n.min(r.read_room(d));
                    r.commit_read_external(now, d, n)
                }
                Event::Writable(d, n) => {
                    let n = n.min(r.external_pending(d));
                    r.commit_write_external(now, d, n)
                }
                Event::Eof(d) => r.handle_eof(now, d),
                Event::LegReset(leg) => r.handle_reset(now, leg),
                Event::Timeout => r.handle_timeout(now),
            }
            assert_eq!(
                drain(&mut r),
                s.expect,
                "{}: step {k} {:?}",
                c.name,
                s.event
            );
        }
    }
}

#[test]
fn resuming_one_below_the_bound_reads_whenever_there_is_room() {
    // The simulator's setting: no hysteresis, so the relay reads exactly as
    // much as it has room for, as a byte-count relay would.
    let cfg = RelayConfig {
        buffer: 10,
        resume_at: 9,
        idle_timeout: None,
    };
    let mut r = Relay::new(cfg, t(0));
    r.handle_connected(t(0));
    r.commit_read_external(t(1), Dir::Up, 10);
    assert_eq!(
        drain(&mut r),
        [Action::Write(Dir::Up), Action::PauseRead(Dir::Up)]
    );
    assert_eq!(r.read_room(Dir::Up), 0);
    r.commit_write_external(t(2), Dir::Up, 1);
    assert_eq!(drain(&mut r), [Action::ResumeRead(Dir::Up)]);
    assert_eq!(r.read_room(Dir::Up), 1);
    assert_eq!(r.stats(Dir::Up).pauses, 1);
}
