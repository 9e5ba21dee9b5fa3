//! The experiments: the commands that put the other rooms together to
//! answer a question about a target. A `trial` (`strata load`) offers one
//! rate; a `sweep` searches for the breaking point (`load::search`), holding each
//! trial to objectives (`slo`) and naming why the target broke
//! (`verdict`); `soak` holds a share of it for hours; `demo` shows all of
//! it on a local cluster; `calibrate` fits the simulator to a live node;
//! `check` is `strata cluster check`; `worker` is `strata worker` and the
//! controller's side of it, a trial split among several generators. Owns running and judging
//! experiments; must not generate load itself (`load`), inject faults
//! itself (`nemesis`), render reports (`report`) nor know the node's
//! internals.
//!
//! | module | owns |
//! | --- | --- |
//! | `target` | the target, workload and pacing arguments every run takes |
//! | `trial` | `strata load`, its arguments, a trial's report |
//! | `sweep` | `strata sweep`: its trials, the breaking point (which rate next is `load::search`'s) |
//! | `slo` | objectives and judging a trial |
//! | `verdict` | why the target broke, from the readings and the slowest requests |
//! | `judge` | `strata report judge`: a sweep's verdict again, from its report |
//! | `corpus` | recorded sweeps' labels, and `strata report corpus`: the verdict's score on them |
//! | `soak` | `strata soak`: a long run and its judgement |
//! | `demo` | `strata demo` |
//! | `calibrate` | `strata calibrate`: a node's (or a cluster's) model for the simulator |
//! | `model_check` | a sweep's check of that model: its lower trials predict its breaking point |
//! | `check` | `strata cluster check`'s arguments and output |
//! | `worker` | `strata worker`, and a trial split among workers and merged |

pub mod calibrate;
pub mod check;
pub mod corpus;
pub mod demo;
pub mod judge;
pub mod model_check;
pub mod slo;
pub mod soak;
pub mod sweep;
pub mod target;
pub mod trial;
pub mod verdict;
pub mod worker;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_duration_flag_takes_units() {
        use clap::Parser;
        #[derive(Parser)]
        struct Sweep {
            #[command(flatten)]
            a: sweep::SweepArgs,
        }
        #[derive(Parser)]
        struct Load {
            #[command(flatten)]
            a: trial::LoadArgs,
        }
        let s = Sweep::try_parse_from([
            "x",
            "http://a:1",
            "--duration",
            "30s",
            "--warmup",
            "1m",
            "--pause",
            "500ms",
        ])
        .unwrap();
        assert_eq!(
            (s.a.duration, s.a.target.warmup, s.a.pause),
            (30.0, 60.0, 0.5)
        );
        let s = Sweep::try_parse_from(["x", "http://a:1", "--duration", "7"]).unwrap();
        assert_eq!((s.a.duration, s.a.target.warmup), (7.0, 0.0));
        let l = Load::try_parse_from([
            "x",
            "http://a:1",
            "--clients",
            "4",
            "--think",
            "250ms",
            "--duration",
            "2m",
            "--drop-after",
            "250ms",
        ])
        .unwrap();
        assert_eq!((l.a.think, l.a.duration), (0.25, 120.0));
        assert_eq!(l.a.target.drop_after, 0.25);
        let l = Load::try_parse_from(["x", "http://a:1", "--fault", "pause:1@1m+500ms"]).unwrap();
        assert_eq!(l.a.during.faults[0].at, Duration::from_secs(60));
        assert_eq!(l.a.during.faults[0].hold, Some(Duration::from_millis(500)));
        assert!(Load::try_parse_from(["x", "http://a:1", "--duration", "3 fortnights"]).is_err());
    }
}
