//! Rendering a SIEM line's text. Every line of every sub-env goes through here, so the pieces
//! are appended directly (`push_str`, digits by hand) instead of through `write!`/`format!`,
//! whose formatter machinery cost more than the text itself (a test keeps the `write!`
//! renderer and requires the same bytes and the same draws for every template).

use crate::rng::Rng;
use crate::topology::push_ip;

use super::Template::*;
use super::{LineCtx, DOMAINS, USERS};

/// Renders one event. All variable parts (template, user, ports, domain) come from `rng`.
pub fn render(ctx: &LineCtx<'_>, rng: &mut Rng) -> String {
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
    s.push_str("<Event><System><Provider Name=\"");
    s.push_str(if template.sysmon() {
        "Microsoft-Windows-Sysmon"
    } else {
        "Microsoft-Windows-Security-Auditing"
    });
    s.push_str("\"/><EventID>");
    push_uint(&mut s, u64::from(template.event_id()));
    s.push_str("</EventID><EventRecordID>");
    push_uint(&mut s, ctx.record);
    s.push_str("</EventRecordID><TimeCreated SystemTime=\"");
    push_rfc3339(&mut s, ctx.unix);
    s.push_str("\"/><Computer>");
    push_ip(&mut s, ctx.computer);
    s.push_str("</Computer></System><EventData>");
    match template {
        Logon4624 => {
            data(&mut s, "TargetUserName", user);
            data(&mut s, "LogonType", if ctx.success { "3" } else { "10" });
            data_ip(&mut s, "IpAddress", ctx.peer);
            data_uint(&mut s, "IpPort", u64::from(src_port));
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
            data_uint(&mut s, "DestinationPort", u64::from(port));
            data_uint(&mut s, "SourcePort", u64::from(src_port));
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

fn open_data(s: &mut String, name: &str) {
    s.push_str("<Data Name=\"");
    s.push_str(name);
    s.push_str("\">");
}

fn data(s: &mut String, name: &str, value: &str) {
    open_data(s, name);
    s.push_str(value);
    s.push_str("</Data>");
}

fn data_ip(s: &mut String, name: &str, addr: u32) {
    open_data(s, name);
    push_ip(s, addr);
    s.push_str("</Data>");
}

fn data_uint(s: &mut String, name: &str, v: u64) {
    open_data(s, name);
    push_uint(s, v);
    s.push_str("</Data>");
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
/// `format!`; years outside 0..=9999 (never reached by an episode) take the `format!` path.
pub fn push_rfc3339(s: &mut String, unix: i64) {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        s.push_str(&lockstep::clock::format_rfc3339_millis(unix, 0));
        return;
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
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's
/// days-to-civil, as `lockstep::clock` computes it; the test compares the two).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
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
    /// `write!` renderer, and every template reached.
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
            let got = render(&ctx, &mut a);
            let want = render_reference(&ctx, &mut b);
            assert_eq!(got, want);
            assert_eq!(a, b, "the same draws");
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
            push_rfc3339(&mut s, unix);
            assert_eq!(s, lockstep::clock::format_rfc3339_millis(unix, 0), "{unix}");
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
