//! `strata report judge DIR`: a sweep's verdict judged again from its
//! report directory alone (`report.json`, or a corpus sweep's
//! `report.json.zst`), by this build's rules (`verdict::replay`). Prints
//! the verdict, and whether it is the one the report recorded. Owns the
//! command; the judging is the verdict's.

use std::path::PathBuf;

use crate::experiment::verdict::replay::replay;

#[derive(clap::Args, Clone, Debug)]
pub struct JudgeArgs {
    /// A sweep's report directory (or its report.json / report.json.zst).
    pub dir: PathBuf,
    /// Print the verdict as JSON: cause, cause_node, verdict, trial_rate,
    /// the report's schema, and the verdict it recorded.
    #[arg(long)]
    pub json: bool,
}

/// What `strata report judge --json` prints.
#[derive(serde::Serialize)]
struct Judged<'a> {
    schema: u32,
    cause: &'a str,
    cause_node: Option<&'a str>,
    verdict: &'a str,
    trial_rate: Option<f64>,
    recorded_cause: Option<&'a str>,
    recorded_cause_node: Option<&'a str>,
    recorded_verdict: Option<&'a str>,
    /// The verdict judged now is, word for word, the one recorded.
    same_as_recorded: bool,
}

pub fn run(a: &JudgeArgs) -> Result<(), String> {
    let r = crate::report::read_any(&a.dir).map_err(|e| e.to_string())?;
    let v = replay(&r).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    let same = r.verdict.as_deref() == Some(v.text.as_str())
        && r.cause.as_deref() == Some(v.cause.as_str())
        && r.cause_node == v.node;
    if a.json {
        let j = Judged {
            schema: r.schema,
            cause: &v.cause,
            cause_node: v.node.as_deref(),
            verdict: &v.text,
            trial_rate: v.trial_rate,
            recorded_cause: r.cause.as_deref(),
            recorded_cause_node: r.cause_node.as_deref(),
            recorded_verdict: r.verdict.as_deref(),
            same_as_recorded: same,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&j).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    println!("{}", v.text);
    println!();
    println!(
        "cause: {}{}",
        v.cause,
        v.node
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    );
    println!(
        "{}",
        if same {
            "the verdict the report recorded, word for word".to_string()
        } else {
            format!(
                "the report recorded another (schema {}): cause {}{}",
                r.schema,
                r.cause.as_deref().unwrap_or("none"),
                r.cause_node
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )
        }
    );
    Ok(())
}
