//! `pep sim sweep slurm`: a planned sweep (see [`crate::shard`]) as two
//! Slurm batch scripts: a job array whose task `SLURM_ARRAY_TASK_ID` runs
//! shard `id/N`, a few runs each, and a merge job that waits for the whole
//! array (`afterok`), with `submit.sh` submitting both.

use std::path::{Path, PathBuf};

/// What the scripts run and where.
#[derive(Clone, Debug)]
pub struct SlurmOptions {
    /// The `pep` binary the jobs run (an absolute path the nodes see).
    pub pep: PathBuf,
    /// The sweep's directory (absolute, shared with the nodes).
    pub dir: PathBuf,
    /// Runs per array task.
    pub tasks_per_job: usize,
    /// CPUs per array task (its `--jobs`).
    pub cpus: usize,
    pub partition: Option<String>,
    /// `--time` per array task, as Slurm writes it ("1:00:00").
    pub time: Option<String>,
}

/// The scripts' texts: `(file name, text)`, and the array's size.
pub fn scripts(name: &str, runs: usize, o: &SlurmOptions) -> (Vec<(String, String)>, usize) {
    let shards = runs.div_ceil(o.tasks_per_job.max(1)).max(1);
    let dir = shell_quote(&o.dir.display().to_string());
    let pep = shell_quote(&o.pep.display().to_string());
    let head = |job: &str| {
        let mut s = format!(
            "#!/bin/bash\n#SBATCH --job-name={}\n#SBATCH --output={}/slurm/%x-%A_%a.out\n",
            slug(&format!("pep-{name}-{job}")),
            o.dir.display()
        );
        if let Some(p) = &o.partition {
            s.push_str(&format!("#SBATCH --partition={p}\n"));
        }
        if let Some(t) = &o.time {
            s.push_str(&format!("#SBATCH --time={t}\n"));
        }
        s
    };
    let array = format!(
        "{}#SBATCH --array=1-{shards}\n#SBATCH --cpus-per-task={cpus}\n\
         # Array task i runs shard i/{shards}: runs i, i+{shards}, ... of plan.json.\n\
         set -euo pipefail\n\
         exec {pep} sim sweep run {dir} --shard \"$SLURM_ARRAY_TASK_ID/{shards}\" \
         --jobs \"${{SLURM_CPUS_PER_TASK:-{cpus}}}\" --quiet\n",
        head("runs"),
        cpus = o.cpus.max(1),
    );
    let merge = format!(
        "{}# After every array task succeeded (submit.sh: --dependency=afterok).\n\
         set -euo pipefail\nexec {pep} sim sweep merge {dir}\n",
        head("merge")
    );
    let submit = format!(
        "#!/bin/sh\n# Submits the run array, then the merge job that waits for it.\n\
         set -e\n\
         array=$(sbatch --parsable {dir}/runs.sbatch)\n\
         array=${{array%%;*}}\n\
         merge=$(sbatch --parsable --dependency=afterok:$array {dir}/merge.sbatch)\n\
         echo \"submitted array $array ({shards} tasks) and merge job ${{merge%%;*}}\"\n"
    );
    (
        vec![
            ("runs.sbatch".into(), array),
            ("merge.sbatch".into(), merge),
            ("submit.sh".into(), submit),
        ],
        shards,
    )
}

/// Writes the scripts into the sweep's directory (and its `slurm/` for
/// the jobs' logs); the shell scripts executable.
pub fn write(dir: &Path, files: &[(String, String)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("slurm"))?;
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

/// A job name of letters, digits, `-` and `_`.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `s` as one word for sh: single quotes, a quote inside closed and
/// reopened.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_array_covers_every_run_with_at_most_k_each() {
        let o = SlurmOptions {
            pep: "/opt/pep/bin/pep".into(),
            dir: "/shared/it's here".into(),
            tasks_per_job: 4,
            cpus: 2,
            partition: Some("short".into()),
            time: None,
        };
        let (files, shards) = scripts("grid", 18, &o);
        assert_eq!(shards, 5);
        let runs = &files[0].1;
        assert!(runs.contains("#SBATCH --array=1-5\n"), "{runs}");
        assert!(runs.contains("#SBATCH --partition=short\n"));
        assert!(runs.contains("--shard \"$SLURM_ARRAY_TASK_ID/5\""));
        assert!(runs.contains("'/shared/it'\\''s here'"), "{runs}");
        assert!(files[2].1.contains("--dependency=afterok:$array"));
        assert_eq!(scripts("g", 16, &o).1, 4);
        assert_eq!(scripts("g", 0, &o).1, 1);
    }
}
