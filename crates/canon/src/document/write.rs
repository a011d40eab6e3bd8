//! The canonical bytes of a [`Document`]: the tree writer's walk (`writer.rs`) over entries.
//!
//! The walk reads the entries in the text's order where it can (arrays, objects whose keys
//! came in order), so it streams through one vector instead of chasing pointers; the tokens
//! are written by the tree writer's own functions (numbers, escaping), and a number whose text
//! is canonical in every profile is copied from the text. Errors name the same JSON Pointer,
//! built while the error unwinds.

use crate::escape::{jcs_string, python_string};
use crate::sink::Out;
use crate::writer::{cmp_utf16, jcs_number, python_number, too_deep, under, Walked};
use crate::{Profile, MAX_WRITE_DEPTH};

use super::{Document, Entry, Tag, ASTRAL_KEYS, DECODED, PRINTABLE};

pub(super) fn walk<O: Out>(doc: &Document<'_>, profile: Profile, out: &mut O) -> Walked {
    let mut w = Walk {
        doc,
        out,
        jcs: profile == Profile::Jcs,
        allow_nan: profile == Profile::Python,
    };
    if doc.entries.is_empty() {
        return Ok(());
    }
    w.value(0, 0)
}

struct Walk<'d, 't, 'o, O: Out> {
    doc: &'d Document<'t>,
    out: &'o mut O,
    jcs: bool,
    allow_nan: bool,
}

impl<O: Out> Walk<'_, '_, '_, O> {
    /// Any value. Scalars are written here, inline in the loops of the containers around
    /// them; only a container costs a call.
    #[inline(always)]
    fn value(&mut self, index: u32, depth: usize) -> Walked {
        let doc = self.doc;
        let e = doc.entries[index as usize];
        match e.tag {
            Tag::Null => self.out.put(b"null"),
            Tag::True => self.out.put(b"true"),
            Tag::False => self.out.put(b"false"),
            Tag::NumberText => self
                .out
                .put(&doc.text[e.a as usize..(e.a + e.len) as usize]),
            Tag::Int | Tag::Float | Tag::BigInt => self.number(e)?,
            Tag::String | Tag::Key => self.string(e),
            Tag::Array | Tag::Object => self.container(index, e, depth)?,
        }
        Ok(())
    }

    fn number(&mut self, e: Entry) -> Walked {
        let num = self.doc.num(e);
        if self.jcs {
            jcs_number(num, self.out)
        } else {
            python_number(num, self.allow_nan, self.out)
        }
    }

    fn container(&mut self, index: u32, e: Entry, depth: usize) -> Walked {
        let doc = self.doc;
        if depth >= MAX_WRITE_DEPTH {
            return Err(too_deep());
        }
        if e.tag == Tag::Array {
            self.out.byte(b'[');
            let mut item = index + 1;
            for i in 0..e.len {
                if i > 0 {
                    self.out.byte(b',');
                }
                self.value(item, depth + 1)
                    .map_err(|err| under(|| i.to_string(), err))?;
                item = doc.next(item);
            }
            self.out.byte(b']');
            return Ok(());
        }
        self.out.byte(b'{');
        if self.jcs && e.flags & ASTRAL_KEYS != 0 {
            let mut keys: Vec<u32> = doc.keys_in_order(index).collect();
            keys.sort_by(|&a, &b| {
                cmp_utf16(
                    doc.str_of(doc.entries[a as usize]),
                    doc.str_of(doc.entries[b as usize]),
                )
            });
            for (i, key) in keys.into_iter().enumerate() {
                self.member(i, key, depth)?;
            }
        } else {
            for (i, key) in doc.keys_in_order(index).enumerate() {
                self.member(i, key, depth)?;
            }
        }
        self.out.byte(b'}');
        Ok(())
    }

    #[inline]
    fn member(&mut self, i: usize, key: u32, depth: usize) -> Walked {
        if i > 0 {
            self.out.byte(b',');
        }
        self.string(self.doc.entries[key as usize]);
        self.out.byte(b':');
        self.value(key + 1, depth + 1).map_err(|err| {
            under(
                || self.doc.str_of(self.doc.entries[key as usize]).to_owned(),
                err,
            )
        })
    }

    /// A string or key: one with nothing to escape in either profile between quotes, the
    /// rest through the profile's escaping.
    #[inline]
    fn string(&mut self, e: Entry) {
        let s = self.doc.str_of(e);
        if e.flags & PRINTABLE != 0 || (self.jcs && e.flags & DECODED == 0) {
            // A raw string has no `"`, `\` or control, which is all jcs escapes.
            self.out.quoted(s.as_bytes());
        } else if self.jcs {
            jcs_string(s, self.out);
        } else {
            python_string(s, self.out);
        }
    }
}
