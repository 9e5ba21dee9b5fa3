//! `strata cluster status URL`: every node's view of the cluster side by
//! side. Asks `URL` for `GET /v0/cluster`, then every member it lists, and
//! prints one matrix: a row per observer, a column per member, each cell
//! the state the observer holds for that member and how long ago it heard
//! from it, then the hints the observer keeps, then each observer's ranges
//! (anti-entropy's home sets): the keys it holds in each and how long ago
//! it was last in sync with each other replica. A member that does not
//! answer is a row saying so, not an error. Owns the asking and the table
//! (a pure function of the answers); must not judge the cluster's health
//! beyond showing what each node says.

use std::time::Duration;

use strata_api::human::bytes;
use strata_client::control;
use strata_client::control::same_url as same;

/// How long one node has to answer.
const TIMEOUT: Duration = Duration::from_secs(2);

#[derive(clap::Args, Clone, Debug)]
pub struct StatusArgs {
    /// Any member's URL, e.g. http://127.0.0.1:7001.
    pub url: String,
}

/// A node's `GET /v0/cluster`, its ranges and when each was last in sync
/// (typed once, in `strata-api`).
pub use strata_api::operate::{ClusterView, RangeView, Synced};

/// One member as a node sees it, and the hints it keeps for it (typed
/// once, in `strata-api`).
pub use strata_api::view::{Hints, Member as MemberView};

/// What one observer answered: its view, or why it did not.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// The URL asked.
    pub url: String,
    pub view: Result<ClusterView, String>,
}

/// Run `strata cluster status`.
pub fn status(args: &StatusArgs) -> Result<(), String> {
    let rows = observe(&args.url)?;
    print!("{}", format_table(&rows));
    Ok(())
}

/// Ask `url`, then every member it lists that is not itself. An error
/// only when `url` itself does not answer with a view.
pub fn observe(url: &str) -> Result<Vec<Observed>, String> {
    let first = fetch(url)?;
    let mut rows = vec![Observed {
        url: url.to_string(),
        view: Ok(first.clone()),
    }];
    for m in &first.head.members {
        if m.is_self || same(&m.url, &first.head.node) || same(&m.url, url) {
            continue;
        }
        rows.push(Observed {
            url: m.url.clone(),
            view: fetch(&m.url),
        });
    }
    Ok(rows)
}

/// One node's view.
pub fn fetch(url: &str) -> Result<ClusterView, String> {
    control::cluster_view(url, TIMEOUT)
}

/// The matrix: rows are observers (in the order of the members they
/// name), columns the members in the first view's order (then any only
/// another view names), cells `state last-heard`; `self` on the
/// diagonal, `-` where an observer does not list the member. Then the
/// hints each observer keeps, per member, where there are any.
pub fn format_table(rows: &[Observed]) -> String {
    // Columns: every member any view names, first view's order first.
    let mut cols: Vec<String> = Vec::new();
    for r in rows {
        if let Ok(v) = &r.view {
            for m in &v.head.members {
                if !cols.iter().any(|c| same(c, &m.url)) {
                    cols.push(m.url.trim_end_matches('/').to_string());
                }
            }
        }
    }
    // Each row's label: the observer's own advertised URL when it said.
    let label = |r: &Observed| match &r.view {
        Ok(v) => short(&v.head.node),
        Err(_) => short(&r.url),
    };
    // Rows in column order where they match a column, the rest after.
    let mut order: Vec<&Observed> = rows.iter().collect();
    let pos = |r: &Observed| {
        let u = match &r.view {
            Ok(v) => v.head.node.as_str(),
            Err(_) => r.url.as_str(),
        };
        cols.iter().position(|c| same(c, u)).unwrap_or(usize::MAX)
    };
    order.sort_by_key(|r| pos(r));

    let mut table: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["observer \\ member".to_string()];
    header.extend(cols.iter().map(|c| short(c)));
    header.push("hints".into());
    table.push(header);
    let mut unreachable: Vec<(String, String)> = Vec::new();
    let mut replication: Vec<(String, u64)> = Vec::new();
    let mut hint_lines: Vec<String> = Vec::new();
    let mut range_lines: Vec<String> = Vec::new();
    for r in &order {
        let v = match &r.view {
            Ok(v) => v,
            Err(e) => {
                unreachable.push((label(r), e.clone()));
                continue;
            }
        };
        replication.push((label(r), v.head.replication as u64));
        let mut row = vec![label(r)];
        for c in &cols {
            row.push(match v.head.members.iter().find(|m| same(&m.url, c)) {
                None => "-".into(),
                Some(m) if m.is_self => "self".into(),
                Some(m) => match m.last_heard_ms {
                    Some(ms) => format!("{} {}", m.state, ago(ms)),
                    None => format!("{} never", m.state),
                },
            });
        }
        let total = v.head.members.iter().fold(Hints::default(), |t, m| Hints {
            count: t.count + m.hints.count,
            bytes: t.bytes + m.hints.bytes,
            dropped: t.dropped + m.hints.dropped,
            ..t
        });
        row.push(hints(&total));
        table.push(row);
        for g in &v.ranges {
            let syncs: Vec<String> = g
                .synced
                .iter()
                .map(|s| match s.last_sync_ms_ago {
                    Some(ms) => format!("{} {} ago", short(&s.peer), ago(ms)),
                    None => format!("{} never", short(&s.peer)),
                })
                .collect();
            range_lines.push(format!(
                "  {} range {} ({} replicas): {} keys{}; in sync with {}",
                label(r),
                g.set.chars().take(8).collect::<String>(),
                g.members.len(),
                g.keys,
                if g.tree_ready { "" } else { ", tree building" },
                syncs.join(", ")
            ));
        }
        for m in &v.head.members {
            if m.hints != Hints::default() {
                hint_lines.push(format!(
                    "  {} holds for {}: {}",
                    label(r),
                    short(&m.url),
                    hints(&m.hints)
                ));
            }
        }
    }

    let mut out = String::new();
    let reps: Vec<u64> = replication.iter().map(|(_, r)| *r).collect();
    match reps.first() {
        Some(&r) if reps.iter().all(|&x| x == r) => out.push_str(&format!(
            "{} members, replication {r}; {} of {} observers answered\n",
            cols.len(),
            replication.len(),
            rows.len()
        )),
        Some(_) => out.push_str(&format!(
            "{} members; replication differs: {}; {} of {} observers answered\n",
            cols.len(),
            replication
                .iter()
                .map(|(n, r)| format!("{r} at {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            replication.len(),
            rows.len()
        )),
        None => out.push_str(&format!("no observer answered of {}\n", rows.len())),
    }
    out.push('\n');
    let (text, widths) = aligned(&table);
    out.push_str(&text);
    for (n, e) in &unreachable {
        out.push_str(&format!("{n:<w$}  unreachable: {e}\n", w = widths[0]));
    }
    if !hint_lines.is_empty() {
        out.push_str("\nhints waiting:\n");
        for l in hint_lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    if !range_lines.is_empty() {
        out.push_str("\nranges (anti-entropy):\n");
        for l in range_lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// Rows as left-aligned columns two spaces apart, one line each, and the
/// columns' widths.
pub(crate) fn aligned(rows: &[Vec<String>]) -> (String, Vec<usize>) {
    let widths: Vec<usize> = (0..rows.first().map_or(0, |r| r.len()))
        .map(|k| rows.iter().map(|r| r[k].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    (out, widths)
}

/// A URL without its scheme, for narrow columns.
pub(crate) fn short(url: &str) -> String {
    url.trim_end_matches('/')
        .trim_start_matches("http://")
        .to_string()
}

/// Milliseconds as a short age: `850ms`, `12.3s`, `4m05s`.
fn ago(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

fn hints(h: &Hints) -> String {
    let mut s = format!("{} ({})", h.count, bytes(h.bytes));
    if h.dropped > 0 {
        s.push_str(&format!(", {} dropped", h.dropped));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_api::view::Layout;

    /// A view from `json`, with an empty layout if it has none.
    fn view(json: &str) -> ClusterView {
        let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
        v.as_object_mut()
            .unwrap()
            .entry("layout")
            .or_insert_with(|| serde_json::to_value(Layout::default()).unwrap());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_matrix_of_three_views_and_an_unreachable_node() {
        let a = view(
            r#"{"node":"http://127.0.0.1:7001","replication":3,"members":[
              {"url":"http://127.0.0.1:7001","id":"9f","self":true,"state":"up","last_heard_ms":null,"hints":{"count":0,"bytes":0,"dropped":0}},
              {"url":"http://127.0.0.1:7002","id":"a1","self":false,"state":"up","last_heard_ms":12,"hints":{"count":0,"bytes":0,"dropped":0}},
              {"url":"http://127.0.0.1:7003","id":"b2","self":false,"state":"suspect","last_heard_ms":1840,"hints":{"count":3,"bytes":4200,"dropped":0}},
              {"url":"http://127.0.0.1:7004","id":"c3","self":false,"state":"down","last_heard_ms":245000,"hints":{"count":120,"bytes":3145728,"dropped":7}}],
              "ranges":[{"set":"00ff00ff00ff00ff","members":["http://127.0.0.1:7001","http://127.0.0.1:7002","http://127.0.0.1:7003"],"keys":5000,"tree_ready":true,
                "synced":[{"peer":"http://127.0.0.1:7002","last_sync_ms_ago":125000,"last":null},{"peer":"http://127.0.0.1:7003","last_sync_ms_ago":null,"last":null}]}]}"#,
        );
        let b = view(
            r#"{"node":"http://127.0.0.1:7002","replication":3,"members":[
              {"url":"http://127.0.0.1:7001","id":"9f","self":false,"state":"up","last_heard_ms":8,"hints":{"count":0,"bytes":0,"dropped":0}},
              {"url":"http://127.0.0.1:7002","id":"a1","self":true,"state":"up","last_heard_ms":null,"hints":{"count":0,"bytes":0,"dropped":0}},
              {"url":"http://127.0.0.1:7003","id":"b2","self":false,"state":"up","last_heard_ms":950},
              {"url":"http://127.0.0.1:7004","id":"c3","self":false,"state":"down","last_heard_ms":null}]}"#,
        );
        let c = view(
            r#"{"node":"http://127.0.0.1:7003","replication":3,"members":[
              {"url":"http://127.0.0.1:7003","id":"b2","self":true,"state":"up","last_heard_ms":null,"hints":{"count":0,"bytes":0,"dropped":0}},
              {"url":"http://127.0.0.1:7001","id":"9f","self":false,"state":"down","last_heard_ms":61000,"hints":{"count":0,"bytes":0,"dropped":0}}]}"#,
        );
        // Asked in an order unlike the columns: rows follow the columns.
        let rows = vec![
            Observed {
                url: "http://127.0.0.1:7002/".into(),
                view: Ok(b),
            },
            Observed {
                url: "http://127.0.0.1:7004".into(),
                view: Err(
                    "http://127.0.0.1:7004/v0/cluster: Connection refused (os error 111)".into(),
                ),
            },
            Observed {
                url: "http://127.0.0.1:7003".into(),
                view: Ok(c),
            },
            Observed {
                url: "http://127.0.0.1:7001".into(),
                view: Ok(a),
            },
        ];
        let want = "\
4 members, replication 3; 3 of 4 observers answered

observer \\ member  127.0.0.1:7001  127.0.0.1:7002  127.0.0.1:7003  127.0.0.1:7004  hints
127.0.0.1:7001     self            up 12ms         suspect 1.8s    down 4m05s      123 (3.0 MiB), 7 dropped
127.0.0.1:7002     up 8ms          self            up 950ms        down never      0 (0 B)
127.0.0.1:7003     down 1m01s      -               self            -               0 (0 B)
127.0.0.1:7004     unreachable: http://127.0.0.1:7004/v0/cluster: Connection refused (os error 111)

hints waiting:
  127.0.0.1:7001 holds for 127.0.0.1:7003: 3 (4.1 KiB)
  127.0.0.1:7001 holds for 127.0.0.1:7004: 120 (3.0 MiB), 7 dropped

ranges (anti-entropy):
  127.0.0.1:7001 range 00ff00ff (3 replicas): 5000 keys; in sync with 127.0.0.1:7002 2m05s ago, 127.0.0.1:7003 never
";
        let got = format_table(&rows);
        assert_eq!(got, want, "\n{got}");
    }

    #[test]
    fn differing_replication_and_no_answers_are_said() {
        let one = |node: &str, r: usize| Observed {
            url: node.into(),
            view: Ok(ClusterView {
                head: strata_api::view::ClusterHead {
                    node: node.into(),
                    replication: r,
                    layout: Layout::default(),
                    members: vec![MemberView {
                        url: node.into(),
                        id: String::new(),
                        is_self: true,
                        state: "up".into(),
                        last_heard_ms: None,
                        connections: 0,
                        hints: Hints::default(),
                    }],
                },
                ranges: vec![],
                stream: Default::default(),
                change: None,
            }),
        };
        let t = format_table(&[one("http://a:1", 3), one("http://b:2", 2)]);
        assert!(
            t.starts_with(
                "2 members; replication differs: 3 at a:1, 2 at b:2; 2 of 2 observers answered\n"
            ),
            "{t}"
        );
        let t = format_table(&[Observed {
            url: "http://a:1".into(),
            view: Err("refused".into()),
        }]);
        assert_eq!(
            t,
            "no observer answered of 1\n\nobserver \\ member  hints\na:1                unreachable: refused\n"
        );
    }

    #[test]
    fn ages_and_sizes() {
        assert_eq!(ago(0), "0ms");
        assert_eq!(ago(999), "999ms");
        assert_eq!(ago(1000), "1.0s");
        assert_eq!(ago(59_949), "59.9s");
        assert_eq!(ago(60_000), "1m00s");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
    }
}
