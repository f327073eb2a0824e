//! The record text reader: a record as [`Cache::publish`](super::Cache::publish)
//! writes it, read without serde_json on the hit path. Anything not in
//! exactly that form is left to serde_json, so both readings agree.

use std::sync::Arc;

use super::record::Record;

/// A record as [`Cache::publish`](super::Cache::publish) writes it (serde_json's compact form,
/// its fields in order, `object_stat` and `depset` left out when empty),
/// read without serde_json: a hit reads one record per kernel, and this
/// costs a fraction of the general parse. `None` for anything else (a
/// string with an escape, a control character or bytes that are not
/// UTF-8, a number serde_json would refuse or that does not fit, spaces,
/// other fields, trailing bytes): serde_json reads that text, so what a
/// record means never depends on which of the two read it.
pub(super) fn plain_record(text: &[u8]) -> Option<Record> {
    // A string at the start of `b` with no escape or control character,
    // and what follows.
    fn string(b: &[u8]) -> Option<(String, &[u8])> {
        let b = b.strip_prefix(b"\"")?;
        // SAFETY: searches exactly the `b.len()` bytes of `b`.
        let p = unsafe { libc::memchr(b.as_ptr().cast(), b'"'.into(), b.len()) };
        if p.is_null() {
            return None;
        }
        let end = p as usize - b.as_ptr() as usize;
        let s = &b[..end];
        // Every byte looked at (no early exit), which the compiler turns
        // into a few wide comparisons.
        let odd = s
            .iter()
            .fold(false, |odd, &c| odd | (c == b'\\') | (c < 0x20));
        if odd {
            return None;
        }
        Some((std::str::from_utf8(s).ok()?.to_owned(), &b[end + 1..]))
    }
    // An unsigned number at the start of `b` as serde_json writes one (no
    // sign, no leading zero, no fraction or exponent), and what follows.
    fn number(b: &[u8]) -> Option<(u64, &[u8])> {
        let end = b
            .iter()
            .position(|c| !c.is_ascii_digit())
            .unwrap_or(b.len());
        let (digits, rest) = b.split_at(end);
        if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
            return None;
        }
        if matches!(rest.first(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let mut n: u64 = 0;
        for &d in digits {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        Some((n, rest))
    }
    let b = text.strip_prefix(b"{\"format\":")?;
    let (format, b) = number(b)?;
    let format = u32::try_from(format).ok()?;
    let (blob, b) = string(b.strip_prefix(b",\"blob\":")?)?;
    let (inputs, b) = string(b.strip_prefix(b",\"inputs\":")?)?;
    let (prekey, b) = string(b.strip_prefix(b",\"prekey\":")?)?;
    let (key, b) = string(b.strip_prefix(b",\"key\":")?)?;
    let (size, b) = number(b.strip_prefix(b",\"size\":")?)?;
    let (checksum, mut b) = string(b.strip_prefix(b",\"checksum\":")?)?;
    // A field written only when not empty: its value, if it is there.
    fn optional(b: &mut &[u8], name: &[u8]) -> Option<String> {
        let (s, rest) = string(b.strip_prefix(name)?)?;
        *b = rest;
        Some(s)
    }
    let object_stat = optional(&mut b, b",\"object_stat\":").unwrap_or_default();
    let depset = optional(&mut b, b",\"depset\":").unwrap_or_default();
    if b.starts_with(b",\"object_stat\":") || b.starts_with(b",\"depset\":") {
        return None;
    }
    let mut b = b.strip_prefix(b",\"command\":[")?;
    let mut command = Vec::new();
    if let Some(rest) = b.strip_prefix(b"]") {
        b = rest;
    } else {
        loop {
            let (arg, rest) = string(b)?;
            command.push(arg);
            match rest.split_first()? {
                (b',', rest) => b = rest,
                (b']', rest) => {
                    b = rest;
                    break;
                }
                _ => return None,
            }
        }
    }
    let (created, b) = number(b.strip_prefix(b",\"created\":")?)?;
    if b != b"}" {
        return None;
    }
    Some(Record {
        format,
        blob,
        inputs,
        prekey,
        key,
        size,
        checksum,
        object_stat,
        depset,
        deps: Arc::default(),
        headers: None,
        command,
        created,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CACHE_FORMAT;

    #[test]
    fn records_read_by_hand_read_as_serde_json_reads_them() {
        let record = |object_stat: &str, depset: &str, command: &[&str]| Record {
            format: CACHE_FORMAT,
            blob: "blob_ü".into(),
            inputs: "1".repeat(32),
            prekey: "2".repeat(32),
            key: "3".repeat(32),
            size: u64::MAX,
            checksum: "ab".repeat(32),
            object_stat: object_stat.into(),
            depset: depset.into(),
            deps: Arc::default(),
            headers: None,
            command: command.iter().map(|c| c.to_string()).collect(),
            created: 0,
        };
        let serde = |t: &[u8]| serde_json::from_slice::<Record>(t).ok();
        let records = [
            record(
                "1:2.000000003:4.000000005:6",
                &"d".repeat(32),
                &["cc -c x.c"],
            ),
            record("", "", &[]),
            record("", &"d".repeat(32), &["a", "", "b"]),
            record("1:2.000000003:4.000000005:6", "", &["cc"]),
            // Escaped characters: serde_json's to read.
            record("", "", &["cc -DX=\"y\" -c\tx.c"]),
        ];
        for r in records {
            let text = serde_json::to_vec(&r).unwrap();
            let escaped = r.command.iter().any(|c| c.contains(['"', '\t']));
            assert_eq!(plain_record(&text).is_none(), escaped);
            if !escaped {
                assert_eq!(plain_record(&text), Some(r.clone()));
            }
            assert_eq!(serde(&text), Some(r));
        }
        // Text serde_json reads but not in the written form: left to it,
        // so both readings agree.
        let written = serde_json::to_vec(&record("", "", &["cc"])).unwrap();
        let written = String::from_utf8(written).unwrap();
        let variants = [
            written.replace(",\"size\"", ", \"size\""),
            written.replace("{\"format\":2,", "{\"format\":02,"),
            written.replace("\"created\":0", "\"created\":0.0"),
            written.replace("\"created\":0", "\"created\":18446744073709551616"),
            written.replace(
                "\"command\"",
                "\"depset\":\"d\",\"object_stat\":\"s\",\"command\"",
            ),
            written.replace("}", "} "),
            written.replace("}", "}x"),
            written.replace("\"blob_ü\"", "\"blob\\u00fc\""),
            written.replace("\"blob_ü\"", "\"blob\x01\""),
            written.replace("\"format\":2", "\"format\":4294967296"),
            written[..written.len() - 1].to_string(),
        ];
        for v in variants {
            assert_eq!(plain_record(v.as_bytes()), None, "{v}");
        }
        // Not UTF-8, or torn: neither reads it.
        let mut bad = written.clone().into_bytes();
        let at = written.find("ü").unwrap();
        bad[at] = 0xff;
        for t in [&bad[..], &written.as_bytes()[..written.len() / 2]] {
            assert_eq!(plain_record(t), None);
            assert_eq!(serde(t), None);
        }
    }
}
