//! The first transitions a rollout keeps in full, and how a rollout equal to its reference
//! shares the reference's instead of copying its own.
//!
//! A check explains a difference from the full transitions of the step where two rollouts
//! part, so every rollout keeps its first ones ([`KeepFirst`]). The rollouts a check compares
//! with its reference ([`super::Against`]) are, step for step, the reference until they part
//! (their check digests are equal exactly where their v1 steps are): the transitions they
//! would keep before that step are the reference's, bytes and budget decisions alike. Such a
//! rollout keeps nothing while it agrees and shares the reference's list ([`Kept`] is
//! reference-counted); from the step where it parts it keeps its own, after a copy of the
//! reference's before that step. The range's first transitions are about 170 KB each (four
//! 40 KB adjacency matrices), so the copies spared are about 1 MB per compared rollout.

use std::sync::Arc;

use super::KeepFirst;
use crate::env::Transition;

/// A rollout's kept first transitions (`kept[k]` is step `k`), shared by rollouts equal to
/// the one that kept them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kept(Arc<[Transition]>);

impl std::ops::Deref for Kept {
    type Target = [Transition];

    fn deref(&self) -> &[Transition] {
        &self.0
    }
}

impl From<Vec<Transition>> for Kept {
    fn from(v: Vec<Transition>) -> Kept {
        Kept(v.into())
    }
}

impl FromIterator<Transition> for Kept {
    fn from_iter<I: IntoIterator<Item = Transition>>(iter: I) -> Kept {
        Kept(iter.into_iter().collect())
    }
}

/// Bytes of a transition's arrays and log lines, for [`KeepFirst::bytes`].
pub(super) fn kept_size(t: &Transition) -> usize {
    let arrays: usize = t
        .agents
        .values()
        .flat_map(|a| a.obs.values())
        .map(|a| a.len() * a.dtype().size())
        .sum();
    arrays + t.logs.iter().map(String::len).sum::<usize>()
}

/// The leading transitions a rollout keeps, within a [`KeepFirst`] budget.
#[derive(Debug)]
pub(super) struct KeptPrefix {
    budget: KeepFirst,
    bytes: usize,
    /// Set once a transition did not fit: a later, smaller one must not leave a gap.
    closed: bool,
    transitions: Vec<Transition>,
    /// The reference's kept transitions while this rollout equals it, and the steps offered
    /// meanwhile.
    shared: Option<(Kept, usize)>,
}

impl KeptPrefix {
    pub(super) fn new(budget: KeepFirst) -> KeptPrefix {
        KeptPrefix {
            budget,
            bytes: 0,
            closed: false,
            transitions: Vec::new(),
            shared: None,
        }
    }

    /// The prefix of a rollout recorded against a reference that kept `reference` with the
    /// same `budget`: shared until [`KeptPrefix::part`].
    pub(super) fn sharing(budget: KeepFirst, reference: Kept) -> KeptPrefix {
        KeptPrefix {
            shared: Some((reference, 0)),
            ..KeptPrefix::new(budget)
        }
    }

    /// Keeps `t` (the next step) if the prefix is unbroken and `t` fits.
    pub(super) fn offer(&mut self, t: &Transition) {
        if let Some((_, offered)) = self.shared.as_mut() {
            *offered += 1;
            return;
        }
        if self.closed || self.transitions.len() >= self.budget.steps {
            return;
        }
        let size = kept_size(t);
        if self.bytes + size > self.budget.bytes {
            self.closed = true;
            return;
        }
        self.bytes += size;
        self.transitions.push(t.clone());
    }

    /// The rollout parts from its reference at the next step offered: it keeps its own from
    /// there, after the reference's before it, and where the reference stopped keeping before
    /// it, so does this prefix (the same transitions met the same budget).
    pub(super) fn part(&mut self) {
        let Some((reference, offered)) = self.shared.take() else {
            return;
        };
        let before = offered.min(reference.len());
        self.transitions = reference[..before].to_vec();
        self.bytes = self.transitions.iter().map(kept_size).sum();
        self.closed = before < offered;
    }

    /// What was kept: the reference's own list when the rollout never parted from it (the
    /// reference's first steps when it is shorter).
    pub(super) fn into_kept(self) -> Kept {
        match self.shared {
            Some((reference, offered)) if offered >= reference.len() => reference,
            Some((reference, offered)) => reference[..offered].iter().cloned().collect(),
            None => self.transitions.into(),
        }
    }

    /// A copy of what is kept so far, for a reference made from a recording in progress.
    pub(super) fn to_kept(&self) -> Kept {
        match &self.shared {
            Some((reference, offered)) => reference[..(*offered).min(reference.len())]
                .iter()
                .cloned()
                .collect(),
            None => self.transitions.clone().into(),
        }
    }
}
