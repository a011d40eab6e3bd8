//! Field-level differences between two JSON values.
//!
//! A hash says *that* two states differ; this says *where*. Paths are JSON Pointers (RFC 6901),
//! array elements are compared by index, and the order of changes is the order of a depth-first
//! walk with object keys in byte order, so the same pair of values always gives the same list.
//!
//! Equality is canonical-byte equality, not Python's `==`: `1` and `1.0`, or `0.0` and `-0.0`,
//! serialise differently and so change a fingerprint; they are reported as changes. All NaNs
//! serialise alike and compare equal.
//!
//! A set travels as `{"$set": [members]}` (the Python adapter's form of a `set`, members in
//! canonical order). Positions in it mean nothing, so two sets are compared by membership: each
//! member only in the second is [`ChangeKind::MemberAdded`] at the set's pointer, each only in
//! the first [`ChangeKind::MemberRemoved`]; one visited cell more is one change, not a shifted
//! tail of the list. A list that is empty on one side only is one change of the whole list
//! (`changed /visited: [] -> [[0, 1], [0, 2]]`), not one `added` per element.

use lockstep_canon::{Number, Value};

/// How one path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    /// Present only in the second value.
    Added,
    /// Present only in the first value.
    Removed,
    /// Present in both with different contents (or different types).
    Changed,
    /// A member only in the second of two sets (`after` holds it).
    MemberAdded,
    /// A member only in the first of two sets (`before` holds it).
    MemberRemoved,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
            ChangeKind::MemberAdded => "added member",
            ChangeKind::MemberRemoved => "removed member",
        }
    }
}

/// One differing path, with the value on each side (`None` on the side where it is absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub pointer: String,
    pub kind: ChangeKind,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// All differences between two values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diff {
    /// Top-level object keys whose values differ (the seed experiment's `different_fields`), in
    /// key order; `""` when the roots themselves are not both objects and differ.
    pub different_fields: Vec<String>,
    /// Every differing leaf path, in depth-first order.
    pub changes: Vec<Change>,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// Compares `before` with `after`.
pub fn diff(before: &Value, after: &Value) -> Diff {
    let mut changes = Vec::new();
    let mut pointer = String::new();
    walk(before, after, &mut pointer, &mut changes);
    let different_fields = match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .filter(|k| match (a.get(*k), b.get(*k)) {
                    (Some(x), Some(y)) => !same(x, y),
                    _ => true,
                })
                .cloned()
                .collect()
        }
        _ if changes.is_empty() => Vec::new(),
        _ => vec![String::new()],
    };
    Diff {
        different_fields,
        changes,
    }
}

/// Canonical-byte equality of two values (see the module doc).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => a == b,
    }
}

fn same_number(x: &Number, y: &Number) -> bool {
    match (x, y) {
        (Number::Float(a), Number::Float(b)) => {
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
        }
        _ => x == y,
    }
}

/// Appends `key` to a JSON Pointer, escaping `~` and `/` as RFC 6901 requires.
pub fn push_token(pointer: &mut String, key: &str) {
    pointer.push('/');
    for c in key.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// The key of the adapter's set form, `{"$set": [members]}`.
pub const SET_KEY: &str = "$set";

/// The members of a value in the set form, or `None`.
fn set_members(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Object(m) if m.len() == 1 => match m.get(SET_KEY) {
            Some(Value::Array(members)) => Some(members),
            _ => None,
        },
        _ => None,
    }
}

/// Members of `x` beyond their count in `y`, in `x`'s order, compared by canonical bytes (the
/// fingerprint's own equality: all NaNs alike). Two distinct members that read the same count
/// twice, so losing one of them is a change. Sorted counts: linear in the members, whatever
/// the size of a leaked set.
fn only_in<'a>(x: &'a [Value], y: &'a [Value]) -> Vec<&'a Value> {
    let key =
        |v: &Value| lockstep_canon::to_vec(v, lockstep_canon::Profile::Python).unwrap_or_default();
    let mut left: std::collections::BTreeMap<Vec<u8>, usize> = std::collections::BTreeMap::new();
    for m in y {
        *left.entry(key(m)).or_default() += 1;
    }
    x.iter()
        .filter(|m| match left.get_mut(&key(m)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

fn walk(a: &Value, b: &Value, pointer: &mut String, out: &mut Vec<Change>) {
    let len = pointer.len();
    if let (Some(x), Some(y)) = (set_members(a), set_members(b)) {
        for m in only_in(x, y) {
            out.push(change(pointer, ChangeKind::MemberRemoved, Some(m), None));
        }
        for m in only_in(y, x) {
            out.push(change(pointer, ChangeKind::MemberAdded, None, Some(m)));
        }
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut xs = x.iter().peekable();
            let mut ys = y.iter().peekable();
            loop {
                let order = match (xs.peek(), ys.peek()) {
                    (None, None) => break,
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
                };
                match order {
                    std::cmp::Ordering::Less => {
                        let (k, v) = xs.next().expect("peeked");
                        push_token(pointer, k);
                        out.push(change(pointer, ChangeKind::Removed, Some(v), None));
                    }
                    std::cmp::Ordering::Greater => {
                        let (k, v) = ys.next().expect("peeked");
                        push_token(pointer, k);
                        out.push(change(pointer, ChangeKind::Added, None, Some(v)));
                    }
                    std::cmp::Ordering::Equal => {
                        let (k, va) = xs.next().expect("peeked");
                        let (_, vb) = ys.next().expect("peeked");
                        push_token(pointer, k);
                        walk(va, vb, pointer, out);
                    }
                }
                pointer.truncate(len);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.is_empty() != y.is_empty() => {
            out.push(change(pointer, ChangeKind::Changed, Some(a), Some(b)))
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                push_token(pointer, &i.to_string());
                match (x.get(i), y.get(i)) {
                    (Some(va), Some(vb)) => walk(va, vb, pointer, out),
                    (Some(va), None) => {
                        out.push(change(pointer, ChangeKind::Removed, Some(va), None))
                    }
                    (None, Some(vb)) => {
                        out.push(change(pointer, ChangeKind::Added, None, Some(vb)))
                    }
                    (None, None) => unreachable!("index below the longer length"),
                }
                pointer.truncate(len);
            }
        }
        _ if same(a, b) => {}
        _ => out.push(change(pointer, ChangeKind::Changed, Some(a), Some(b))),
    }
}

fn change(
    pointer: &str,
    kind: ChangeKind,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Change {
    Change {
        pointer: pointer.to_string(),
        kind,
        before: before.cloned(),
        after: after.cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_canon::Map;

    fn obj(pairs: &[(&str, Value)]) -> Value {
        Value::Object(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Map>(),
        )
    }
    fn int(i: i64) -> Value {
        Value::Number(Number::Int(i))
    }

    #[test]
    fn equal_values_have_no_diff() {
        let a = obj(&[("x", int(1)), ("y", Value::Array(vec![int(2)]))]);
        assert!(diff(&a, &a.clone()).is_empty());
        assert!(diff(&a, &a).different_fields.is_empty());
    }

    #[test]
    fn reports_added_removed_changed_by_pointer() {
        let a = obj(&[
            ("cache", Value::Null),
            ("cookies", obj(&[("a/b", int(1))])),
            ("list", Value::Array(vec![int(1), int(2)])),
        ]);
        let b = obj(&[
            ("cache", int(1)),
            ("cookies", obj(&[("previous~run", Value::Bool(true))])),
            ("list", Value::Array(vec![int(1)])),
        ]);
        let d = diff(&a, &b);
        assert_eq!(d.different_fields, ["cache", "cookies", "list"]);
        let got: Vec<(&str, ChangeKind)> = d
            .changes
            .iter()
            .map(|c| (c.pointer.as_str(), c.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("/cache", ChangeKind::Changed),
                ("/cookies/a~1b", ChangeKind::Removed),
                ("/cookies/previous~0run", ChangeKind::Added),
                ("/list/1", ChangeKind::Removed),
            ]
        );
        assert_eq!(d.changes[0].before, Some(Value::Null));
        assert_eq!(d.changes[0].after, Some(int(1)));
    }

    #[test]
    fn sets_are_compared_by_membership_not_position() {
        let set = |members: &[i64]| {
            obj(&[(
                SET_KEY,
                Value::Array(members.iter().map(|&i| int(i)).collect()),
            )])
        };
        let d = diff(
            &obj(&[("seen", set(&[1, 3]))]),
            &obj(&[("seen", set(&[0, 1, 2, 3]))]),
        );
        let got: Vec<(&str, ChangeKind, Option<&Value>)> = d
            .changes
            .iter()
            .map(|c| (c.pointer.as_str(), c.kind, c.after.as_ref()))
            .collect();
        assert_eq!(
            got,
            [
                ("/seen", ChangeKind::MemberAdded, Some(&int(0))),
                ("/seen", ChangeKind::MemberAdded, Some(&int(2))),
            ]
        );
        assert_eq!(d.different_fields, ["seen"]);
        let d = diff(&set(&[4, 4, 5]), &set(&[4, 5]));
        assert_eq!(
            d.changes.len(),
            1,
            "one of two members that read the same was lost"
        );
        assert_eq!(d.changes[0].kind, ChangeKind::MemberRemoved);
        let d = diff(&set(&[4, 5]), &set(&[5]));
        assert_eq!(d.changes.len(), 1);
        assert_eq!(d.changes[0].kind, ChangeKind::MemberRemoved);
        assert_eq!(d.changes[0].before, Some(int(4)));
        let empty = Value::Array(Vec::new());
        let grown = Value::Array(vec![int(1), int(2)]);
        let d = diff(
            &obj(&[("visited", empty)]),
            &obj(&[("visited", grown.clone())]),
        );
        assert_eq!(
            d.changes.len(),
            1,
            "an empty list that filled is one change"
        );
        assert_eq!(
            (d.changes[0].pointer.as_str(), d.changes[0].kind),
            ("/visited", ChangeKind::Changed)
        );
        assert_eq!(d.changes[0].after, Some(grown));
        // A set and a list are different things, whatever their members.
        let list = Value::Array(vec![int(1)]);
        assert_eq!(diff(&set(&[1]), &list).changes[0].kind, ChangeKind::Changed);
    }

    #[test]
    fn int_and_float_differ_but_nans_agree() {
        let one_f = Value::Number(Number::Float(1.0));
        assert!(!diff(&int(1), &one_f).is_empty());
        assert_eq!(diff(&int(1), &one_f).different_fields, [""]);
        let zero = Value::Number(Number::Float(0.0));
        let neg_zero = Value::Number(Number::Float(-0.0));
        assert!(!same(&zero, &neg_zero));
        let nan = Value::Number(Number::Float(f64::NAN));
        assert!(same(&nan, &Value::Number(Number::Float(-f64::NAN))));
    }
}
