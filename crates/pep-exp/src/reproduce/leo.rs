//! `leo`: a study beyond the seeds (issue 35, item 4). Today's links and
//! today's TCP: end-to-end CUBIC, end-to-end BBR, a split PEP with BBR on
//! the satellite (or cellular) leg, and the two-node PEP with a BBR tunnel,
//! on a GEO path with random loss, the LEO preset and two real cellular
//! traces. No paper gives numbers for these runs and no formula predicts
//! most of them, so the study states no pass/fail claims: its results are
//! observations (docs/study-leo.md), read from each experiment's
//! `aggregate.csv` and charts. `--lab` runs the same points in the lab
//! (`pep_cli`'s `reproduce_lab`).

use super::{Claim, Paper};

pub(super) static PAPER: Paper = Paper {
    name: "leo",
    title: "Study: split PEPs and BBR on GEO, LEO and cellular links",
    citation: "Beyond the seeds (issue 35). LEO preset: docs/queues-and-links.md \
               (Mohan et al., WWW '24, for the 15 s reconfiguration period); cellular \
               traces: Winstein, Sivaraman and Balakrishnan, NSDI 2013 (mahimahi)",
    about: "One bulk download, Linux's TCP (the `linux` profile), in four \
            configurations: end-to-end CUBIC, end-to-end BBR, a split PEP at the \
            ground station with BBR on the satellite or cellular leg, and the two-node \
            PEP (split-pair) with a BBR tunnel; on (a) a GEO path (20 Mbit/s, 552 ms \
            RTT, 0.5 % random loss), (b) the LEO preset (100/10 Mbit/s, 15 s \
            reconfigurations with handover loss bursts), (c) the Verizon and T-Mobile \
            LTE downlink traces. Measured: goodput, the sender's retransmissions, and \
            at the bottleneck the drops, the queue (mean and 99th percentile, \
            packets) and the packets' queueing delay (median, 95th percentile). \
            `--lab` (root) runs every point in the lab too, the PEPs as the daemon. \
            Observations only: see docs/study-leo.md.",
    experiments: &["geo.toml", "leo.toml", "verizon.toml", "tmobile.toml"],
    claims,
};

fn claims() -> Vec<Claim> {
    vec![]
}
