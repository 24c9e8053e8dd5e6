//! What in a scenario draws random numbers, so `pep sim run --seed` can say
//! when a seed changes nothing. Mirrors where `pep_sim::build` derives a
//! random stream from the seed.

use pep_sim::scenario::{LossSpec, MediumSpec, QueueSpec, SourceSpec};
use pep_sim::Scenario;

/// The parts of `sc` that draw from a seeded stream, named as the file
/// names them; empty when every seed gives the same run.
pub fn random_parts(sc: &Scenario) -> Vec<String> {
    let mut out = Vec::new();
    for l in &sc.links {
        for (dir, d) in [("forward", &l.forward), ("reverse", &l.reverse)] {
            let random_loss = match &d.loss {
                LossSpec::Bernoulli { p, .. } => *p > 0.0 && *p < 1.0,
                LossSpec::GilbertElliott { .. } => true,
                _ => false,
            };
            if random_loss {
                out.push(format!("link {:?} {dir}: random loss", l.name));
            }
            if queue_is_random(&d.queue) {
                out.push(format!("link {:?} {dir}: RED queue", l.name));
            }
        }
        if let MediumSpec::HalfDuplex { backoff } = l.medium {
            if backoff != pep_core::Duration::ZERO {
                out.push(format!("link {:?}: half-duplex backoff", l.name));
            }
        }
    }
    for n in &sc.nodes {
        if n.processing
            .as_ref()
            .is_some_and(|c| c.jitter != pep_core::Duration::ZERO)
        {
            out.push(format!("node {:?}: processing jitter", n.name));
        }
    }
    for f in &sc.flows {
        if matches!(f.source, SourceSpec::Pareto(_)) {
            out.push(format!("flow {:?}: Pareto source", f.name));
        }
    }
    for a in &sc.agents {
        // split-pair's local queue is RED unless it says otherwise.
        let red = a.params.get("local_queue").and_then(|v| v.as_str()) != Some("droptail");
        if a.kind == "split-pair" && red {
            out.push(format!("agent {:?}: RED local queue", a.name));
        }
    }
    out
}

fn queue_is_random(q: &QueueSpec) -> bool {
    match q {
        QueueSpec::Red(_) => true,
        QueueSpec::Sad { inner, .. } => queue_is_random(inner),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(extra: &str) -> Vec<String> {
        let text = format!(
            "[scenario]\nname = \"t\"\nduration = \"1s\"\n[[node]]\nname = \"a\"\n\
             [[node]]\nname = \"b\"\n[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"1Mbps\"\n\
             delay = \"1ms\"\n{extra}\n[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n"
        );
        random_parts(&Scenario::from_toml_str(&text, "t.toml").unwrap())
    }

    #[test]
    fn random_loss_and_red_are_named_and_a_plain_link_is_not() {
        assert!(parts("").is_empty());
        assert!(parts("loss = { kind = \"bernoulli\", p = 0 }").is_empty());
        assert_eq!(
            parts("forward.loss = { kind = \"bernoulli\", p = 0.01 }"),
            ["link \"a-b\" forward: random loss"]
        );
        assert_eq!(
            parts("reverse.queue = { kind = \"red\", auto = true }"),
            ["link \"a-b\" reverse: RED queue"]
        );
    }

    #[test]
    fn the_default_draws_nothing() {
        assert!(random_parts(&Scenario::builtin_default()).is_empty());
    }
}
