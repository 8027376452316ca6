//! A linearizability checker for histories of one register (Wing & Gong's search, with
//! the memoization of Lowe and Porcupine).
//!
//! Owns nothing but the judgement: given every operation a set of clients ran on one
//! register — when each was invoked, when (if ever) it returned and what it returned — is
//! there a total order of them that respects real time (an operation that returned
//! before another was invoked comes first) and the register's sequential semantics? It
//! knows nothing of the cluster; the simulator's lightweight-transaction workload
//! (`world/lwt.rs`) records the histories and hands them here.
//!
//! The register holds a value or nothing (absent). Operations are a compare-and-set whose
//! [`Condition`] is an expected value (or absence), existence or nothing at all — an
//! unconditional set through Paxos — and a read. An operation that failed or never
//! returned may have taken effect at any moment after its invocation, or never: it has
//! no return time, and the search may linearize it anywhere after its invocation (it then
//! must apply, as its condition allows) or leave it out (it had no effect).
//!
//! The search walks linearization prefixes depth first: the next operation may be any
//! not yet linearized one invoked before the earliest return among those not yet
//! linearized. A prefix is identified by the returned operations in it, the unanswered
//! ones in it and the state it leaves; one whose returned operations and state were
//! reached before with a subset of its unanswered ones is not explored again (anything
//! that extends it extends the earlier one), which bounds the work by the number of
//! such prefixes instead of the number of orders. Values no operation reads, sees or
//! expects are one state, and an unanswered write of such a value is only tried on an
//! absent register (elsewhere it cannot help). The work is still exponential in how
//! many operations overlap, so callers keep histories small and the search has a
//! budget: past it the verdict is [`Verdict::Inconclusive`], never a guess.

use std::collections::{HashMap, HashSet};
use std::fmt;

/// A register's value (the simulator uses the id of the operation that wrote it).
pub type Value = u64;

/// When a compare-and-set applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// The register holds this value (`None`: it is absent, `IF NOT EXISTS`).
    Is(Option<Value>),
    /// The register holds some value (`IF EXISTS`).
    Exists,
    /// Always (an unconditional write through Paxos).
    Always,
}

impl Condition {
    /// Whether a register holding `state` meets the condition.
    pub fn holds(self, state: Option<Value>) -> bool {
        match self {
            Condition::Is(v) => state == v,
            Condition::Exists => state.is_some(),
            Condition::Always => true,
        }
    }
}

/// What an operation asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Sets the register to `new` if `condition` holds.
    Cas {
        /// The condition.
        condition: Condition,
        /// The value written when it holds.
        new: Value,
    },
    /// Reads the register (at SERIAL).
    Read,
}

/// What a returned operation answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The compare-and-set applied.
    Applied,
    /// It did not: the condition failed on the value `seen`.
    NotApplied {
        /// The register's value when the condition was checked.
        seen: Option<Value>,
    },
    /// The read returned this.
    Read(Option<Value>),
}

/// One operation of a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// What it asked.
    pub input: Input,
    /// When it was invoked (a logical time; all times of a history are distinct).
    pub call: u64,
    /// When it returned and what; `None` if it failed or never returned (it may have
    /// taken effect after `call`, or not at all).
    pub ret: Option<(u64, Output)>,
}

impl Op {
    fn returned_at(&self) -> u64 {
        self.ret.map_or(u64::MAX, |(at, _)| at)
    }
}

/// The register as the search tracks it: values no operation observes are one state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum State {
    Absent,
    Holds(Value),
    /// A value no operation reads, sees or expects: which one cannot matter.
    Unseen,
}

impl State {
    fn is(self, v: Option<Value>) -> bool {
        match (self, v) {
            (State::Absent, None) => true,
            (State::Holds(a), Some(b)) => a == b,
            _ => false,
        }
    }

    fn meets(self, condition: Condition) -> bool {
        match condition {
            Condition::Is(v) => self.is(v),
            Condition::Exists => self != State::Absent,
            Condition::Always => true,
        }
    }
}
impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = |v: Option<Value>| v.map_or("absent".to_owned(), |v| format!("v{v}"));
        match self.input {
            Input::Cas { condition, new } => {
                let cond = match condition {
                    Condition::Is(v) => format!("if {}", value(v)),
                    Condition::Exists => "if exists".to_owned(),
                    Condition::Always => "always".to_owned(),
                };
                write!(f, "cas(v{new} {cond})")?;
            }
            Input::Read => write!(f, "read")?,
        }
        write!(f, " [{}, ", self.call)?;
        match self.ret {
            None => write!(f, "never] unknown"),
            Some((at, Output::Applied)) => write!(f, "{at}] applied"),
            Some((at, Output::NotApplied { seen })) => {
                write!(f, "{at}] not applied, saw {}", value(seen))
            }
            Some((at, Output::Read(v))) => write!(f, "{at}] read {}", value(v)),
        }
    }
}

/// The checker's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Some order explains the history.
    Linearizable,
    /// None does. `longest` is a longest order of operations (indexes into the history)
    /// the search could build before every continuation failed: the operation that
    /// cannot follow it is where to look.
    NotLinearizable {
        /// The longest linearizable prefix found.
        longest: Vec<usize>,
    },
    /// The search ran out of its budget of (prefix, state) pairs, or the history holds
    /// more operations than it can track.
    Inconclusive,
}

/// Operations a history may hold (the prefix sets are 128-bit masks).
pub const OPS_MAX: usize = 128;

struct Search<'a> {
    ops: &'a [Op],
    /// Indexes into `ops`, by invocation time.
    by_call: Vec<usize>,
    /// The operations that must be linearized: those that returned.
    required: u128,
    /// Values some operation reads, sees or expects.
    observed: HashSet<Value>,
    /// By (returned operations linearized, state): the sets of unanswered ones linearized
    /// with them in prefixes explored already.
    seen: HashMap<(u128, State), Vec<u128>>,
    explored: usize,
    budget: usize,
    path: Vec<usize>,
    longest: Vec<usize>,
}

impl Search<'_> {
    /// The state after `op` takes effect on `state`, if its answer allows it to take
    /// effect there.
    fn step(&self, op: &Op, state: State) -> Option<State> {
        let output = op.ret.map(|(_, o)| o);
        match (op.input, output) {
            (Input::Read, Some(Output::Read(v))) => state.is(v).then_some(state),
            (Input::Cas { condition, new }, None | Some(Output::Applied)) => state
                .meets(condition)
                .then_some(if self.observed.contains(&new) {
                    State::Holds(new)
                } else {
                    State::Unseen
                }),
            (Input::Cas { condition, .. }, Some(Output::NotApplied { seen })) => {
                (state.is(seen) && !state.meets(condition)).then_some(state)
            }
            // A read that never returned has no effect, so it is never linearized; an
            // answer of the wrong kind fits no state.
            _ => None,
        }
    }

    /// Whether an unanswered `op` is worth linearizing in `state`. One whose value nobody
    /// observes only makes the register exist, which it does already unless absent: any
    /// continuation after it works as well without it.
    fn worth_trying(&self, op: &Op, state: State) -> bool {
        match (op.ret, op.input) {
            (None, Input::Cas { new, .. }) => {
                state == State::Absent || self.observed.contains(&new)
            }
            _ => true,
        }
    }

    /// Whether a prefix like `done` leaving `state` was explored already: one with the
    /// same answered operations and a subset of its unanswered ones (any continuation of
    /// this prefix continues that one too). Records this one otherwise.
    fn explored_before(&mut self, done: u128, state: State) -> bool {
        let unanswered = done & !self.required;
        let sets = self.seen.entry((done & self.required, state)).or_default();
        if sets.iter().any(|s| s & !unanswered == 0) {
            return true;
        }
        sets.push(unanswered);
        self.explored += 1;
        false
    }

    /// Whether the prefix `done` leaving `state` extends to a full linearization; `None`
    /// when the budget ran out.
    fn extend(&mut self, done: u128, state: State) -> Option<bool> {
        if done & self.required == self.required {
            return Some(true);
        }
        if self.explored_before(done, state) {
            return Some(false);
        }
        if self.explored > self.budget {
            return None;
        }
        if self.path.len() > self.longest.len() {
            self.longest.clone_from(&self.path);
        }
        let pending = |i: usize| done & (1u128 << i) == 0;
        let first_return = self
            .by_call
            .iter()
            .filter(|&&i| pending(i))
            .filter_map(|&i| self.ops.get(i))
            .map(Op::returned_at)
            .min()
            .unwrap_or(u64::MAX);
        let candidates: Vec<(usize, Op)> = self
            .by_call
            .iter()
            .filter_map(|&i| Some((i, *self.ops.get(i)?)))
            .take_while(|(_, op)| op.call < first_return)
            .filter(|(i, op)| pending(*i) && self.worth_trying(op, state))
            .collect();
        for (i, op) in candidates {
            if let Some(next) = self.step(&op, state) {
                self.path.push(i);
                let found = self.extend(done | (1u128 << i), next);
                self.path.pop();
                if found != Some(false) {
                    return found;
                }
            }
        }
        Some(false)
    }
}

/// The values `ops` read, see or expect.
fn observed(ops: &[Op]) -> HashSet<Value> {
    let mut out = HashSet::new();
    for op in ops {
        if let Input::Cas {
            condition: Condition::Is(Some(v)),
            ..
        } = op.input
        {
            out.insert(v);
        }
        if let Some((_, Output::Read(Some(v)) | Output::NotApplied { seen: Some(v) })) = op.ret {
            out.insert(v);
        }
    }
    out
}

/// Whether `ops`, run on a register that starts as `initial`, are linearizable (see the
/// module doc); `budget` bounds the prefixes explored.
pub fn check(initial: Option<Value>, ops: &[Op], budget: usize) -> Verdict {
    if ops.len() > OPS_MAX {
        return Verdict::Inconclusive;
    }
    let mut by_call: Vec<usize> = (0..ops.len()).collect();
    by_call.sort_by_key(|&i| ops.get(i).map_or(0, |o| o.call));
    let required = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.ret.is_some())
        .fold(0u128, |m, (i, _)| m | (1u128 << i));
    let mut search = Search {
        ops,
        by_call,
        required,
        observed: observed(ops),
        seen: HashMap::new(),
        explored: 0,
        budget,
        path: Vec::new(),
        longest: Vec::new(),
    };
    let start = initial.map_or(State::Absent, State::Holds);
    match search.extend(0, start) {
        Some(true) => Verdict::Linearizable,
        Some(false) => Verdict::NotLinearizable {
            longest: search.longest,
        },
        None => Verdict::Inconclusive,
    }
}

/// A history and a verdict on it, for a report: every operation by invocation, and the
/// longest order found.
pub fn describe(ops: &[Op], verdict: &Verdict) -> String {
    let mut by_call: Vec<(usize, &Op)> = ops.iter().enumerate().collect();
    by_call.sort_by_key(|(_, o)| o.call);
    let mut out = String::new();
    for (i, op) in by_call {
        out.push_str(&format!("\n    #{i} {op}"));
    }
    if let Verdict::NotLinearizable { longest } = verdict {
        out.push_str(&format!("\n    longest linearizable order: {longest:?}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: usize = 1_000_000;

    fn cas(condition: Condition, new: Value, call: u64, ret: Option<(u64, Output)>) -> Op {
        Op {
            input: Input::Cas { condition, new },
            call,
            ret,
        }
    }

    fn read(call: u64, ret: u64, v: Option<Value>) -> Op {
        Op {
            input: Input::Read,
            call,
            ret: Some((ret, Output::Read(v))),
        }
    }

    fn applied(at: u64) -> Option<(u64, Output)> {
        Some((at, Output::Applied))
    }

    fn not_applied(at: u64, seen: Option<Value>) -> Option<(u64, Output)> {
        Some((at, Output::NotApplied { seen }))
    }

    fn linearizable(ops: &[Op]) -> bool {
        match check(None, ops, BUDGET) {
            Verdict::Linearizable => true,
            Verdict::NotLinearizable { .. } => false,
            Verdict::Inconclusive => {
                panic!("inconclusive: {}", describe(ops, &Verdict::Inconclusive))
            }
        }
    }

    #[test]
    fn a_sequential_history_of_every_kind_is_linearizable() {
        use Condition::*;
        let ops = [
            read(1, 2, None),
            cas(Is(None), 1, 3, applied(4)),
            cas(Is(None), 2, 5, not_applied(6, Some(1))),
            cas(Exists, 3, 7, applied(8)),
            cas(Is(Some(3)), 4, 9, applied(10)),
            cas(Always, 5, 11, applied(12)),
            read(13, 14, Some(5)),
        ];
        assert!(linearizable(&ops));
        assert!(linearizable(&[]));
        assert_eq!(
            check(Some(7), &[read(1, 2, Some(7))], BUDGET),
            Verdict::Linearizable
        );
    }

    #[test]
    fn overlapping_operations_may_take_effect_in_either_order() {
        use Condition::*;
        // Both from absent, overlapping: whichever went first applied, the other saw it.
        let ops = [
            cas(Is(None), 1, 1, not_applied(6, Some(2))),
            cas(Is(None), 2, 2, applied(5)),
            // A read overlapping both may see either state.
            read(3, 4, None),
            read(7, 8, Some(2)),
        ];
        assert!(linearizable(&ops));
    }

    #[test]
    fn two_compare_and_sets_from_the_same_value_both_applied_are_refused() {
        use Condition::*;
        let concurrent = [
            cas(Is(None), 1, 1, applied(4)),
            cas(Is(None), 2, 2, applied(3)),
        ];
        assert!(!linearizable(&concurrent));
        let sequential = [
            cas(Is(None), 1, 1, applied(2)),
            cas(Is(Some(1)), 2, 3, applied(4)),
            cas(Is(Some(1)), 3, 5, applied(6)),
        ];
        assert!(!linearizable(&sequential));
        let Verdict::NotLinearizable { longest } = check(None, &sequential, BUDGET) else {
            panic!("accepted");
        };
        assert_eq!(longest, vec![0, 1], "stuck at the third");
    }

    #[test]
    fn a_read_older_than_a_completed_write_is_refused() {
        use Condition::*;
        let stale = [
            cas(Is(None), 1, 1, applied(2)),
            cas(Is(Some(1)), 2, 3, applied(4)),
            read(5, 6, Some(1)),
        ];
        assert!(!linearizable(&stale));
        // Overlapping the second write, it may see the first.
        let racing = [
            cas(Is(None), 1, 1, applied(2)),
            cas(Is(Some(1)), 2, 3, applied(6)),
            read(4, 5, Some(1)),
        ];
        assert!(linearizable(&racing));
        // Two reads in a row may not go back in time.
        let flickering = [
            cas(Is(None), 1, 1, applied(10)),
            read(2, 3, Some(1)),
            read(4, 5, None),
        ];
        assert!(!linearizable(&flickering));
    }

    #[test]
    fn a_failed_write_takes_effect_after_its_invocation_or_never() {
        use Condition::*;
        // Seen later: it took effect.
        let seen = [cas(Always, 1, 1, None), read(2, 3, Some(1))];
        assert!(linearizable(&seen));
        // Never seen: it did not.
        let unseen = [cas(Always, 1, 1, None), read(2, 3, None)];
        assert!(linearizable(&unseen));
        // Seen, then gone with nobody writing after it: not both.
        let flicker = [
            cas(Always, 1, 1, None),
            read(2, 3, Some(1)),
            read(4, 5, None),
        ];
        assert!(!linearizable(&flicker));
        // Seen before it was invoked: no.
        let early = [read(1, 2, Some(1)), cas(Always, 1, 3, None)];
        assert!(!linearizable(&early));
        // Its condition still binds it: from absent only.
        let conditional = [
            cas(Always, 1, 1, applied(2)),
            cas(Is(None), 2, 3, None),
            read(4, 5, Some(2)),
        ];
        assert!(!linearizable(&conditional));
        // A value nobody observes still makes the register exist, but only from its
        // invocation on.
        let exists = [cas(Always, 1, 1, None), cas(Exists, 2, 2, applied(3))];
        assert!(linearizable(&exists));
        let too_soon = [cas(Exists, 2, 1, applied(2)), cas(Always, 1, 3, None)];
        assert!(!linearizable(&too_soon));
    }

    #[test]
    fn a_refusal_must_name_the_value_that_refused_it() {
        use Condition::*;
        let wrong_seen = [
            cas(Is(None), 1, 1, applied(2)),
            cas(Is(None), 2, 3, not_applied(4, Some(9))),
        ];
        assert!(!linearizable(&wrong_seen));
        // Refused although the condition held.
        let refused_though_met = [
            cas(Is(None), 1, 1, applied(2)),
            cas(Exists, 2, 3, not_applied(4, Some(1))),
        ];
        assert!(!linearizable(&refused_though_met));
        // A value nobody wrote.
        assert!(!linearizable(&[read(1, 2, Some(42))]));
    }

    #[test]
    fn a_small_budget_is_inconclusive_and_a_large_history_is_fast() {
        use Condition::*;
        // Many writers that failed, overlapping everything after them, and reads that
        // pin the order: the memo keeps it quick.
        let mut ops = Vec::new();
        let mut t = 0;
        for v in 1..=40u64 {
            t += 1;
            ops.push(cas(Always, 1000 + v, t, None));
            t += 1;
            let call = t;
            t += 1;
            ops.push(cas(
                Is(if v == 1 { None } else { Some(v - 1) }),
                v,
                call,
                applied(t),
            ));
            t += 1;
            let call = t;
            t += 1;
            ops.push(read(call, t, Some(v)));
        }
        assert_eq!(ops.len(), 120);
        assert!(linearizable(&ops));
        assert_eq!(check(None, &ops, 10), Verdict::Inconclusive);
        let too_many = vec![read(1, 2, None); OPS_MAX + 1];
        assert_eq!(check(None, &too_many, BUDGET), Verdict::Inconclusive);
    }
}
