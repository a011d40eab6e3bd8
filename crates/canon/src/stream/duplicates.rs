//! Duplicate keys of objects whose keys came out of order, checked late but reported as if
//! checked as they came.
//!
//! Why late: scanning an object's earlier keys for each key that comes was a sixth of the
//! one pass on records whose keys are not sorted (the hosts of a state), and the key order
//! found when the object closes shows a duplicate for free: the order tried first proves
//! the keys strictly increasing, and a sort puts equal keys side by side
//! ([`Canon::find_order`]). That holds for objects of any size: the search below is one pass
//! with a set (it compared every pair once, which is why large objects used to check each key
//! as it came instead).
//!
//! Why the same error: the two-step path refuses the first member, in the order the text
//! brings them, whose key an earlier member of its object has, when that member's value is
//! complete; any error later in the text loses to it. So when the one pass stops with an
//! error, or an object closes with a duplicate, the open objects' members not checked yet
//! are searched first, outermost object first (its complete members all came before
//! anything inside its last one), and in an object, the first complete member that repeats
//! a key.

use std::collections::HashSet;

use super::{Canon, Frame, Member, Parser};
use crate::ParseError;

impl Canon<'_> {
    /// The error the two-step path would have given for a duplicate key among the complete
    /// members of the open objects out of order, if there is one.
    #[cold]
    #[inline(never)]
    pub(super) fn earliest_duplicate(&self) -> Option<ParseError> {
        let objects: Vec<_> = self
            .frames
            .iter()
            .filter_map(|f| match f {
                Frame::Object(obj) => Some(obj),
                Frame::Array(_) => None,
            })
            .collect();
        for (k, obj) in objects.iter().enumerate() {
            let end = objects
                .get(k + 1)
                .map_or(self.members.len(), |next| next.first_member);
            if obj.sorted {
                continue;
            }
            let members = &self.members[obj.first_member..end];
            if let Some(e) = self.first_repeat(members) {
                return Some(e);
            }
        }
        None
    }

    /// The first complete member of `members` whose key an earlier one has: one pass in
    /// text order with a set of the keys met (a large object that turns out of order late
    /// is searched here whole; comparing every pair of 100,000 members took seconds).
    fn first_repeat(&self, members: &[Member]) -> Option<ParseError> {
        let input = self.p.bytes;
        let key = |m: &Member| m.key.bytes(input, &self.keys);
        let mut met = HashSet::with_capacity(members.len());
        for member in members {
            // Only the last member of an object can be incomplete: nothing comes after it.
            let complete = member.text_end > member.text_start;
            if !met.insert(key(member)) && complete {
                return Some(duplicate_key(&self.p, member, key(member)));
            }
        }
        None
    }
}

/// The parser's error for a member whose key repeats an earlier member's, at its key.
pub(super) fn duplicate_key(p: &Parser<'_>, member: &Member, key: &[u8]) -> ParseError {
    let message = format!("duplicate key {:?}", String::from_utf8_lossy(key));
    p.error_at(member.at, message)
}
