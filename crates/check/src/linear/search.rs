//! The search for an order (Wing and Gong; Lowe's just-in-time
//! linearization): the operations' calls and returns in one list by time.
//! The operations that may come next are those called before the earliest
//! return still in the list. A read among them that returns the state is
//! placed at once (never worse: the state cannot come back once changed,
//! values being unique); otherwise each write or delete among them is
//! tried, the one whose value must be seen soonest first (the earliest end
//! of the write and its reads, the order Gibbons and Korach's clusters
//! take), and an optional operation whose return is the earliest may be
//! left out. Placing takes the operation's call and return out of the
//! list; a dead end undoes the last choice and tries the next. A
//! configuration (the operations placed or left out, the register's
//! state) seen before is not explored again: the set is kept as a 128-bit
//! Zobrist hash. Owns the walk; must not prepare or explain.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

use super::prepare::{Action, Prepared};

/// The register's state: a value number, or absent (as every key is
/// before its history).
const ABSENT: u32 = u32::MAX;
const NIL: u32 = u32::MAX;

/// Where the search got stuck furthest: the operation whose return it
/// could not pass, and the earliest call still unplaced then.
#[derive(Clone, Copy, Debug)]
pub struct Stuck {
    pub op: usize,
    pub frontier: u64,
}

#[derive(Clone, Copy, Debug)]
pub enum Found {
    Linearizable { steps: u64 },
    Violation { steps: u64, stuck: Stuck },
    Unknown { steps: u64 },
}

impl Found {
    pub fn is_linearizable(&self) -> bool {
        matches!(self, Found::Linearizable { .. })
    }
}

/// The key is already random: hash it as it is.
#[derive(Default)]
struct Passthrough(u64);

impl Hasher for Passthrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 ^= v as u64;
    }
    fn write_u32(&mut self, v: u32) {
        self.0 ^= u64::from(v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The state after `a`, if the register allows it in `state`.
fn step(state: u32, a: Action) -> Option<u32> {
    match a {
        Action::Write(v) => Some(v),
        Action::Delete => Some(ABSENT),
        Action::Read(Some(v)) => (state == v).then_some(v),
        Action::Read(None) => (state == ABSENT).then_some(ABSENT),
    }
}

/// A move: place an operation, or leave an optional one out.
#[derive(Clone, Copy)]
enum Move {
    Place(u32),
    LeaveOut(u32),
}

/// One decision on the stack: the move, the state before it, and the
/// moves not tried yet at that point.
struct Frame {
    mv: Move,
    before: u32,
    rest: Vec<Move>,
}

/// The linked list of events (calls and returns by time).
struct Events {
    next: Vec<u32>,
    prev: Vec<u32>,
    call_ev: Vec<u32>,
    ret_ev: Vec<u32>,
    is_call: Vec<bool>,
    op_of: Vec<u32>,
    time: Vec<u64>,
}

impl Events {
    fn new(p: &Prepared) -> Events {
        let n = p.ops.len();
        // Calls before returns at the same instant (those overlap).
        let mut evs: Vec<(u64, u8, u32)> = Vec::with_capacity(2 * n);
        for (i, o) in p.ops.iter().enumerate() {
            evs.push((o.call, 0, i as u32));
            evs.push((o.ret, 1, i as u32));
        }
        evs.sort_unstable();
        let len = evs.len() + 1;
        let mut e = Events {
            next: vec![NIL; len],
            prev: vec![NIL; len],
            call_ev: vec![0; n],
            ret_ev: vec![0; n],
            is_call: vec![false; len],
            op_of: vec![0; len],
            time: vec![0; len],
        };
        for (k, &(t, kind, op)) in evs.iter().enumerate() {
            let i = k + 1;
            e.prev[i] = k as u32;
            e.next[k] = i as u32;
            e.is_call[i] = kind == 0;
            e.op_of[i] = op;
            e.time[i] = t;
            if kind == 0 {
                e.call_ev[op as usize] = i as u32;
            } else {
                e.ret_ev[op as usize] = i as u32;
            }
        }
        e
    }

    fn unlink(&mut self, i: u32) {
        let (p, nx) = (self.prev[i as usize], self.next[i as usize]);
        self.next[p as usize] = nx;
        if nx != NIL {
            self.prev[nx as usize] = p;
        }
    }

    fn relink(&mut self, i: u32) {
        let (p, nx) = (self.prev[i as usize], self.next[i as usize]);
        self.next[p as usize] = i;
        if nx != NIL {
            self.prev[nx as usize] = i;
        }
    }

    /// Take operation `op` out (its call, then its return).
    fn lift(&mut self, op: u32) {
        self.unlink(self.call_ev[op as usize]);
        self.unlink(self.ret_ev[op as usize]);
    }

    /// Put it back (the reverse order).
    fn unlift(&mut self, op: u32) {
        self.relink(self.ret_ev[op as usize]);
        self.relink(self.call_ev[op as usize]);
    }

    fn empty(&self) -> bool {
        self.next[0] == NIL
    }
}

/// Search for an order of `p`'s operations, the key absent before them;
/// give up at `deadline`.
pub fn search(p: &Prepared, deadline: Option<Instant>) -> Found {
    let n = p.ops.len();
    let mut ev = Events::new(p);
    let mut seed = 0x5EED_u64 ^ n as u64;
    let keys: Vec<(u128, u128)> = (0..n)
        .map(|_| {
            let a = (u128::from(splitmix(&mut seed)) << 64) | u128::from(splitmix(&mut seed));
            let b = (u128::from(splitmix(&mut seed)) << 64) | u128::from(splitmix(&mut seed));
            (a, b)
        })
        .collect();
    // The order writes are tried in: the earliest end among a write and
    // the reads of its value.
    let mut first_end: std::collections::HashMap<u32, u64> = Default::default();
    for o in &p.ops {
        if let Action::Write(v) | Action::Read(Some(v)) = o.action {
            let e = first_end.entry(v).or_insert(u64::MAX);
            *e = (*e).min(o.ret);
        }
    }
    let priority: Vec<u64> = p
        .ops
        .iter()
        .map(|o| match o.action {
            Action::Write(v) => first_end[&v],
            _ => o.ret,
        })
        .collect();
    let mut seen: HashSet<(u128, u32), BuildHasherDefault<Passthrough>> = HashSet::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut state = ABSENT;
    let mut hash: u128 = 0;
    let mut steps: u64 = 0;
    let mut deepest: Option<(usize, Stuck)> = None;
    // Apply a move if it leads somewhere new: (state, hash) after it.
    let apply =
        |mv: Move, state: u32, hash: u128, seen: &mut HashSet<_, _>| -> Option<(u32, u128)> {
            let (after, h) = match mv {
                Move::Place(op) => (
                    step(state, p.ops[op as usize].action)?,
                    hash ^ keys[op as usize].0,
                ),
                Move::LeaveOut(op) => (state, hash ^ keys[op as usize].1),
            };
            seen.insert((h, after)).then_some((after, h))
        };
    let op_of = |mv: Move| match mv {
        Move::Place(op) | Move::LeaveOut(op) => op,
    };
    'walk: loop {
        if ev.empty() {
            return Found::Linearizable { steps };
        }
        if steps & 1023 == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
            return Found::Unknown { steps };
        }
        // The operations that may come next, and the earliest return.
        let mut forced = None;
        let mut moves: Vec<Move> = Vec::new();
        let mut e = ev.next[0];
        while ev.is_call[e as usize] {
            let op = ev.op_of[e as usize];
            match p.ops[op as usize].action {
                Action::Read(_) => {
                    if forced.is_none() && step(state, p.ops[op as usize].action).is_some() {
                        forced = Some(op);
                    }
                }
                _ => moves.push(Move::Place(op)),
            }
            e = ev.next[e as usize];
        }
        let first_ret = ev.op_of[e as usize];
        let mut moves = match forced {
            // A read of the state: placed, no other move worth trying.
            Some(op) => vec![Move::Place(op)],
            None => {
                moves.sort_by_key(|&m| std::cmp::Reverse(priority[op_of(m) as usize]));
                if p.ops[first_ret as usize].optional {
                    moves.insert(0, Move::LeaveOut(first_ret));
                }
                moves
            }
        };
        // `moves` is tried from its end.
        while let Some(mv) = moves.pop() {
            if let Some((after, h)) = apply(mv, state, hash, &mut seen) {
                steps += 1;
                stack.push(Frame {
                    mv,
                    before: state,
                    rest: moves,
                });
                ev.lift(op_of(mv));
                state = after;
                hash = h;
                continue 'walk;
            }
        }
        if deepest.is_none_or(|(d, _)| stack.len() > d) {
            let frontier = ev.time[ev.next[0] as usize];
            deepest = Some((
                stack.len(),
                Stuck {
                    op: first_ret as usize,
                    frontier,
                },
            ));
        }
        // A dead end: undo choices until one has a move left to try.
        loop {
            let Some(mut f) = stack.pop() else {
                let stuck = deepest.map(|(_, s)| s).expect("stuck somewhere");
                return Found::Violation { steps, stuck };
            };
            let op = op_of(f.mv);
            ev.unlift(op);
            state = f.before;
            hash ^= match f.mv {
                Move::Place(_) => keys[op as usize].0,
                Move::LeaveOut(_) => keys[op as usize].1,
            };
            while let Some(mv) = f.rest.pop() {
                if let Some((after, h)) = apply(mv, state, hash, &mut seen) {
                    steps += 1;
                    stack.push(Frame {
                        mv,
                        before: state,
                        rest: f.rest,
                    });
                    ev.lift(op_of(mv));
                    state = after;
                    hash = h;
                    continue 'walk;
                }
            }
        }
    }
}
