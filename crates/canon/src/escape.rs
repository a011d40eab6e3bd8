//! String escaping for both profiles, streaming runs of plain bytes in one `write_all`.

use std::io;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes Python's `ensure_ascii` writes as themselves: printable ASCII except `"` and `\`.
const fn python_plain_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b <= 0x7e {
        t[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    t
}

/// Bytes RFC 8785 writes as themselves: everything but controls, `"` and `\`.
const fn jcs_plain_table() -> [bool; 256] {
    let mut t = [true; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = false;
        b += 1;
    }
    t[b'"' as usize] = false;
    t[b'\\' as usize] = false;
    t
}

static PYTHON_PLAIN: [bool; 256] = python_plain_table();
static JCS_PLAIN: [bool; 256] = jcs_plain_table();

fn short_escape(b: u8) -> Option<&'static [u8]> {
    Some(match b {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        0x08 => b"\\b",
        0x0c => b"\\f",
        _ => return None,
    })
}

fn u_escape(unit: u16) -> [u8; 6] {
    [
        b'\\',
        b'u',
        HEX[(unit >> 12) as usize & 0xf],
        HEX[(unit >> 8) as usize & 0xf],
        HEX[(unit >> 4) as usize & 0xf],
        HEX[unit as usize & 0xf],
    ]
}

/// `"..."` as Python's `json.dumps(ensure_ascii=True)` writes it: everything outside printable
/// ASCII as lowercase `\uxxxx` (astral chars as a surrogate pair), 0x7F included.
pub(crate) fn python_string<W: io::Write>(s: &str, out: &mut W) -> io::Result<()> {
    out.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if PYTHON_PLAIN[b as usize] {
            i += 1;
            continue;
        }
        if start < i {
            out.write_all(&bytes[start..i])?;
        }
        if let Some(esc) = short_escape(b) {
            out.write_all(esc)?;
            i += 1;
        } else if b < 0x80 {
            out.write_all(&u_escape(u16::from(b)))?;
            i += 1;
        } else {
            // `s` is valid UTF-8, so this char decodes; escape it as UTF-16 units.
            let c = s[i..].chars().next().unwrap_or('\u{fffd}');
            let mut units = [0u16; 2];
            let mut escaped = [0u8; 12];
            let encoded = c.encode_utf16(&mut units);
            for (k, &unit) in encoded.iter().enumerate() {
                escaped[k * 6..k * 6 + 6].copy_from_slice(&u_escape(unit));
            }
            out.write_all(&escaped[..encoded.len() * 6])?;
            i += c.len_utf8();
        }
        start = i;
    }
    if start < bytes.len() {
        out.write_all(&bytes[start..])?;
    }
    out.write_all(b"\"")
}

/// `"..."` as RFC 8785 section 3.2.2.2 writes it: only `"`, `\` and controls escaped
/// (`\b \t \n \f \r` short, the rest as lowercase `\u00xx`), everything else as raw UTF-8.
pub(crate) fn jcs_string<W: io::Write>(s: &str, out: &mut W) -> io::Result<()> {
    out.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if JCS_PLAIN[b as usize] {
            continue;
        }
        if start < i {
            out.write_all(&bytes[start..i])?;
        }
        match short_escape(b) {
            Some(esc) => out.write_all(esc)?,
            None => out.write_all(&u_escape(u16::from(b)))?,
        }
        start = i + 1;
    }
    if start < bytes.len() {
        out.write_all(&bytes[start..])?;
    }
    out.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(s: &str) -> String {
        let mut v = Vec::new();
        python_string(s, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    fn js(s: &str) -> String {
        let mut v = Vec::new();
        jcs_string(s, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn python_escapes() {
        assert_eq!(py("plain"), r#""plain""#);
        assert_eq!(py("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(py("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(py("\u{0}\u{1f}\u{7f}"), r#""\u0000\u001f\u007f""#);
        assert_eq!(py("é€\u{2028}\u{feff}"), r#""\u00e9\u20ac\u2028\ufeff""#);
        assert_eq!(py("😀"), r#""\ud83d\ude00""#);
        assert_eq!(py("/"), r#""/""#);
    }

    #[test]
    fn jcs_escapes() {
        assert_eq!(js("a\"b\\c/"), r#""a\"b\\c/""#);
        assert_eq!(js("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(js("\u{0}\u{f}\u{1f}"), r#""\u0000\u000f\u001f""#);
        assert_eq!(js("\u{7f}é€😀\u{2028}"), "\"\u{7f}é€😀\u{2028}\"");
    }
}
