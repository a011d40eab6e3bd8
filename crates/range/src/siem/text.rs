//! Rendering a SIEM line's text and its features. Every line of every sub-env goes through
//! here, so the pieces are appended directly (`push_str`, digits by hand) instead of through
//! `write!`/`format!`, whose formatter machinery cost more than the text itself, and the
//! features are built beside the text instead of scanning it afterwards (tests keep the
//! `write!` renderer and require the same bytes, the same draws and features equal to those of
//! the text, for every template).

use lockstep::clock::civil_from_days;

use crate::rng::Rng;
use crate::topology::push_ip;

use super::Template::*;
use super::{next_token, push_features, Feats, LineCtx, DOMAINS, USERS};

/// Renders one event. All variable parts (template, user, ports, domain) come from `rng`.
pub fn render(ctx: &LineCtx<'_>, rng: &mut Rng) -> String {
    render_line(ctx, rng).0
}

/// A line being rendered: its text, and its features (what [`super::features`] of the text
/// gives) built beside it.
struct Line {
    text: String,
    features: Vec<u8>,
}

/// Appends fixed text with its features computed at compile time.
macro_rules! fixed {
    ($line:expr, $text:expr) => {
        $line.fixed($text, const { Feats::of($text) })
    };
}

impl Line {
    fn fixed(&mut self, text: &str, feats: Feats) {
        self.text.push_str(text);
        self.features.extend_from_slice(feats.as_slice());
    }

    /// A value (a user, an image, a command line...), tokenised alone.
    fn value(&mut self, v: &str) {
        self.text.push_str(v);
        push_features(v.as_bytes(), &mut self.features);
    }

    fn data(&mut self, open: &str, open_feats: Feats, value: &str) {
        self.fixed(open, open_feats);
        self.value(value);
        fixed!(self, "</Data>");
    }

    fn data_ip(&mut self, open: &str, open_feats: Feats, addr: u32) {
        self.fixed(open, open_feats);
        push_ip(&mut self.text, addr);
        fixed!(self, "</Data>");
    }

    fn data_uint(&mut self, open: &str, open_feats: Feats, v: u64) {
        self.fixed(open, open_feats);
        push_uint(&mut self.text, v);
        fixed!(self, "</Data>");
    }
}

/// `<Data Name="NAME">` and its features, for [`Line::data`] and its kin.
macro_rules! name {
    ($name:literal) => {
        (
            concat!("<Data Name=\"", $name, "\">"),
            const { Feats::of(concat!("<Data Name=\"", $name, "\">")) },
        )
    };
}

/// [`render`], with the line's features: equal to [`super::features`] of the text, but
/// without scanning it. Each fixed piece's features are computed at compile time and each
/// value (user, image, command line, domain) is tokenised alone; the numbers, addresses and
/// the timestamp are digit-led tokens between separators, which the encoder skips, and the
/// event id (the one number it keeps, after `EventID`) is hashed alone. No token spans two
/// pieces because every piece boundary has a separator (`<`, `>`, `"`) on one side. A test
/// compares with the features of the text over every template and flavour; a timestamp
/// outside years 0..=9999 (never reached by an episode) takes the scan.
pub fn render_line(ctx: &LineCtx<'_>, rng: &mut Rng) -> (String, Vec<u8>) {
    let mut text = String::with_capacity(360);
    let features = render_line_into(ctx, rng, &mut text);
    (text, features)
}

/// [`render_line`] into `text` (cleared first), whose allocation a caller rendering many lines
/// keeps: the core copies each line once, into its shared `Arc<str>`, instead of allocating,
/// growing and freeing a `String` per line.
pub fn render_line_into(ctx: &LineCtx<'_>, rng: &mut Rng, text: &mut String) -> Vec<u8> {
    let mut features = Vec::with_capacity(40);
    render_line_reusing(ctx, rng, text, &mut features);
    features
}

/// [`render_line_into`] with the features into `features` (cleared first) too, whose
/// allocation the caller keeps as well.
pub fn render_line_reusing(
    ctx: &LineCtx<'_>,
    rng: &mut Rng,
    text: &mut String,
    features: &mut Vec<u8>,
) {
    text.clear();
    features.clear();
    let weights: [f64; 5] = {
        let mut w = [0.0; 5];
        for (i, (_, x)) in ctx.flavor.templates.iter().take(5).enumerate() {
            w[i] = *x;
        }
        w
    };
    let ti = rng.weighted_index(&weights).unwrap_or(0);
    let template = ctx.flavor.templates[ti].0;
    let user = USERS[rng.below(USERS.len() as u64) as usize];
    let src_port = rng.range(49152, 65535);
    let domain = DOMAINS[rng.below(DOMAINS.len() as u64) as usize];
    let image = ctx.benign_image.unwrap_or(ctx.flavor.image);
    let command = if ctx.benign_image.is_some() {
        image
    } else {
        ctx.flavor.command
    };
    let port = if ctx.benign_image.is_some() {
        443
    } else {
        ctx.flavor.port
    };

    let mut l = Line {
        text: std::mem::take(text),
        features: std::mem::take(features),
    };
    if template.sysmon() {
        fixed!(
            l,
            "<Event><System><Provider Name=\"Microsoft-Windows-Sysmon\"/><EventID>"
        );
    } else {
        fixed!(
            l,
            "<Event><System><Provider Name=\"Microsoft-Windows-Security-Auditing\"/><EventID>"
        );
    }
    let id_at = l.text.len();
    push_uint(&mut l.text, u64::from(template.event_id()));
    // The number right after `EventID`: the one digit-led token the encoder keeps.
    let (_, id_feature, _) = next_token(l.text.as_bytes(), id_at, true);
    l.features.extend(id_feature);
    fixed!(l, "</EventID><EventRecordID>");
    push_uint(&mut l.text, ctx.record);
    fixed!(l, "</EventRecordID><TimeCreated SystemTime=\"");
    let fast_time = push_rfc3339(&mut l.text, ctx.unix);
    fixed!(l, "\"/><Computer>");
    push_ip(&mut l.text, ctx.computer);
    fixed!(l, "</Computer></System><EventData>");
    match template {
        Logon4624 => {
            let (n, f) = name!("TargetUserName");
            l.data(n, f, user);
            let (n, f) = name!("LogonType");
            l.data(n, f, if ctx.success { "3" } else { "10" });
            let (n, f) = name!("IpAddress");
            l.data_ip(n, f, ctx.peer);
            let (n, f) = name!("IpPort");
            l.data_uint(n, f, u64::from(src_port));
        }
        LogonFailed4625 => {
            let (n, f) = name!("TargetUserName");
            l.data(n, f, user);
            let (n, f) = name!("Status");
            l.data(n, f, "0xc000006d");
            let (n, f) = name!("IpAddress");
            l.data_ip(n, f, ctx.peer);
        }
        ExplicitCreds4648 => {
            let (n, f) = name!("SubjectUserName");
            l.data(n, f, user);
            let (n, f) = name!("TargetUserName");
            l.data(n, f, "administrator");
            let (n, f) = name!("TargetServerName");
            l.data_ip(n, f, ctx.peer);
            let (n, f) = name!("ProcessName");
            l.data(n, f, image);
        }
        ProcessCreate4688 => {
            let (n, f) = name!("SubjectUserName");
            l.data(n, f, user);
            let (n, f) = name!("NewProcessName");
            l.data(n, f, image);
            let (n, f) = name!("CommandLine");
            l.data(n, f, command);
        }
        KerberosTgt4768 => {
            let (n, f) = name!("TargetUserName");
            l.data(n, f, user);
            let (n, f) = name!("ServiceName");
            l.data(n, f, "krbtgt");
            let (n, f) = name!("TicketEncryptionType");
            let kind = if ctx.benign_image.is_some() {
                "0x12"
            } else {
                "0x17"
            };
            l.data(n, f, kind);
            let (n, f) = name!("IpAddress");
            l.data_ip(n, f, ctx.peer);
        }
        CredValidation4776 => {
            let (n, f) = name!("TargetUserName");
            l.data(n, f, user);
            let (n, f) = name!("Status");
            l.data(n, f, if ctx.success { "0x0" } else { "0xc000006a" });
        }
        SysmonProcess1 => {
            let (n, f) = name!("Image");
            l.data(n, f, image);
            let (n, f) = name!("CommandLine");
            l.data(n, f, command);
            let (n, f) = name!("User");
            l.data(n, f, user);
        }
        SysmonNetwork3 => {
            let (n, f) = name!("Image");
            l.data(n, f, image);
            let (n, f) = name!("DestinationIp");
            l.data_ip(n, f, ctx.peer);
            let (n, f) = name!("DestinationPort");
            l.data_uint(n, f, u64::from(port));
            let (n, f) = name!("SourcePort");
            l.data_uint(n, f, u64::from(src_port));
        }
        SysmonProcessAccess10 => {
            let (n, f) = name!("SourceImage");
            l.data(n, f, image);
            let (n, f) = name!("TargetImage");
            l.data(n, f, "C:\\Windows\\system32\\lsass.exe");
            let (n, f) = name!("GrantedAccess");
            let access = if ctx.benign_image.is_some() {
                "0x1000"
            } else {
                "0x1fffff"
            };
            l.data(n, f, access);
        }
        SysmonDns22 => {
            let (n, f) = name!("Image");
            l.data(n, f, image);
            let (n, f) = name!("QueryName");
            l.data(n, f, domain);
        }
    }
    fixed!(l, "</EventData></Event>");
    if !fast_time {
        l.features.clear();
        super::push_features(l.text.as_bytes(), &mut l.features);
    }
    *text = l.text;
    *features = l.features;
}

/// Appends `v` in decimal, as `{}` would.
pub fn push_uint(s: &mut String, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        s.push(char::from(d));
    }
}

/// Appends `n` (< 10^width) zero-padded to `width` digits, as `{:0width$}` would.
fn push_padded(s: &mut String, n: u32, width: u32) {
    let mut div = 10u32.pow(width - 1);
    while div > 0 {
        s.push(char::from(b'0' + ((n / div) % 10) as u8));
        div /= 10;
    }
}

/// Appends [`lockstep::clock::format_rfc3339_millis`]`(unix, 0)` without formatting through
/// `format!`; years outside 0..=9999 (never reached by an episode) take the `format!` path
/// and return false (their text may not be one digit-led token: `-001-...`).
pub fn push_rfc3339(s: &mut String, unix: i64) -> bool {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        s.push_str(&lockstep::clock::format_rfc3339_millis(unix, 0));
        return false;
    }
    push_padded(s, y as u32, 4);
    s.push('-');
    push_padded(s, m, 2);
    s.push('-');
    push_padded(s, d, 2);
    s.push('T');
    push_padded(s, secs / 3600, 2);
    s.push(':');
    push_padded(s, (secs / 60) % 60, 2);
    s.push(':');
    push_padded(s, secs % 60, 2);
    s.push_str(".000Z");
    true
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;

    use super::*;
    use crate::siem::{benign_image, Flavor, BENIGN, FALSE_POSITIVE, RED_FLAVOR};

    fn push_ip_reference(out: &mut String, addr: u32) {
        let _ = write!(
            out,
            "{}.{}.{}.{}",
            addr >> 24,
            (addr >> 16) & 255,
            (addr >> 8) & 255,
            addr & 255
        );
    }

    /// The renderer as first written (`write!` for every piece, the timestamp through
    /// `format!`): what [`render`] must equal, byte for byte, with the same draws.
    fn render_reference(ctx: &LineCtx<'_>, rng: &mut Rng) -> String {
        let weights: [f64; 5] = {
            let mut w = [0.0; 5];
            for (i, (_, x)) in ctx.flavor.templates.iter().take(5).enumerate() {
                w[i] = *x;
            }
            w
        };
        let ti = rng.weighted_index(&weights).unwrap_or(0);
        let template = ctx.flavor.templates[ti].0;
        let user = USERS[rng.below(USERS.len() as u64) as usize];
        let src_port = rng.range(49152, 65535);
        let domain = DOMAINS[rng.below(DOMAINS.len() as u64) as usize];
        let image = ctx.benign_image.unwrap_or(ctx.flavor.image);
        let command = if ctx.benign_image.is_some() {
            image
        } else {
            ctx.flavor.command
        };
        let port = if ctx.benign_image.is_some() {
            443
        } else {
            ctx.flavor.port
        };

        let mut s = String::with_capacity(360);
        let provider = if template.sysmon() {
            "Microsoft-Windows-Sysmon"
        } else {
            "Microsoft-Windows-Security-Auditing"
        };
        let _ = write!(
            s,
            "<Event><System><Provider Name=\"{provider}\"/><EventID>{}</EventID><EventRecordID>{}</EventRecordID><TimeCreated SystemTime=\"{}\"/><Computer>",
            template.event_id(),
            ctx.record,
            lockstep::clock::format_rfc3339_millis(ctx.unix, 0),
        );
        push_ip_reference(&mut s, ctx.computer);
        s.push_str("</Computer></System><EventData>");
        let data = |s: &mut String, name: &str, value: &str| {
            let _ = write!(s, "<Data Name=\"{name}\">{value}</Data>");
        };
        let data_ip = |s: &mut String, name: &str, addr: u32| {
            let _ = write!(s, "<Data Name=\"{name}\">");
            push_ip_reference(s, addr);
            s.push_str("</Data>");
        };
        match template {
            Logon4624 => {
                data(&mut s, "TargetUserName", user);
                data(&mut s, "LogonType", if ctx.success { "3" } else { "10" });
                data_ip(&mut s, "IpAddress", ctx.peer);
                let _ = write!(s, "<Data Name=\"IpPort\">{src_port}</Data>");
            }
            LogonFailed4625 => {
                data(&mut s, "TargetUserName", user);
                data(&mut s, "Status", "0xc000006d");
                data_ip(&mut s, "IpAddress", ctx.peer);
            }
            ExplicitCreds4648 => {
                data(&mut s, "SubjectUserName", user);
                data(&mut s, "TargetUserName", "administrator");
                data_ip(&mut s, "TargetServerName", ctx.peer);
                data(&mut s, "ProcessName", image);
            }
            ProcessCreate4688 => {
                data(&mut s, "SubjectUserName", user);
                data(&mut s, "NewProcessName", image);
                data(&mut s, "CommandLine", command);
            }
            KerberosTgt4768 => {
                data(&mut s, "TargetUserName", user);
                data(&mut s, "ServiceName", "krbtgt");
                data(
                    &mut s,
                    "TicketEncryptionType",
                    if ctx.benign_image.is_some() {
                        "0x12"
                    } else {
                        "0x17"
                    },
                );
                data_ip(&mut s, "IpAddress", ctx.peer);
            }
            CredValidation4776 => {
                data(&mut s, "TargetUserName", user);
                data(
                    &mut s,
                    "Status",
                    if ctx.success { "0x0" } else { "0xc000006a" },
                );
            }
            SysmonProcess1 => {
                data(&mut s, "Image", image);
                data(&mut s, "CommandLine", command);
                data(&mut s, "User", user);
            }
            SysmonNetwork3 => {
                data(&mut s, "Image", image);
                data_ip(&mut s, "DestinationIp", ctx.peer);
                let _ = write!(
                    s,
                    "<Data Name=\"DestinationPort\">{port}</Data><Data Name=\"SourcePort\">{src_port}</Data>"
                );
            }
            SysmonProcessAccess10 => {
                data(&mut s, "SourceImage", image);
                data(&mut s, "TargetImage", "C:\\Windows\\system32\\lsass.exe");
                data(
                    &mut s,
                    "GrantedAccess",
                    if ctx.benign_image.is_some() {
                        "0x1000"
                    } else {
                        "0x1fffff"
                    },
                );
            }
            SysmonDns22 => {
                data(&mut s, "Image", image);
                data(&mut s, "QueryName", domain);
            }
        }
        s.push_str("</EventData></Event>");
        s
    }

    /// Every flavour (every red action's, benign, false positive), with and without a benign
    /// image, success or not, over timestamps from year 0 to past 9999, record ids and
    /// addresses up to their maxima: the same text and the same stream position as the
    /// `write!` renderer, features equal to those of the text (also rendered into the last
    /// line's buffers), and every template reached.
    #[test]
    fn render_equals_the_write_renderer() {
        let flavors: Vec<&Flavor> = RED_FLAVOR
            .iter()
            .chain([&BENIGN, &FALSE_POSITIVE])
            .collect();
        let mut draw = Rng::new(11, "render-test");
        let mut seen = std::collections::BTreeSet::new();
        let unix_cases = [
            lockstep::clock::DEFAULT_EPOCH_UNIX,
            lockstep::clock::DEFAULT_EPOCH_UNIX - 1,
            0,
            -1,
            -62_167_219_200, // 0000-01-01
            -62_167_219_201, // year -1: the format! path
            253_402_300_799, // 9999-12-31T23:59:59
            253_402_300_800, // year 10000: the format! path
            951_782_400,     // 2000-02-29
        ];
        let mut kept = (String::new(), Vec::new());
        for k in 0..20_000u64 {
            let flavor = flavors[k as usize % flavors.len()];
            let image = (k % 3 == 0).then(|| benign_image(&mut draw));
            let unix = match k % 4 {
                0 => unix_cases[(k / 4) as usize % unix_cases.len()],
                1 => lockstep::clock::DEFAULT_EPOCH_UNIX + i64::from(draw.range(0, u32::MAX)),
                _ => i64::from(draw.range(0, u32::MAX)) * 60 - 62_167_219_200,
            };
            let record = match k % 5 {
                0 => u64::MAX,
                1 => 0,
                _ => u64::from(draw.range(0, u32::MAX)) << (k % 33),
            };
            let ctx = LineCtx {
                unix,
                record,
                computer: draw.range(0, u32::MAX),
                peer: if k % 7 == 0 {
                    u32::MAX
                } else {
                    draw.range(0, u32::MAX)
                },
                flavor,
                benign_image: image,
                success: k % 2 == 0,
            };
            let (mut a, mut b) = (Rng::new(k, "siem"), Rng::new(k, "siem"));
            let (got, features) = render_line(&ctx, &mut a);
            let want = render_reference(&ctx, &mut b);
            assert_eq!(got, want);
            assert_eq!(features, crate::siem::features(&want), "{want}");
            assert_eq!(a, b, "the same draws");
            // Into the last line's buffers, as the core renders.
            let mut c = Rng::new(k, "siem");
            render_line_reusing(&ctx, &mut c, &mut kept.0, &mut kept.1);
            assert_eq!((&kept.0, &kept.1), (&want, &features));
            assert_eq!(c, b);
            let id = &want[want.find("<EventID>").unwrap() + 9..want.find("</EventID>").unwrap()];
            seen.insert(id.to_owned());
        }
        assert_eq!(seen.len(), 10, "templates reached: {seen:?}");
    }

    #[test]
    fn push_rfc3339_equals_the_clock() {
        let mut draw = Rng::new(3, "rfc3339-test");
        for k in 0..100_000i64 {
            let unix = match k % 3 {
                0 => lockstep::clock::DEFAULT_EPOCH_UNIX + k * 977,
                1 => i64::from(draw.range(0, u32::MAX)) * 80 - 70_000_000_000,
                _ => k * 86_399 - 62_167_219_200,
            };
            let mut s = String::new();
            let fast = push_rfc3339(&mut s, unix);
            assert_eq!(s, lockstep::clock::format_rfc3339_millis(unix, 0), "{unix}");
            // The fast path's text is one digit-led token, which the encoder skips.
            assert!(!fast || crate::siem::features(&s).is_empty(), "{s}");
        }
    }

    #[test]
    fn push_uint_equals_display() {
        let mut draw = Rng::new(5, "uint-test");
        for k in 0..10_000u32 {
            let v = match k % 3 {
                0 => u64::from(k),
                1 => u64::MAX - u64::from(k),
                _ => u64::from(draw.range(0, u32::MAX)) << (k % 33),
            };
            let mut s = String::new();
            push_uint(&mut s, v);
            assert_eq!(s, v.to_string());
        }
    }
}
