//! The engine's next-hop lookup: the port a node sends a packet on, in one
//! or two array loads per packet.
//!
//! `pep-model`'s [`Routes`] is compact (sized by routers, not nodes
//! squared) but answers a host's question by walking its links and a
//! stub's through its router's column: a dozen dependent loads and
//! branches on every packet. At load the engine spreads it out once: a
//! row of `n` ports for every router and multi-homed host, and for a host
//! with a single link that link's port itself. The table holds routers x
//! nodes entries, small for the topologies the engine meets (a few
//! routers, many hosts); past [`MAX_ENTRIES`] the engine asks `Routes`
//! per packet instead.

use crate::scenario::Routes;
use crate::sim::OFFER;

/// Most row entries the table may hold (64 MiB of ports); beyond it, the
/// engine asks [`Routes::hop`] per packet.
pub const MAX_ENTRIES: usize = 1 << 24;

/// In `first`: the node's answers are a row of `rows` (the low bits
/// number it); without it, the entry is the node's only port.
const ROW: u32 = 1 << 31;

/// Next hops as ports (`link << 1 | reverse`).
#[derive(Clone, Debug)]
pub(crate) enum Hops {
    /// `first[node]`: `ROW | r`, answers in `rows[r * n ..][..n]`, or the
    /// port of a single-link host's link.
    Table {
        n: usize,
        first: Vec<u32>,
        rows: Vec<u32>,
    },
    /// Too many rows for [`MAX_ENTRIES`]; answers equal to `offered`
    /// become [`OFFER`].
    Routes { routes: Routes, offered: u32 },
}

impl Hops {
    /// The table for `n` nodes joined by links `ends[l] = (a, b)`, whose
    /// routes are `routes`; [`Hops::Routes`] when it would exceed
    /// `max_entries`.
    pub(crate) fn new(
        routes: &Routes,
        routers: &[bool],
        ends: &[(usize, usize)],
        max_entries: usize,
    ) -> Hops {
        let n = routers.len();
        // Each node's one port, if it has exactly one link (self-links do
        // not count: routes ignore them).
        const NONE_YET: u32 = u32::MAX;
        const MANY: u32 = u32::MAX - 1;
        let mut only = vec![NONE_YET; n];
        for (l, &(a, b)) in ends.iter().enumerate() {
            if a == b || a >= n || b >= n {
                continue;
            }
            for (v, port) in [(a, (l as u32) << 1), (b, (l as u32) << 1 | 1)] {
                only[v] = if only[v] == NONE_YET { port } else { MANY };
            }
        }
        // Ports must leave the ROW bit free.
        let fits = ends.len() < (ROW as usize) >> 1;
        let row_count = (0..n).filter(|&v| routers[v] || only[v] >= MANY).count();
        if !fits || row_count.saturating_mul(n) > max_entries {
            return Hops::Routes {
                routes: routes.clone(),
                offered: OFFER,
            };
        }
        let mut first = Vec::with_capacity(n);
        let mut rows = Vec::with_capacity(row_count * n);
        for v in 0..n {
            if !routers[v] && only[v] < MANY {
                // A host with one link: every route leaves on it (routes
                // to unreachable destinations are refused at load).
                first.push(only[v]);
                continue;
            }
            first.push(ROW | (rows.len() / n.max(1)) as u32);
            rows.extend((0..n).map(|dst| routes.hop(v, dst)));
        }
        Hops::Table { n, first, rows }
    }

    /// The port `node` sends on to reach `dst` (`node != dst`, `dst`
    /// reachable: both checked at load).
    #[inline(always)]
    pub(crate) fn hop(&self, node: usize, dst: usize) -> u32 {
        match self {
            Hops::Table { n, first, rows } => {
                let f = first[node];
                if f & ROW == 0 {
                    f
                } else {
                    rows[(f & !ROW) as usize * n + dst]
                }
            }
            Hops::Routes { routes, offered } => match routes.hop(node, dst) {
                h if h == *offered => OFFER,
                h => h,
            },
        }
    }

    /// What is sent on `port` from now on is offered to the other side of
    /// a cut run: every answer `port` becomes [`OFFER`].
    pub(crate) fn offer(&mut self, port: u32) {
        match self {
            Hops::Table { n, first, rows } => {
                for h in rows.iter_mut().filter(|h| **h == port) {
                    *h = OFFER;
                }
                // A host whose one link it is gets a row of its own (its
                // entry holds ports only).
                for f in first.iter_mut().filter(|f| **f == port) {
                    *f = ROW | (rows.len() / (*n).max(1)) as u32;
                    rows.extend(std::iter::repeat_n(OFFER, *n));
                }
            }
            Hops::Routes { offered, .. } => *offered = port,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pep_model::route::NodeKind;

    /// Which nodes are routers, and the links' ends.
    type Graph = (Vec<bool>, Vec<(usize, usize)>);

    /// Random small graphs with parallel links, self-links, multi-homed,
    /// single-link and isolated hosts.
    fn graphs(count: usize) -> Vec<Graph> {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as usize
        };
        (0..count)
            .map(|_| {
                let n = 2 + next(14);
                let routers: Vec<bool> = (0..n).map(|_| next(3) == 0).collect();
                let ends = (0..next(2 * n)).map(|_| (next(n), next(n))).collect();
                (routers, ends)
            })
            .collect()
    }

    fn routes(routers: &[bool], ends: &[(usize, usize)]) -> Routes {
        let kinds: Vec<NodeKind> = routers
            .iter()
            .map(|&r| if r { NodeKind::Router } else { NodeKind::Host })
            .collect();
        Routes::compute(&kinds, ends)
    }

    #[test]
    fn table_answers_as_routes_do_wherever_a_route_exists() {
        let (mut single, mut rows) = (0, 0);
        for (routers, ends) in graphs(500) {
            let r = routes(&routers, &ends);
            let table = Hops::new(&r, &routers, &ends, MAX_ENTRIES);
            let Hops::Table { first, .. } = &table else {
                panic!("a small graph fits the table");
            };
            single += first.iter().filter(|&&f| f & ROW == 0).count();
            rows += first.iter().filter(|&&f| f & ROW != 0).count();
            let n = routers.len();
            for s in 0..n {
                for d in (0..n).filter(|&d| d != s) {
                    let want = r.hop(s, d);
                    if want != u32::MAX {
                        assert_eq!(table.hop(s, d), want, "{routers:?} {ends:?} {s}->{d}");
                    }
                }
            }
        }
        // Both kinds of entry were exercised.
        assert!(single > 500 && rows > 500, "{single} {rows}");
    }

    #[test]
    fn past_the_budget_it_asks_routes() {
        let (routers, ends) = (vec![false, true, false], vec![(0, 1), (2, 1)]);
        let r = routes(&routers, &ends);
        // One router row of three entries: within 3, not within 2.
        assert!(matches!(
            Hops::new(&r, &routers, &ends, 3),
            Hops::Table { .. }
        ));
        let mut fallback = Hops::new(&r, &routers, &ends, 2);
        assert!(matches!(fallback, Hops::Routes { .. }));
        assert_eq!(fallback.hop(0, 2), 0);
        assert_eq!(fallback.hop(1, 2), 3);
        assert_eq!(fallback.hop(2, 0), 2);
        fallback.offer(3);
        assert_eq!(fallback.hop(1, 2), OFFER);
        assert_eq!(fallback.hop(0, 2), 0);
    }

    #[test]
    fn an_offered_port_is_offered_from_routers_and_its_single_link_host() {
        // h0 - r1 - h2: offering link 1's reverse (r1 -> h2 is 2; h2 -> r1
        // is 3).
        let (routers, ends) = (vec![false, true, false], vec![(0, 1), (2, 1)]);
        let r = routes(&routers, &ends);
        let mut t = Hops::new(&r, &routers, &ends, MAX_ENTRIES);
        assert_eq!((t.hop(2, 0), t.hop(1, 2)), (2, 3));
        t.offer(2);
        t.offer(3);
        assert_eq!((t.hop(2, 0), t.hop(1, 2)), (OFFER, OFFER));
        assert_eq!((t.hop(0, 2), t.hop(1, 0)), (0, 1));
    }
}
