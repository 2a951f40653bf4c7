//! Click's configuration archives (`lib/archive.cc`): a Unix `ar` file
//! whose `config` member is the configuration and whose other members
//! travel with it (`click-combine`'s `componentmap`, `elementmap.xml`).
//!
//! ```text
//! !<arch>\n
//! name[16] date[12] uid[6] gid[6] mode[8, octal] size[10] "`\n"   data, padded to even
//! ...
//! ```
//!
//! Names longer than 15 bytes or with spaces are written BSD-style
//! (`#1/LEN`, the name opening the data), as Click writes them; GNU-style
//! long names (`//` table, `/OFFSET`) are read too.

/// The magic that opens an archive.
pub const MAGIC: &str = "!<arch>\n";

/// One member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member's name (`config`, `componentmap`, ...).
    pub name: String,
    /// Its contents.
    pub data: String,
    /// Modification time, seconds since the Unix epoch.
    pub date: u64,
    /// Owner's user ID.
    pub uid: u32,
    /// Owner's group ID.
    pub gid: u32,
    /// Permission bits.
    pub mode: u32,
}

impl Member {
    /// A member as Click's tools make a new one (`init_archive_element`):
    /// dated now, owned by this process's user, the mode given.
    pub fn new(name: &str, data: String, mode: u32) -> Member {
        let date = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // /proc/self belongs to the process's effective user and group.
        let (uid, gid) = std::fs::metadata("/proc/self").map_or((0, 0), |m| {
            use std::os::unix::fs::MetadataExt as _;
            (m.uid(), m.gid())
        });
        Member {
            name: name.to_string(),
            data,
            date,
            uid,
            gid,
            mode,
        }
    }
}

/// Whether `text` is an archive rather than a configuration (Click looks
/// at the first byte only: no configuration starts with `!`).
pub fn is_archive(text: &str) -> bool {
    text.starts_with('!')
}

/// A decimal or octal header field: digits, then spaces to its end.
fn field(h: &[u8], at: usize, len: usize, radix: u32, what: &str) -> Result<u64, String> {
    let raw = &h[at..at + len];
    let digits = raw.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest_blank = raw[digits..].iter().all(|b| b.is_ascii_whitespace());
    std::str::from_utf8(&raw[..digits])
        .ok()
        .filter(|_| digits > 0 && rest_blank)
        .and_then(|s| u64::from_str_radix(s, radix).ok())
        .ok_or_else(|| format!("bad {what} in archive"))
}

/// The members of archive `text`.
pub fn parse(text: &str) -> Result<Vec<Member>, String> {
    let b = text.as_bytes();
    if b.len() <= MAGIC.len() || !text.starts_with(MAGIC) {
        return Err("not an archive".into());
    }
    let mut out = Vec::new();
    let mut longnames: Option<&[u8]> = None;
    let mut at = MAGIC.len();
    while at + 60 <= b.len() {
        let h = &b[at..at + 60];
        if &h[58..60] != b"`\n" {
            return Err("bad archive: missing header magic number".into());
        }
        let size = usize::try_from(field(h, 48, 10, 10, "size")?)
            .map_err(|_| "bad size in archive".to_string())?;
        let start = at + 60;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= b.len())
            .ok_or_else(|| "truncated archive".to_string())?;
        let data = &b[start..end];
        if h.starts_with(b"//") && h[2].is_ascii_whitespace() {
            if longnames.is_some() {
                return Err("two long name sections in archive".into());
            }
            longnames = Some(data);
        } else {
            let (name, body) = if h[0] == b'/' && h[1].is_ascii_digit() {
                let off = usize::try_from(field(h, 1, 15, 10, "long name")?).unwrap_or(usize::MAX);
                let table = longnames
                    .filter(|t| off < t.len())
                    .ok_or_else(|| "bad long name in archive".to_string())?;
                let n = &table[off..];
                let len = n
                    .iter()
                    .position(|&c| c == b'/' || c.is_ascii_whitespace())
                    .unwrap_or(n.len());
                (&n[..len], data)
            } else if h.starts_with(b"#1/") && h[3].is_ascii_digit() {
                let len = usize::try_from(field(h, 3, 13, 10, "long name")?).unwrap_or(usize::MAX);
                if len > data.len() {
                    return Err("bad long name in archive".into());
                }
                data.split_at(len)
            } else {
                let len = h[..16]
                    .iter()
                    .position(|&c| c == b'/' || c.is_ascii_whitespace())
                    .unwrap_or(16);
                (&h[..len], data)
            };
            let text = |x: &[u8], what: &str| {
                String::from_utf8(x.to_vec()).map_err(|_| format!("archive {what} is not UTF-8"))
            };
            out.push(Member {
                name: text(name, "member name")?,
                data: text(body, "member")?,
                date: field(h, 16, 12, 10, "date")?,
                uid: u32::try_from(field(h, 28, 6, 10, "uid")?).unwrap_or(0),
                gid: u32::try_from(field(h, 34, 6, 10, "gid")?).unwrap_or(0),
                mode: u32::try_from(field(h, 40, 8, 8, "mode")?).unwrap_or(0o644),
            });
        }
        // Members take an even number of bytes.
        at = end + (size & 1);
    }
    if at != b.len() {
        return Err("truncated archive".into());
    }
    Ok(out)
}

/// The archive holding `members`, as Click writes it.
pub fn unparse(members: &[Member]) -> Result<String, String> {
    let mut s = String::from(MAGIC);
    for m in members {
        if m.name.contains('/') {
            return Err(format!("archive element name '{}' contains slash", m.name));
        }
        let long = m.name.len() > 14
            || m.name.starts_with("#1/")
            || m.name.chars().any(char::is_whitespace);
        let size = m.data.len() + if long { m.name.len() } else { 0 };
        if long {
            s.push_str(&format!("#1/{:<13}", m.name.len()));
        } else {
            s.push_str(&format!("{:<16}", m.name));
        }
        s.push_str(&format!(
            "{:<12}{:<6}{:<6}{:<8o}{:<10}`\n",
            m.date, m.uid, m.gid, m.mode, size
        ));
        if long {
            s.push_str(&m.name);
        }
        s.push_str(&m.data);
        if size % 2 == 1 {
            s.push('\n');
        }
    }
    Ok(s)
}

/// The configuration in `text`: `text` itself, or the `config` member of
/// an archive, with the archive's other members.
pub fn split_config(text: &str) -> Result<(String, Vec<Member>), String> {
    if !is_archive(text) {
        return Ok((text.to_string(), Vec::new()));
    }
    let mut members = parse(text)?;
    let i = members
        .iter()
        .position(|m| m.name == "config")
        .ok_or_else(|| "archive has no 'config' section".to_string())?;
    let config = members.remove(i).data;
    Ok((config, members))
}

/// `config` with `others` as Click's tools write it: plain text when there
/// is nothing to go with it, otherwise an archive whose first member is
/// `config`.
pub fn join_config(config: String, others: &[Member]) -> Result<String, String> {
    if others.is_empty() {
        return Ok(config);
    }
    let mut all = vec![Member::new("config", config, 0o644)];
    all.extend(others.iter().filter(|m| m.name != "config").cloned());
    unparse(&all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, data: &str) -> Member {
        Member {
            name: name.into(),
            data: data.into(),
            date: 1_000_000_000,
            uid: 0,
            gid: 0,
            mode: 0o600,
        }
    }

    #[test]
    fn written_as_click_writes_and_read_back() {
        let ms = vec![
            member("config", "a :: A;\n"),
            member("componentmap", "A\nB"),
            member("a name that is long", "x"),
        ];
        let text = unparse(&ms).expect("names have no slash");
        // An odd-sized member is padded with a newline.
        assert!(text.starts_with(
            "!<arch>\nconfig          1000000000  0     0     600     8         `\na :: A;\n"
        ));
        assert!(text
            .contains("componentmap    1000000000  0     0     600     3         `\nA\nB\n#1/19"));
        assert!(text.contains(
            "#1/19           1000000000  0     0     600     20        `\na name that is longx"
        ));
        assert_eq!(parse(&text), Ok(ms));
    }

    #[test]
    fn gnu_long_names_are_read() {
        let header = |name: &str, size: usize| {
            format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644)
        };
        let text = format!(
            "!<arch>\n{}longname/\n{}hi",
            header("//", 10),
            header("/0", 2)
        );
        let text = text.as_str();
        let ms = parse(text).expect("a GNU archive");
        assert_eq!(ms.len(), 1);
        assert_eq!(
            (ms[0].name.as_str(), ms[0].data.as_str()),
            ("longname", "hi")
        );
    }

    #[test]
    fn broken_archives_are_refused_not_read_past() {
        let good = unparse(&[member("config", "abc")]).expect("ok");
        assert_eq!(
            parse(&good[..good.len() - 2]),
            Err("truncated archive".into())
        );
        let mut bad = good.clone();
        bad.replace_range(66..68, "xx");
        assert!(parse(&bad).unwrap_err().contains("magic"));
        let huge = good.replacen("3         `", "999999999 `", 1);
        assert_eq!(parse(&huge), Err("truncated archive".into()));
        assert_eq!(parse("!<arch>\n"), Err("not an archive".into()));
        assert!(split_config("!<arch>\nx").is_err());
    }

    #[test]
    fn the_config_member_is_the_configuration() {
        let text =
            unparse(&[member("componentmap", "A\n"), member("config", "x :: X;")]).expect("ok");
        let (config, rest) = split_config(&text).expect("an archive with a config");
        assert_eq!(config, "x :: X;");
        assert_eq!(rest, vec![member("componentmap", "A\n")]);
        assert_eq!(split_config("a -> b;"), Ok(("a -> b;".into(), vec![])));
        let none = unparse(&[member("componentmap", "A\n")]).expect("ok");
        assert_eq!(
            split_config(&none),
            Err("archive has no 'config' section".into())
        );
        assert_eq!(join_config("c;".into(), &[]), Ok("c;".into()));
        let joined = join_config("c;".into(), &rest).expect("ok");
        assert_eq!(split_config(&joined), Ok(("c;".into(), rest)));
    }
}
