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

/// Most nodes a scenario may have: the table is `nodes^2` entries.
pub const MAX_NODES: usize = 4096;

const NONE: u32 = u32::MAX;

/// Next hops for every (node, destination) pair.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routes {
    n: usize,
    /// `next[node * n + dst]`: `link << 1 | reverse`, or `NONE`.
    next: Vec<u32>,
    /// Link endpoints `(a, b)`, to follow a route.
    ends: Vec<(usize, usize)>,
}

impl Routes {
    /// Computes the table for nodes of the given kinds joined by links
    /// `ends[i] = (a, b)`. Self-links are ignored.
    pub fn compute(kinds: &[NodeKind], ends: &[(usize, usize)]) -> Routes {
        let n = kinds.len();
        // Adjacency in link-index order: (link, dir, neighbour).
        let mut adj: Vec<Vec<(usize, Dir, usize)>> = vec![Vec::new(); n];
        for (l, &(a, b)) in ends.iter().enumerate() {
            if a != b && a < n && b < n {
                adj[a].push((l, Dir::Forward, b));
                adj[b].push((l, Dir::Reverse, a));
            }
        }
        let mut next = vec![NONE; n * n];
        let mut dist = vec![usize::MAX; n];
        let mut queue = VecDeque::new();
        for dst in 0..n {
            // Hop counts to `dst` over paths whose inner nodes are routers:
            // a breadth-first search from `dst` that expands only `dst`
            // itself and routers.
            dist.iter_mut().for_each(|d| *d = usize::MAX);
            dist[dst] = 0;
            queue.push_back(dst);
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
                let hop = adj[s].iter().find(|&&(_, _, v)| {
                    dist[v] == dist[s] - 1 && (v == dst || kinds[v] == NodeKind::Router)
                });
                if let Some(&(l, d, _)) = hop {
                    next[s * n + dst] = (l as u32) << 1 | u32::from(d == Dir::Reverse);
                }
            }
        }
        Routes {
            n,
            next,
            ends: ends.to_vec(),
        }
    }

    /// The link and direction `node` sends on to reach `dst`; `None` if
    /// `node == dst`, `dst` is unreachable or either index is out of range.
    pub fn next_hop(&self, node: usize, dst: usize) -> Option<(usize, Dir)> {
        if node >= self.n || dst >= self.n {
            return None;
        }
        match self.next[node * self.n + dst] {
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
}
