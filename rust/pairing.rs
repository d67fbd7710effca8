//! Tool-call / tool-result pairing checks that know where each event sits.
//!
//! Checking only that every id has both a call and a result lets `[result, call]` and
//! `[call, result, result]` through, so a compacted history could still break a provider's
//! pairing rules. This check also reports results that come before their call and results
//! that answer a call twice.
//!
//! One pass counts, per id, just enough to tell whether the id is clean; events are chained
//! per id as they go, so the positions of the (rare) failing ids are gathered without a
//! second lookup and without allocating for clean ids.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::error::Error;
use std::fmt;

/// Whether an event requests a tool call or carries its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// An assistant message asks for the call.
    Call,
    /// A tool message answers the call.
    Result,
}

/// One tool call or tool result, in conversation order.
#[derive(Debug, Clone, Copy)]
pub struct PairingEvent<'a> {
    /// Index of the message holding the event; events sharing a message share a position.
    pub position: i64,
    /// Call or result.
    pub kind: EventKind,
    /// The tool call id linking a call to its result.
    pub call_id: &'a str,
}

/// The ways a call id can break pairing. The declaration order is the output order for
/// violations that start at the same position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    /// A call with no result after it.
    MissingResult,
    /// Results for an id that was never called.
    OrphanedResult,
    /// The same id called more than once.
    DuplicateCall,
    /// A result at or before the position of its first call.
    ResultBeforeCall,
    /// More than one result after the first call.
    DuplicateResult,
}

impl ViolationKind {
    /// The stable snake-case name used across the Python boundary.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MissingResult => "missing_result",
            Self::OrphanedResult => "orphaned_result",
            Self::DuplicateCall => "duplicate_call",
            Self::ResultBeforeCall => "result_before_call",
            Self::DuplicateResult => "duplicate_result",
        }
    }
}

/// One pairing problem of one call id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// What is wrong.
    pub kind: ViolationKind,
    /// The call id concerned.
    pub call_id: String,
    /// The positions involved (never empty); see [`validate_pairing`] for each kind.
    pub positions: Vec<i64>,
}

/// Why [`validate_pairing`] rejected its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingError {
    /// An event's position is lower than the one before it.
    PositionsNotOrdered {
        /// Index of the offending event in the input.
        index: usize,
        /// Position of the event before it.
        previous: i64,
        /// Its own, lower, position.
        position: i64,
    },
}

impl fmt::Display for PairingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PositionsNotOrdered {
                index,
                previous,
                position,
            } => write!(
                f,
                "event {index} has position {position}, lower than the previous event's \
                 position {previous}; positions must be non-decreasing"
            ),
        }
    }
}

impl Error for PairingError {}

/// Marks the first event of an id in the back-chain.
const NO_EVENT: usize = usize::MAX;

/// What the single pass keeps per call id.
struct Tally {
    /// Index of the latest event with this id; earlier ones follow through `previous_of`.
    last: usize,
    calls: usize,
    /// Position of the first call; meaningful once `calls > 0`.
    first_call: i64,
    /// Results at or before the first call's position (or seen before any call).
    early_results: usize,
    /// Results after the first call's position.
    answering_results: usize,
}

impl Tally {
    fn new(index: usize, event: &PairingEvent<'_>) -> Self {
        let mut tally = Self {
            last: index,
            calls: 0,
            first_call: 0,
            early_results: 0,
            answering_results: 0,
        };
        tally.count(event);
        tally
    }

    fn count(&mut self, event: &PairingEvent<'_>) {
        match event.kind {
            EventKind::Call => {
                if self.calls == 0 {
                    self.first_call = event.position;
                }
                self.calls += 1;
            }
            // Positions never decrease, so a result seen before any call sits at or
            // before wherever that call turns up.
            EventKind::Result if self.calls > 0 && event.position > self.first_call => {
                self.answering_results += 1;
            }
            EventKind::Result => self.early_results += 1,
        }
    }

    fn is_clean(&self) -> bool {
        self.calls == 1 && self.early_results == 0 && self.answering_results == 1
    }
}

/// Checks that every tool call is answered exactly once, after it, and every result has a
/// call; returns the violations found (empty when the history pairs correctly).
///
/// `events` are in conversation order. Per call id, with `calls` and `results` the
/// positions of its call and result events:
/// - two or more calls: [`ViolationKind::DuplicateCall`] with all call positions;
/// - no call but results: [`ViolationKind::OrphanedResult`] with all result positions, and
///   nothing else for that id;
/// - otherwise, with `first` the first call's position: results at positions `<= first`
///   give [`ViolationKind::ResultBeforeCall`] with those positions followed by `first`; of
///   the results after `first`, none gives [`ViolationKind::MissingResult`] with `[first]`
///   and two or more give [`ViolationKind::DuplicateResult`] with their positions.
///
/// The duplicate-call check does not replace the others: a called-twice id is also checked
/// against its first call. Violations are sorted by (first position, kind, call id), the
/// call id compared byte-wise (the same as Python's code-point order).
///
/// # Errors
///
/// [`PairingError::PositionsNotOrdered`] at the first event whose position is lower than
/// the previous event's.
pub fn validate_pairing(events: &[PairingEvent<'_>]) -> Result<Vec<Violation>, PairingError> {
    let mut tallies: HashMap<&str, Tally> = HashMap::with_capacity(events.len() / 2);
    let mut previous_of: Vec<usize> = Vec::with_capacity(events.len());
    let mut previous_position = i64::MIN;
    for (index, event) in events.iter().enumerate() {
        if event.position < previous_position {
            return Err(PairingError::PositionsNotOrdered {
                index,
                previous: previous_position,
                position: event.position,
            });
        }
        previous_position = event.position;
        match tallies.entry(event.call_id) {
            Entry::Occupied(mut slot) => {
                let tally = slot.get_mut();
                previous_of.push(tally.last);
                tally.last = index;
                tally.count(event);
            }
            Entry::Vacant(slot) => {
                previous_of.push(NO_EVENT);
                slot.insert(Tally::new(index, event));
            }
        }
    }

    let mut violations = Vec::new();
    for (call_id, tally) in &tallies {
        if !tally.is_clean() {
            let chain = Chain {
                events,
                previous_of: &previous_of,
                next: tally.last,
            };
            report(call_id, chain, &mut violations);
        }
    }
    violations.sort_unstable_by(|a, b| {
        a.positions
            .first()
            .cmp(&b.positions.first())
            .then(a.kind.cmp(&b.kind))
            .then_with(|| a.call_id.cmp(&b.call_id))
    });
    Ok(violations)
}

/// Walks one id's events from the latest back to the first.
struct Chain<'e, 'a> {
    events: &'e [PairingEvent<'a>],
    previous_of: &'e [usize],
    next: usize,
}

impl<'e, 'a> Iterator for Chain<'e, 'a> {
    type Item = &'e PairingEvent<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let event = self.events.get(self.next)?;
        self.next = self.previous_of.get(self.next).copied().unwrap_or(NO_EVENT);
        Some(event)
    }
}

/// Applies the rules of [`validate_pairing`] to one id's events (given latest first).
fn report(call_id: &str, chain: Chain<'_, '_>, out: &mut Vec<Violation>) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for event in chain {
        match event.kind {
            EventKind::Call => calls.push(event.position),
            EventKind::Result => results.push(event.position),
        }
    }
    calls.reverse();
    results.reverse();

    let mut push = |kind, positions| {
        out.push(Violation {
            kind,
            call_id: call_id.to_owned(),
            positions,
        });
    };
    let Some(&first) = calls.first() else {
        if !results.is_empty() {
            push(ViolationKind::OrphanedResult, results);
        }
        return;
    };
    if calls.len() >= 2 {
        push(ViolationKind::DuplicateCall, calls);
    }
    let (mut early, answering): (Vec<i64>, Vec<i64>) =
        results.into_iter().partition(|&position| position <= first);
    if !early.is_empty() {
        early.push(first);
        push(ViolationKind::ResultBeforeCall, early);
    }
    match answering.len() {
        0 => push(ViolationKind::MissingResult, vec![first]),
        1 => {}
        _ => push(ViolationKind::DuplicateResult, answering),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::XorShift;
    use std::collections::BTreeMap;

    fn call(position: i64, call_id: &str) -> PairingEvent<'_> {
        PairingEvent {
            position,
            kind: EventKind::Call,
            call_id,
        }
    }

    fn result(position: i64, call_id: &str) -> PairingEvent<'_> {
        PairingEvent {
            position,
            kind: EventKind::Result,
            call_id,
        }
    }

    fn v(kind: ViolationKind, call_id: &str, positions: &[i64]) -> Violation {
        Violation {
            kind,
            call_id: call_id.to_owned(),
            positions: positions.to_vec(),
        }
    }

    fn check(events: &[PairingEvent<'_>]) -> Vec<Violation> {
        match validate_pairing(events) {
            Ok(violations) => violations,
            Err(error) => panic!("unexpected error: {error}"),
        }
    }

    use ViolationKind::{
        DuplicateCall, DuplicateResult, MissingResult, OrphanedResult, ResultBeforeCall,
    };

    #[test]
    fn empty_and_clean_histories() {
        assert_eq!(check(&[]), vec![]);
        assert_eq!(
            check(&[call(1, "a"), call(1, "b"), result(2, "b"), result(2, "a")]),
            vec![]
        );
    }

    #[test]
    fn examples_from_the_review() {
        assert_eq!(
            check(&[result(0, "A"), call(1, "A")]),
            vec![
                v(ResultBeforeCall, "A", &[0, 1]),
                v(MissingResult, "A", &[1])
            ]
        );
        assert_eq!(
            check(&[call(0, "A"), result(1, "A"), result(2, "A")]),
            vec![v(DuplicateResult, "A", &[1, 2])]
        );
    }

    #[test]
    fn missing_result() {
        assert_eq!(
            check(&[call(0, "a"), call(0, "b"), result(1, "a")]),
            vec![v(MissingResult, "b", &[0])]
        );
    }

    #[test]
    fn orphaned_result_reports_nothing_else() {
        assert_eq!(
            check(&[result(2, "x"), result(3, "x"), result(3, "x")]),
            vec![v(OrphanedResult, "x", &[2, 3, 3])]
        );
    }

    #[test]
    fn duplicate_call_is_checked_against_the_first_call_too() {
        assert_eq!(
            check(&[call(0, "a"), call(2, "a"), result(3, "a")]),
            vec![v(DuplicateCall, "a", &[0, 2])]
        );
        assert_eq!(
            check(&[call(0, "a"), call(2, "a")]),
            vec![v(MissingResult, "a", &[0]), v(DuplicateCall, "a", &[0, 2])]
        );
        // The result between the two calls answers the first; the second call is a duplicate.
        assert_eq!(
            check(&[call(0, "a"), result(1, "a"), call(2, "a"), result(3, "a")]),
            vec![
                v(DuplicateCall, "a", &[0, 2]),
                v(DuplicateResult, "a", &[1, 3])
            ]
        );
    }

    #[test]
    fn result_in_the_same_message_as_its_call_is_before_it() {
        assert_eq!(
            check(&[call(4, "a"), result(4, "a"), result(5, "a")]),
            vec![v(ResultBeforeCall, "a", &[4, 4])]
        );
    }

    #[test]
    fn result_before_call_with_duplicate_answers() {
        assert_eq!(
            check(&[
                result(0, "a"),
                result(1, "a"),
                call(2, "a"),
                result(3, "a"),
                result(3, "a")
            ]),
            vec![
                v(ResultBeforeCall, "a", &[0, 1, 2]),
                v(DuplicateResult, "a", &[3, 3])
            ]
        );
    }

    #[test]
    fn output_sorted_by_position_then_kind_then_id() {
        let events = [
            call(0, "z"),
            call(0, "b"),
            call(0, "a"),
            result(0, "q"),
            call(0, "z"),
            result(1, "b"),
            result(1, "b"),
            result(2, "a"),
        ];
        assert_eq!(
            check(&events),
            vec![
                v(MissingResult, "z", &[0]),
                v(OrphanedResult, "q", &[0]),
                v(DuplicateCall, "z", &[0, 0]),
                v(DuplicateResult, "b", &[1, 1]),
            ]
        );
        assert_eq!(
            check(&[call(0, "b"), call(0, "a"), call(0, "é"), call(0, "B")]),
            vec![
                v(MissingResult, "B", &[0]),
                v(MissingResult, "a", &[0]),
                v(MissingResult, "b", &[0]),
                v(MissingResult, "é", &[0]),
            ]
        );
    }

    #[test]
    fn empty_id_and_negative_positions_are_plain_values() {
        assert_eq!(check(&[call(-3, ""), result(-2, "")]), vec![]);
        assert_eq!(check(&[call(-3, "")]), vec![v(MissingResult, "", &[-3])]);
    }

    #[test]
    fn decreasing_positions_are_rejected() {
        let error = validate_pairing(&[call(0, "a"), call(2, "b"), result(1, "a")]);
        assert_eq!(
            error,
            Err(PairingError::PositionsNotOrdered {
                index: 2,
                previous: 2,
                position: 1
            })
        );
        if let Err(error) = error {
            assert_eq!(
                error.to_string(),
                "event 2 has position 1, lower than the previous event's position 2; \
                 positions must be non-decreasing"
            );
        }
    }

    #[test]
    fn kind_names() {
        let names: Vec<&str> = [
            MissingResult,
            OrphanedResult,
            DuplicateCall,
            ResultBeforeCall,
            DuplicateResult,
        ]
        .into_iter()
        .map(ViolationKind::as_str)
        .collect();
        assert_eq!(
            names,
            [
                "missing_result",
                "orphaned_result",
                "duplicate_call",
                "result_before_call",
                "duplicate_result"
            ]
        );
    }

    /// The rules written out literally, one id at a time.
    fn naive(events: &[PairingEvent<'_>]) -> Result<Vec<Violation>, PairingError> {
        for index in 1..events.len() {
            if events[index].position < events[index - 1].position {
                return Err(PairingError::PositionsNotOrdered {
                    index,
                    previous: events[index - 1].position,
                    position: events[index].position,
                });
            }
        }
        let mut ids: BTreeMap<&str, (Vec<i64>, Vec<i64>)> = BTreeMap::new();
        for event in events {
            let entry = ids.entry(event.call_id).or_default();
            match event.kind {
                EventKind::Call => entry.0.push(event.position),
                EventKind::Result => entry.1.push(event.position),
            }
        }
        let mut out = Vec::new();
        for (id, (calls, results)) in ids {
            if calls.len() >= 2 {
                out.push(v(DuplicateCall, id, &calls));
            }
            if calls.is_empty() {
                if !results.is_empty() {
                    out.push(v(OrphanedResult, id, &results));
                }
                continue;
            }
            let first = calls[0];
            let mut before: Vec<i64> = results.iter().copied().filter(|&p| p <= first).collect();
            let answering: Vec<i64> = results.iter().copied().filter(|&p| p > first).collect();
            if !before.is_empty() {
                before.push(first);
                out.push(v(ResultBeforeCall, id, &before));
            }
            if answering.is_empty() {
                out.push(v(MissingResult, id, &[first]));
            }
            if answering.len() >= 2 {
                out.push(v(DuplicateResult, id, &answering));
            }
        }
        out.sort_by(|a, b| {
            (a.positions[0], a.kind, &a.call_id).cmp(&(b.positions[0], b.kind, &b.call_id))
        });
        Ok(out)
    }

    #[test]
    fn random_histories_match_the_naive_reference() {
        const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "call_0"];
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        let mut seen = [0_u32; 6];
        for round in 0..20_000 {
            let len = rng.below(16) as usize;
            let mut position = rng.below(5) as i64 - 2;
            let events: Vec<PairingEvent<'static>> = (0..len)
                .map(|_| {
                    let step = rng.below(3) as i64;
                    // Now and then step backwards to exercise the ordering error.
                    position += if round % 50 == 0 && rng.below(8) == 0 {
                        -1
                    } else {
                        step
                    };
                    let id = IDS[rng.below(IDS.len() as u64) as usize];
                    if rng.below(2) == 0 {
                        call(position, id)
                    } else {
                        result(position, id)
                    }
                })
                .collect();
            let got = validate_pairing(&events);
            assert_eq!(got, naive(&events), "events={events:?}");
            match got {
                Ok(violations) => {
                    for violation in violations {
                        seen[violation.kind as usize] += 1;
                    }
                }
                Err(_) => seen[5] += 1,
            }
        }
        assert!(
            seen.iter().all(|&count| count > 0),
            "outcomes seen: {seen:?}"
        );
    }

    #[test]
    fn mostly_paired_random_histories_match_the_naive_reference() {
        let mut rng = XorShift(0x1234_5678_9ABC_DEF1);
        let ids: Vec<String> = (0..200).map(|i| format!("call_{i}")).collect();
        for _ in 0..200 {
            let mut events = Vec::new();
            let mut position = 0;
            for id in &ids {
                events.push(call(position, id));
                position += 1 + rng.below(2) as i64;
                match rng.below(40) {
                    0 => {}
                    1 => {
                        events.push(result(position, id));
                        events.push(result(position, id));
                    }
                    2 => events.push(call(position, id)),
                    _ => events.push(result(position, id)),
                }
                position += rng.below(2) as i64;
            }
            assert_eq!(validate_pairing(&events), naive(&events));
        }
    }
}
