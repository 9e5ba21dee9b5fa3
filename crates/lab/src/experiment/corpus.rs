//! The corpus: recorded sweeps of real processes, each with the cause put
//! there on purpose and how (`label.json` beside its `report.json.zst`),
//! and each injected sweep beside a nothing-injected control swept right
//! before or after it. `score` judges every sweep again
//! (`verdict::replay`) and counts how often the verdict named what was
//! put there: first, in its top three, "cannot tell", and both causes of
//! a two-cause sweep in the top three. A sweep whose breaking point is at
//! least `NOT_THE_LIMIT` of its control's (a sweep no rate of which met
//! the objective counts as 0) broke where the control did:
//! its injected cause was not the limit, and the control's causes count
//! as right beside it. Pure: the same corpus gives the same score on the
//! same build. `strata report corpus DIR` prints the table. Owns the
//! label's shape and the score; must not run sweeps (the recorder is
//! `crates/strata/tests/diagnosis.rs`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::experiment::verdict::{replay::replay, Verdict};
use crate::report::model::Report;

/// The label's name in a sweep's directory.
pub const LABEL: &str = "label.json";

/// What was put into a recorded sweep, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Label {
    /// The mechanism's short name (`slow-fsync-strace`); a control's is
    /// its scenario's with `control-` before it.
    pub mechanism: String,
    /// What was put there, in words.
    pub injected: String,
    /// The causes the verdict must name: one, or two at once. A
    /// control's are what its limit is expected to be.
    pub causes: Vec<Expected>,
    /// Whether this sweep is a control (nothing injected).
    pub control: bool,
    /// An injected sweep's control: its directory's name.
    pub beside: Option<String>,
    /// The generator and the nodes pinned to cores of their own
    /// (emulating a machine with idle cores).
    pub pinned: bool,
    /// RFC 3339, UTC; the build that recorded it (`git describe`), and
    /// the machine's 1-minute load average when it started.
    pub recorded_at: String,
    pub build: String,
    pub load_before: Option<f64>,
}

/// A cause a verdict must name: any of `cause` (`fsync|io`), on `node`
/// when given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    pub cause: Vec<String>,
    pub node: Option<String>,
}

impl Expected {
    fn named(&self, cause: &str, node: Option<&str>) -> bool {
        self.cause.iter().any(|c| c == cause)
            && (self.node.is_none() || self.node.as_deref() == node)
    }
}

/// A sweep whose breaking point is at least this share of its control's
/// broke where the control did (the same sweep run twice on this machine
/// differed by up to 1.44×: docs/benchmarks.md, "The same sweep, twice").
pub const NOT_THE_LIMIT: f64 = 0.7;

/// One recorded sweep, judged.
#[derive(Clone, Debug)]
pub struct Judged {
    pub dir: PathBuf,
    pub label: Label,
    pub report: Report,
    pub verdict: Verdict,
    /// Its injected cause was not the limit (its control broke as low).
    pub not_the_limit: bool,
    /// The verdict's first cause is right; all of its causes are in the
    /// verdict's top three.
    pub first: bool,
    pub top3: bool,
    /// Every labelled cause in the top three, whether or not it was the
    /// limit (a two-cause sweep is judged on this).
    pub all_in_top3: bool,
}

/// The corpus's score.
#[derive(Clone, Debug, Default)]
pub struct Score {
    pub sweeps: Vec<Judged>,
}

impl Score {
    fn injected(&self) -> impl Iterator<Item = &Judged> {
        self.sweeps.iter().filter(|j| !j.label.control)
    }
    /// Injected sweeps; of them, the cause first, in the top three,
    /// "cannot tell".
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let n = self.injected().count();
        let first = self.injected().filter(|j| j.first).count();
        let top3 = self.injected().filter(|j| j.top3).count();
        let unknown = self
            .injected()
            .filter(|j| j.verdict.cause == "unknown")
            .count();
        (n, first, top3, unknown)
    }
    /// Two-cause sweeps, and those with both in the top three.
    pub fn two_causes(&self) -> (usize, usize) {
        let two: Vec<&Judged> = self
            .injected()
            .filter(|j| j.label.causes.len() > 1)
            .collect();
        (two.len(), two.iter().filter(|j| j.all_in_top3).count())
    }
    /// Mechanisms swept more than once, and of them those whose every
    /// sweep's verdict named the same cause (and node).
    pub fn repeatable(&self) -> (usize, usize) {
        type Named<'a> = (&'a str, Option<&'a str>);
        let mut by: Vec<(&str, Vec<Named>)> = Vec::new();
        for j in self.injected() {
            let named = (j.verdict.cause.as_str(), j.verdict.node.as_deref());
            match by.iter_mut().find(|(m, _)| *m == j.label.mechanism) {
                Some((_, v)) => v.push(named),
                None => by.push((&j.label.mechanism, vec![named])),
            }
        }
        let twice: Vec<_> = by.iter().filter(|(_, v)| v.len() > 1).collect();
        let same = twice
            .iter()
            .filter(|(_, v)| v.iter().all(|x| *x == v[0]))
            .count();
        (twice.len(), same)
    }

    /// Distinct mechanisms among the injected sweeps.
    pub fn mechanisms(&self) -> usize {
        let mut m: Vec<&str> = self
            .injected()
            .map(|j| j.label.mechanism.as_str())
            .collect();
        m.sort();
        m.dedup();
        m.len()
    }
}

/// Every sweep directory under `dir` (those holding a label), sorted.
pub fn sweep_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let p = e.map_err(|e| e.to_string())?.path();
        if p.join(LABEL).exists() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn read_label(dir: &Path) -> Result<Label, String> {
    let p = dir.join(LABEL);
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
}

/// The causes the verdict ranks first, second and third (the first is
/// the one it names; `unknown` names none).
pub fn top(v: &Verdict, n: usize) -> Vec<(String, Option<String>)> {
    v.ranking
        .iter()
        .take(n)
        .map(|r| (r.cause.clone(), r.node.clone()))
        .collect()
}

/// Judge every sweep of the corpus at `dir` again.
pub fn score(dir: &Path) -> Result<Score, String> {
    let mut loaded = Vec::new();
    for d in sweep_dirs(dir)? {
        let label = read_label(&d)?;
        let report = crate::report::read_any(&d).map_err(|e| e.to_string())?;
        let verdict = replay(&report).map_err(|e| format!("{}: {e}", d.display()))?;
        loaded.push((d, label, report, verdict));
    }
    let name = |d: &Path| d.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut sweeps = Vec::new();
    for (d, label, report, verdict) in &loaded {
        let control = label.beside.as_ref().and_then(|b| {
            loaded
                .iter()
                .find(|(cd, ..)| name(cd).as_deref() == Some(b.as_str()))
        });
        // A sweep no rate of which met the objective broke below the
        // lowest rate it tried: 0 here. A control that broke there too
        // says the host, not the injected cause, set the limit.
        let not_the_limit = control.is_some_and(|(_, _, cr, _)| {
            report.breaking_point.unwrap_or(0.0) >= NOT_THE_LIMIT * cr.breaking_point.unwrap_or(0.0)
        });
        let mut accepted = label.causes.clone();
        if not_the_limit {
            if let Some((_, cl, _, _)) = control {
                accepted.extend(cl.causes.iter().cloned());
            }
        }
        let first = accepted
            .iter()
            .any(|e| e.named(&verdict.cause, verdict.node.as_deref()));
        let ranked = top(verdict, 3);
        // Each injected cause in the top three (a cause not the limit:
        // any accepted one).
        let in_top = |e: &Expected| ranked.iter().any(|(c, n)| e.named(c, n.as_deref()));
        let all_in_top3 = label.causes.iter().all(in_top);
        let top3 = if not_the_limit {
            accepted.iter().any(in_top)
        } else {
            all_in_top3
        };
        sweeps.push(Judged {
            dir: d.clone(),
            label: label.clone(),
            report: report.clone(),
            verdict: verdict.clone(),
            not_the_limit,
            first,
            top3,
            all_in_top3,
        });
    }
    Ok(Score { sweeps })
}

#[derive(clap::Args, Clone, Debug)]
pub struct CorpusArgs {
    /// The corpus directory (`corpus/sweeps` in the repository).
    pub dir: PathBuf,
    /// Also write the score as the floor the corpus test holds the
    /// verdict to (`corpus/floor.json`).
    #[arg(long)]
    pub write_floor: Option<PathBuf>,
}

/// The score as `corpus/floor.json` keeps it: the floor a change to a
/// rule may not go below.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    /// Injected sweeps, and of them: the cause first, in the top three,
    /// "cannot tell" (a ceiling), two-cause sweeps and those with both
    /// causes in the top three.
    pub sweeps: usize,
    pub first: usize,
    pub top3: usize,
    pub unknown: usize,
    pub two_causes: usize,
    pub both_in_top3: usize,
}

impl Score {
    /// This score as a floor.
    pub fn floor(&self) -> Floor {
        let (sweeps, first, top3, unknown) = self.counts();
        let (two_causes, both_in_top3) = self.two_causes();
        Floor {
            sweeps,
            first,
            top3,
            unknown,
            two_causes,
            both_in_top3,
        }
    }
}

fn expected_words(es: &[Expected]) -> String {
    es.iter()
        .map(|e| {
            format!(
                "{}{}",
                e.cause.join(" or "),
                e.node
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The table of a judged corpus, a row per sweep, and its score.
pub fn table(s: &Score) -> String {
    let mut out = String::from(
        "| sweep | injected | expected | breaking point | verdict (top three) | first | top 3 |\n| --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for j in &s.sweeps {
        let ranked = top(&j.verdict, 3)
            .iter()
            .map(|(c, n)| {
                format!(
                    "{c}{}",
                    n.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        out += &format!(
            "| {} | {}{} | {}{} | {} | {} [{}] | {} | {} |\n",
            j.dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            j.label.injected,
            if j.label.control { " (control)" } else { "" },
            expected_words(&j.label.causes),
            if j.not_the_limit {
                "; not the limit"
            } else {
                ""
            },
            j.report
                .breaking_point
                .map(|b| format!("{b:.0}/s"))
                .unwrap_or_else(|| "-".into()),
            j.verdict.cause,
            ranked,
            if j.first { "yes" } else { "**no**" },
            if j.top3 { "yes" } else { "**no**" },
        );
    }
    let (n, first, top3, unknown) = s.counts();
    let (two, both) = s.two_causes();
    let (twice, same) = s.repeatable();
    out += &format!(
        "\n{n} injected sweeps over {} mechanisms ({} controls): the cause first in {first}, in the top three in {top3}, \"cannot tell\" in {unknown}; both causes of a two-cause sweep in the top three in {both} of {two}; of {twice} mechanisms swept more than once, the same cause named every time in {same}.\n",
        s.mechanisms(),
        s.sweeps.len() - n
    );
    out
}

/// `strata report corpus DIR`.
pub fn run(a: &CorpusArgs) -> Result<(), String> {
    let s = score(&a.dir)?;
    print!("{}", table(&s));
    if let Some(p) = &a.write_floor {
        let json = serde_json::to_string_pretty(&s.floor()).map_err(|e| e.to_string())?;
        std::fs::write(p, json + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
        println!("The floor written to {}.", p.display());
    }
    Ok(())
}
