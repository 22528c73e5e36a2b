//! Secrets out of what servebench records: command lines, URLs and header values.
//!
//! A store may be shared (a team's SQLite file, a PostgreSQL database), and run files, logs and
//! reports are posted in PRs. Whatever records a command line or a URL passes it through here
//! first, so an API key, a database password or an `Authorization` header never lands on disk.
//!
//! What is replaced by [`REDACTED`]:
//! - the value of a secret-bearing flag ([`SECRET_FLAGS`]), as `--api-key X` or `--api-key=X`;
//! - the password of a URL's user-info (`postgres://user:pw@host/db` → `postgres://user:***@host/db`),
//!   anywhere in an argument, including inside `--db=…`;
//! - the credentials of an `Authorization:` / `Proxy-Authorization:` header value (the scheme,
//!   e.g. `Bearer`, is kept);
//! - a bare OpenAI/Anthropic/Hugging Face style key (`sk-…`, `hf_…`, 20+ characters) wherever it
//!   stands, because a key given positionally or through an unknown flag must not leak either.

/// The text that stands in for a removed secret.
pub const REDACTED: &str = "***";

/// Flags whose value is a secret (with or without `=`), compared case-insensitively.
pub const SECRET_FLAGS: &[&str] = &[
    "--api-key",
    "--token",
    "--hf-token",
    "--password",
    "--secret",
    "--auth-token",
];

/// The whole command line as one string (arguments joined by one space), secrets replaced.
///
/// ```
/// let line = servebench_contracts::redact::command_line(
///     ["servebench", "sweep", "--api-key", "sk-abc", "--db=postgres://u:pw@h/db"].map(String::from),
/// );
/// assert_eq!(line, "servebench sweep --api-key *** --db=postgres://u:***@h/db");
/// ```
pub fn command_line<I: IntoIterator<Item = String>>(args: I) -> String {
    argv(args).join(" ")
}

/// Each argument with its secrets replaced (same length and order as the input).
pub fn argv<I: IntoIterator<Item = String>>(args: I) -> Vec<String> {
    let mut out = Vec::new();
    let mut value_is_secret = false;
    for a in args {
        if value_is_secret {
            out.push(REDACTED.to_string());
            value_is_secret = false;
            continue;
        }
        let lower = a.to_ascii_lowercase();
        if let Some(flag) = SECRET_FLAGS.iter().find(|f| {
            lower == **f || (lower.starts_with(**f) && lower.as_bytes().get(f.len()) == Some(&b'='))
        }) {
            if lower.len() == flag.len() {
                value_is_secret = true;
                out.push(a);
            } else {
                out.push(format!("{}={REDACTED}", &a[..flag.len()]));
            }
            continue;
        }
        out.push(text(&a));
    }
    out
}

/// A URL (or any text holding URLs) with user-info passwords replaced.
///
/// `https://user:pw@host:8000/v1` → `https://user:***@host:8000/v1`; a URL without a password is
/// returned unchanged.
pub fn url(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The authority ends at the first '/', '?', '#' or whitespace.
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.find(':') {
                    Some(colon) => {
                        out.push_str(&userinfo[..colon + 1]);
                        out.push_str(REDACTED);
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Free text (one argument, a log line, a header) with every kind of secret above replaced.
pub fn text(s: &str) -> String {
    let s = url(s);
    let s = authorization(&s);
    bare_keys(&s)
}

/// `Authorization: Bearer X` → `Authorization: Bearer ***` (also `Proxy-Authorization`, any
/// case, and a value without a scheme).
fn authorization(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let Some(i) = lower.find("authorization:") else {
        return s.to_string();
    };
    let value_start = i + "authorization:".len();
    let value = &s[value_start..];
    let trimmed = value.trim_start();
    let lead = &value[..value.len() - trimmed.len()];
    let mut words = trimmed.splitn(2, ' ');
    let first = words.next().unwrap_or("");
    let kept = match words.next() {
        Some(_) => format!("{first} {REDACTED}"),
        None => REDACTED.to_string(),
    };
    format!("{}{lead}{kept}", &s[..value_start])
}

/// Bare provider keys (`sk-…`, `sk-ant-…`, `hf_…`) of 20 or more characters.
fn bare_keys(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let is_key = (word.starts_with("sk-") || word.starts_with("hf_")) && word.len() >= 20;
        out.push_str(if is_key { REDACTED } else { word });
        word.clear();
    };
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(a: &[&str]) -> String {
        command_line(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn secret_flags_lose_their_values_in_both_spellings() {
        assert_eq!(
            line(&["servebench", "sweep", "--api-key", "abc", "--conc", "4"]),
            "servebench sweep --api-key *** --conc 4"
        );
        assert_eq!(line(&["x", "--API-KEY=abc"]), "x --API-KEY=***");
        assert_eq!(
            line(&["x", "--hf-token", "t", "--token=u"]),
            "x --hf-token *** --token=***"
        );
        // A flag that merely starts like a secret one is not one.
        assert_eq!(line(&["x", "--api-keyring", "v"]), "x --api-keyring v");
    }

    #[test]
    fn url_passwords_are_replaced_and_the_rest_kept() {
        assert_eq!(
            url("postgres://bench:s3cr3t@db.example:5432/ix?sslmode=require"),
            "postgres://bench:***@db.example:5432/ix?sslmode=require"
        );
        assert_eq!(url("http://user@host/v1"), "http://user@host/v1");
        assert_eq!(url("http://127.0.0.1:8000"), "http://127.0.0.1:8000");
        assert_eq!(
            line(&[
                "x",
                "--db=postgres://a:b@h/d",
                "--endpoint",
                "https://u:p@e:1/v1"
            ]),
            "x --db=postgres://a:***@h/d --endpoint https://u:***@e:1/v1"
        );
        // A password holding '@' ends at the last '@' of the authority.
        assert_eq!(url("postgres://a:p@ss@h/d"), "postgres://a:***@h/d");
    }

    #[test]
    fn authorization_headers_keep_the_scheme_only() {
        assert_eq!(
            text("Authorization: Bearer sk-live-123"),
            "Authorization: Bearer ***"
        );
        assert_eq!(text("authorization:token"), "authorization:***");
        assert_eq!(
            line(&["curl", "-H", "Proxy-Authorization: Basic dXNlcjpwdw=="]),
            "curl -H Proxy-Authorization: Basic ***"
        );
    }

    #[test]
    fn bare_provider_keys_are_replaced_wherever_they_stand() {
        let k = "sk-proj-ABCDEFGHIJKLMNOPQRSTUV";
        assert_eq!(line(&["x", "--key-file", k]), "x --key-file ***");
        assert_eq!(text(&format!("OPENAI_API_KEY={k}")), "OPENAI_API_KEY=***");
        assert_eq!(text("hf_abcdefghijklmnopqrstu"), "***");
        // Short look-alikes (a flag value like sk-1) stay.
        assert_eq!(text("sk-1"), "sk-1");
    }
}
