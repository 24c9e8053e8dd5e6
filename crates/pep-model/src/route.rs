//! The topology and its static routes, computed once before a run: the
//! simulator's rule, which the lab's kernel routes follow too (both call
//! this, so they cannot pick different paths).
//!
//! Rule: fewest hops, where only routers may be intermediate hops (a host
//! never forwards). Among equally short choices a node takes the link with
//! the lowest index, so routes depend on nothing but the file's order. Links
//! are full duplex, so a route exists from `a` to `b` exactly when one exists
//! from `b` to `a` (ACKs always have a way back).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// What a node does with packets addressed to someone else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// Sends and receives; never forwards (never an intermediate hop).
    Host,
    /// Forwards along [`Routes`]; may also terminate flows.
    Router,
}

/// A direction of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    /// From `a` to `b`.
    Forward,
    /// From `b` to `a`.
    Reverse,
}

/// Nodes and the links joining them: what routes are computed from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// `kinds[node]`: whether the node forwards.
    pub kinds: Vec<NodeKind>,
    /// `ends[link] = (a, b)`: node indices of the link's two ends.
    pub ends: Vec<(usize, usize)>,
}

impl Graph {
    /// Adds a node; returns its index.
    pub fn node(&mut self, kind: NodeKind) -> usize {
        self.kinds.push(kind);
        self.kinds.len() - 1
    }

    /// Adds a link from `a` to `b`; returns its index.
    pub fn link(&mut self, a: usize, b: usize) -> usize {
        self.ends.push((a, b));
        self.ends.len() - 1
    }

    /// The next hops for every (node, destination) pair.
    pub fn routes(&self) -> Routes {
        Routes::compute(&self.kinds, &self.ends)
    }
}

/// No route, in the packed `link << 1 | reverse` form.
const NONE: u32 = u32::MAX;
/// Unreachable, as a hop count.
const FAR: u32 = u32::MAX;

/// How routes to a destination are found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A router, or a host attached to two or more routers: it has a
    /// column of its own (`Routes::cols`).
    Column(u32),
    /// A host whose only forwarding neighbour is the router `router`
    /// (reached from it on `last`): its routes are the router's, plus the
    /// last hop. Most hosts, so most destinations need no column.
    Stub { router: u32, last: u32 },
    /// A host no router is attached to: only its direct neighbours reach it.
    Isolated,
}

/// Next hops for every (node, destination) pair, held in space that grows
/// with routers x (routers + multi-homed hosts), not nodes^2: a host never
/// forwards, so a router's routes to a single-homed host are its routes to
/// that host's router, and a host's own next hop follows from its few
/// links. Answers are the same as a full table's, in constant time for
/// routers and in time linear in a host's degree for hosts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routes {
    n: usize,
    /// `router[node]`: the node's row in `cols`, or `NONE` for a host.
    router: Vec<u32>,
    /// How each destination is reached.
    target: Vec<Target>,
    /// Columns, one per column destination, `routers` rows each:
    /// `cols[col * routers + row] = (hops, link << 1 | reverse)`.
    cols: Vec<(u32, u32)>,
    routers: usize,
    /// Adjacency in link-index order (`adj[adj_at[v]..adj_at[v + 1]]`):
    /// `(link << 1 | reverse, neighbour)`.
    adj_at: Vec<u32>,
    adj: Vec<(u32, u32)>,
    /// Link endpoints `(a, b)`, to follow a route.
    ends: Vec<(usize, usize)>,
}

fn packed(link: usize, d: Dir) -> u32 {
    (link as u32) << 1 | u32::from(d == Dir::Reverse)
}

impl Routes {
    /// Computes the routes for nodes of the given kinds joined by links
    /// `ends[i] = (a, b)`. Self-links are ignored.
    pub fn compute(kinds: &[NodeKind], ends: &[(usize, usize)]) -> Routes {
        let n = kinds.len();
        // Adjacency in link-index order, as compressed rows.
        let mut degree = vec![0u32; n + 1];
        for &(a, b) in ends {
            if a != b && a < n && b < n {
                degree[a] += 1;
                degree[b] += 1;
            }
        }
        let mut adj_at = vec![0u32; n + 1];
        for v in 0..n {
            adj_at[v + 1] = adj_at[v] + degree[v];
        }
        let mut fill: Vec<u32> = adj_at[..n].to_vec();
        let mut adj = vec![(0u32, 0u32); adj_at[n] as usize];
        for (l, &(a, b)) in ends.iter().enumerate() {
            if a != b && a < n && b < n {
                adj[fill[a] as usize] = (packed(l, Dir::Forward), b as u32);
                fill[a] += 1;
                adj[fill[b] as usize] = (packed(l, Dir::Reverse), a as u32);
                fill[b] += 1;
            }
        }
        let around = |v: usize| &adj[adj_at[v] as usize..adj_at[v + 1] as usize];
        let is_router = |v: usize| kinds[v] == NodeKind::Router;

        let mut rows = 0usize;
        let router: Vec<u32> = (0..n)
            .map(|v| {
                if !is_router(v) {
                    return NONE;
                }
                rows += 1;
                rows as u32 - 1
            })
            .collect();
        // Which destinations need a column of their own.
        let mut target = Vec::with_capacity(n);
        let mut column_of = Vec::new();
        for v in 0..n {
            let t = if is_router(v) {
                None
            } else {
                let mut routers = around(v).iter().filter(|&&(_, w)| is_router(w as usize));
                match routers.next() {
                    None => Some(Target::Isolated),
                    Some(&(hop, r)) if routers.all(|&(_, w)| w == r) => Some(Target::Stub {
                        router: r,
                        // The same link seen from the router's end.
                        last: hop ^ 1,
                    }),
                    Some(_) => None,
                }
            };
            target.push(t.unwrap_or_else(|| {
                column_of.push(v);
                Target::Column(column_of.len() as u32 - 1)
            }));
        }

        let mut cols = vec![(FAR, NONE); column_of.len() * rows];
        let mut dist = vec![FAR; n];
        let mut queue = VecDeque::new();
        for (c, &dst) in column_of.iter().enumerate() {
            // Hop counts to `dst` over paths whose inner nodes are routers:
            // a breadth-first search from `dst` that expands only `dst`
            // itself and routers.
            dist.iter_mut().for_each(|d| *d = FAR);
            dist[dst] = 0;
            queue.push_back(dst);
            while let Some(u) = queue.pop_front() {
                if u != dst && !is_router(u) {
                    continue;
                }
                for &(_, v) in around(u) {
                    if dist[v as usize] == FAR {
                        dist[v as usize] = dist[u] + 1;
                        queue.push_back(v as usize);
                    }
                }
            }
            for s in (0..n).filter(|&s| is_router(s)) {
                let cell = &mut cols[c * rows + router[s] as usize];
                cell.0 = dist[s];
                if s == dst || dist[s] == FAR {
                    continue;
                }
                let hop = around(s).iter().find(|&&(_, v)| {
                    let v = v as usize;
                    dist[v] == dist[s] - 1 && (v == dst || is_router(v))
                });
                if let Some(&(h, _)) = hop {
                    cell.1 = h;
                }
            }
        }
        Routes {
            n,
            router,
            target,
            cols,
            routers: rows,
            adj_at,
            adj,
            ends: ends.to_vec(),
        }
    }

    /// Hops from router row `row` to `dst` over router-inner paths, and
    /// the packed next hop (`NONE` at `dst` itself or when unreachable).
    fn via_router(&self, v: usize, row: usize, dst: usize) -> (u32, u32) {
        match self.target[dst] {
            Target::Column(c) => self.cols[c as usize * self.routers + row],
            Target::Stub { router, last } => {
                if router as usize == v {
                    (1, last)
                } else {
                    let c = self.column(router as usize);
                    match self.cols[c * self.routers + row] {
                        (FAR, _) => (FAR, NONE),
                        (d, hop) => (d + 1, hop),
                    }
                }
            }
            Target::Isolated => (FAR, NONE),
        }
    }

    fn column(&self, node: usize) -> usize {
        match self.target[node] {
            Target::Column(c) => c as usize,
            // Routers always have a column.
            _ => unreachable!("a router without a column"),
        }
    }

    /// The next hop from `node` to `dst` as `link << 1 | reverse` (the
    /// same number as the simulator's port index), or `u32::MAX` if
    /// `node == dst`, `dst` is unreachable or either index is out of range.
    pub fn hop(&self, node: usize, dst: usize) -> u32 {
        if node >= self.n || dst >= self.n || node == dst {
            return NONE;
        }
        let row = self.router[node];
        if row != NONE {
            return self.via_router(node, row as usize, dst).1;
        }
        // A host: the first of its links, in link order, to `dst` itself
        // or to a router nearest to `dst`.
        let links = &self.adj[self.adj_at[node] as usize..self.adj_at[node + 1] as usize];
        let mut best = (FAR, NONE);
        for &(hop, w) in links {
            let w = w as usize;
            let d = if w == dst {
                0
            } else if self.router[w] != NONE {
                self.via_router(w, self.router[w] as usize, dst).0
            } else {
                FAR
            };
            if d < best.0 {
                best = (d, hop);
                if d == 0 {
                    break;
                }
            }
        }
        best.1
    }

    /// The link and direction `node` sends on to reach `dst`; `None` if
    /// `node == dst`, `dst` is unreachable or either index is out of range.
    pub fn next_hop(&self, node: usize, dst: usize) -> Option<(usize, Dir)> {
        match self.hop(node, dst) {
            NONE => None,
            e => {
                let d = if e & 1 == 1 {
                    Dir::Reverse
                } else {
                    Dir::Forward
                };
                Some(((e >> 1) as usize, d))
            }
        }
    }

    /// The hops from `src` to `dst` (empty if they are the same node), or
    /// `None` if there is no route.
    pub fn path(&self, src: usize, dst: usize) -> Option<Vec<(usize, Dir)>> {
        let mut hops = Vec::new();
        let mut at = src;
        while at != dst {
            // Hop counts fall by one each step, so this ends within n steps.
            let (l, d) = self.next_hop(at, dst)?;
            hops.push((l, d));
            let (a, b) = self.ends[l];
            at = if d == Dir::Forward { b } else { a };
        }
        Some(hops)
    }

    /// The nodes from `src` to `dst`, both included (only `src` if they
    /// are the same), or `None` if there is no route.
    pub fn nodes(&self, src: usize, dst: usize) -> Option<Vec<usize>> {
        let mut at = vec![src];
        for (l, d) in self.path(src, dst)? {
            let (a, b) = self.ends[l];
            at.push(if d == Dir::Forward { b } else { a });
        }
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use NodeKind::{Host as H, Router as R};

    #[test]
    fn line_through_routers() {
        // s - r1 - r2 - d
        let r = Routes::compute(&[H, R, R, H], &[(0, 1), (1, 2), (3, 2)]);
        assert_eq!(r.next_hop(0, 3), Some((0, Dir::Forward)));
        assert_eq!(r.next_hop(1, 3), Some((1, Dir::Forward)));
        assert_eq!(r.next_hop(2, 3), Some((2, Dir::Reverse)));
        assert_eq!(r.next_hop(3, 0), Some((2, Dir::Forward)));
        assert_eq!(
            r.path(0, 3),
            Some(vec![
                (0, Dir::Forward),
                (1, Dir::Forward),
                (2, Dir::Reverse)
            ])
        );
        assert_eq!(r.path(3, 3), Some(vec![]));
        assert_eq!(r.nodes(0, 3), Some(vec![0, 1, 2, 3]));
        assert_eq!(r.nodes(3, 0), Some(vec![3, 2, 1, 0]));
        assert_eq!(r.nodes(3, 3), Some(vec![3]));
        assert_eq!(r.next_hop(0, 0), None);
        assert_eq!(r.next_hop(9, 0), None);
    }

    #[test]
    fn hosts_do_not_forward() {
        // s - h - d: the middle node is a host, so no route.
        let r = Routes::compute(&[H, H, H], &[(0, 1), (1, 2)]);
        assert_eq!(r.next_hop(0, 2), None);
        assert_eq!(r.next_hop(0, 1), Some((0, Dir::Forward)));
        // The same through a router works.
        let r = Routes::compute(&[H, R, H], &[(0, 1), (1, 2)]);
        assert_eq!(r.path(0, 2).map(|p| p.len()), Some(2));
    }

    #[test]
    fn shortest_then_lowest_link_index() {
        // Two equal two-hop paths, s-r2-d (links 0, 1) and s-r1-d (links 2,
        // 3), and a second s-r2 link (4): link 0 wins.
        let kinds = [H, R, R, H];
        let r = Routes::compute(&kinds, &[(0, 2), (2, 3), (0, 1), (1, 3), (0, 2)]);
        assert_eq!(r.next_hop(0, 3), Some((0, Dir::Forward)));
        // A direct link beats any detour, whatever its index.
        let r = Routes::compute(&kinds, &[(0, 1), (1, 3), (3, 0)]);
        assert_eq!(r.next_hop(0, 3), Some((2, Dir::Reverse)));
    }

    #[test]
    fn host_on_a_shorter_path_is_bypassed() {
        // s - h - d is two hops but h is a host; s - r1 - r2 - d is used.
        let kinds = [H, H, R, R, H];
        let r = Routes::compute(&kinds, &[(0, 1), (1, 4), (0, 2), (2, 3), (3, 4)]);
        assert_eq!(r.path(0, 4).map(|p| p.len()), Some(3));
        assert_eq!(r.next_hop(0, 4), Some((2, Dir::Forward)));
    }

    #[test]
    fn graph_builds_what_compute_takes() {
        let mut g = Graph::default();
        let (s, r, d) = (g.node(H), g.node(R), g.node(H));
        assert_eq!(g.link(s, r), 0);
        assert_eq!(g.link(d, r), 1);
        let routes = g.routes();
        assert_eq!(routes, Routes::compute(&[H, R, H], &[(0, 1), (2, 1)]));
        assert_eq!(routes.nodes(s, d), Some(vec![0, 1, 2]));
        assert_eq!(
            routes.path(d, s),
            Some(vec![(1, Dir::Forward), (0, Dir::Reverse)])
        );
        // Unreachable: a host in the middle.
        let mut g = Graph::default();
        let (x, h, y) = (g.node(H), g.node(H), g.node(H));
        g.link(x, h);
        g.link(h, y);
        assert_eq!(g.routes().nodes(x, y), None);
    }

    /// The rule written the plain way: a full nodes x nodes table.
    fn full_table(kinds: &[NodeKind], ends: &[(usize, usize)]) -> Vec<Option<(usize, Dir)>> {
        let n = kinds.len();
        let mut adj: Vec<Vec<(usize, Dir, usize)>> = vec![Vec::new(); n];
        for (l, &(a, b)) in ends.iter().enumerate() {
            if a != b {
                adj[a].push((l, Dir::Forward, b));
                adj[b].push((l, Dir::Reverse, a));
            }
        }
        let mut next = vec![None; n * n];
        for dst in 0..n {
            let mut dist = vec![usize::MAX; n];
            dist[dst] = 0;
            let mut queue = VecDeque::from([dst]);
            while let Some(u) = queue.pop_front() {
                if u != dst && kinds[u] != NodeKind::Router {
                    continue;
                }
                for &(_, _, v) in &adj[u] {
                    if dist[v] == usize::MAX {
                        dist[v] = dist[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for s in 0..n {
                if s == dst || dist[s] == usize::MAX {
                    continue;
                }
                next[s * n + dst] = adj[s]
                    .iter()
                    .find(|&&(_, _, v)| {
                        dist[v] == dist[s] - 1 && (v == dst || kinds[v] == NodeKind::Router)
                    })
                    .map(|&(l, d, _)| (l, d));
            }
        }
        next
    }

    #[test]
    fn same_hops_as_a_full_table_on_random_graphs() {
        // Small random graphs, dense enough for ties, parallel links,
        // multi-homed and isolated hosts and unreachable pairs.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as usize
        };
        let (mut multi, mut stub, mut none) = (0, 0, 0);
        for _ in 0..400 {
            let n = 2 + next(12);
            let kinds: Vec<NodeKind> = (0..n).map(|_| if next(3) == 0 { R } else { H }).collect();
            let ends: Vec<(usize, usize)> = (0..next(3 * n)).map(|_| (next(n), next(n))).collect();
            let want = full_table(&kinds, &ends);
            let r = Routes::compute(&kinds, &ends);
            for s in 0..n {
                for d in 0..n {
                    assert_eq!(
                        r.next_hop(s, d),
                        want[s * n + d],
                        "{kinds:?} {ends:?} {s}->{d}"
                    );
                }
            }
            for t in &r.target {
                match t {
                    Target::Column(_) => multi += 1,
                    Target::Stub { .. } => stub += 1,
                    Target::Isolated => none += 1,
                }
            }
        }
        // Every kind of destination was exercised.
        assert!(
            multi > 100 && stub > 100 && none > 100,
            "{multi} {stub} {none}"
        );
    }

    #[test]
    fn a_million_hosts_fit() {
        // A star of a million hosts on one router: one column of one row.
        let n = 1_000_001;
        let mut kinds = vec![H; n];
        kinds[0] = R;
        let ends: Vec<(usize, usize)> = (1..n).map(|h| (h, 0)).collect();
        let r = Routes::compute(&kinds, &ends);
        assert_eq!(r.cols.len(), 1);
        assert_eq!(r.nodes(1, n - 1), Some(vec![1, 0, n - 1]));
        assert_eq!(r.next_hop(0, 500_000), Some((499_999, Dir::Reverse)));
    }
}
