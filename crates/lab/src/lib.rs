//! Strata's lab: load generation that measures what a user would see,
//! faults during it, a checker for what the store answered, and reports
//! that say why a target broke. Must not know the node's internals: it
//! speaks HTTP and reads `/metrics` only (operator commands are
//! `strata-ctl`'s).
//!
//! Six rooms, each importing only those above it in this table:
//!
//! | module | owns |
//! | --- | --- |
//! | `units` | durations, sizes and counts on the command line and in reports |
//! | `check` | Jepsen-style histories (`history`), their checker (`checker`), the checked run's clients (`run`) |
//! | `nemesis` | local clusters (`local`), the fault proxy, the fault grammar and its injector (`schedule`, `fault`, `during`), campaigns; faults recorded in the history the checker reads |
//! | `report` | the report's model, its renderings (Markdown, HTML, charts, dashboard, heap), the nodes' `/metrics` sampled during a run (`scrape`), the sections for faults and checks (`alongside`) |
//! | `load` | the driver, schedule, timer, workloads, node choice, slowest requests, CPU |
//! | `experiment` | `strata load` (`trial`), `sweep`, `verdict`, `slo`, `soak`, `demo`, `calibrate`, `strata cluster check` |

pub mod check;
pub mod experiment;
pub mod load;
pub mod nemesis;
pub mod report;
pub mod units;
