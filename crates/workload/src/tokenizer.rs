//! The model's own tokenizer (`tokenizer.json`, HF `tokenizers`) and its chat template
//! (`tokenizer_config.json`, rendered with minijinja).

use std::path::{Path, PathBuf};

use crate::error::{Result, WorkloadError};
use crate::fast_count::FastCounter;
use crate::fast_decode::ByteLevelDecoder;

/// Counts tokens of a text. Implemented by [`LocalTokenizer`] (exact, offline) and by the client
/// crate's server-side counter (`/tokenize`), so prompt building never depends on HTTP itself.
pub trait TokenCounter: Send {
    /// Number of tokens of `text`, without special tokens (InferenceX `add_special_tokens=False`).
    ///
    /// Errors: the implementation's own ([`WorkloadError::Encode`] for [`LocalTokenizer`];
    /// [`WorkloadError::Counter`] wraps an error of another crate, e.g. the client's).
    fn count(&mut self, text: &str) -> Result<u32>;
    /// One line saying where counts come from (printed with the workload description).
    fn describe(&self) -> String;
}

/// A Hugging Face fast tokenizer loaded from a local `tokenizer.json`.
pub struct LocalTokenizer {
    tok: tokenizers::Tokenizer,
    path: PathBuf,
    /// Exact count without the full encode, for the byte-level BPE shape it supports.
    fast: Option<FastCounter>,
}

impl std::fmt::Debug for LocalTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LocalTokenizer({})", self.path.display())
    }
}

impl LocalTokenizer {
    /// The `tokenizer.json` that `path` names (the file, or the one inside a directory), checked
    /// to exist without loading it (a command's up-front check).
    ///
    /// # Errors
    /// [`WorkloadError::TokenizerMissing`] naming the file looked for.
    pub fn file_of(path: &Path) -> Result<PathBuf> {
        let file = if path.is_dir() {
            path.join("tokenizer.json")
        } else {
            path.to_path_buf()
        };
        if !file.exists() {
            return Err(WorkloadError::TokenizerMissing { file });
        }
        Ok(file)
    }

    /// Loads `path` (a `tokenizer.json`, or a directory containing one).
    ///
    /// Errors: missing file or a file the `tokenizers` crate cannot parse (the message names it).
    pub fn from_path(path: &Path) -> Result<Self> {
        let file = Self::file_of(path)?;
        let tok = tokenizers::Tokenizer::from_file(&file).map_err(|error| {
            WorkloadError::TokenizerLoad {
                file: file.clone(),
                error,
            }
        })?;
        let fast = FastCounter::for_tokenizer(&tok).map(|f| f.with_merges_from(&tok, &file));
        Ok(Self {
            tok,
            path: file,
            fast,
        })
    }

    /// The file this tokenizer was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Base vocabulary size without added tokens (HF `tokenizer.vocab_size`), the range of the
    /// random token ids of the InferenceX random dataset.
    pub fn vocab_size(&self) -> u32 {
        self.tok.get_vocab_size(false) as u32
    }

    /// Token ids of `text` without special tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .tok
            // ids only: `encode_fast` skips the char→byte offset conversion (same ids)
            .encode_fast(text, false)
            .map_err(|error| WorkloadError::Encode {
                file: self.path.clone(),
                error,
            })?;
        Ok(enc.get_ids().to_vec())
    }

    /// Number of tokens of `text` without special tokens, equal to `encode(text)?.len()`,
    /// counted by [`FastCounter`] (no backtracking regex, no `Encoding`) — or `None` when this
    /// tokenizer's shape is not the one it supports or `text` holds an added token.
    pub fn fast_count(&self, text: &str) -> Result<Option<usize>> {
        match &self.fast {
            None => Ok(None),
            Some(f) => f
                .count(&self.tok, text)
                .map_err(|error| WorkloadError::Encode {
                    file: self.path.clone(),
                    error,
                }),
        }
    }

    /// Token ids of `text` (as [`Self::encode`]) appended to `ids` by [`FastCounter`], or
    /// `None` (nothing appended) when it cannot answer (see [`Self::fast_count`]).
    pub fn fast_encode_into(&self, text: &str, ids: &mut Vec<u32>) -> Result<Option<()>> {
        match &self.fast {
            None => Ok(None),
            Some(f) => f
                .encode_into(&self.tok, text, ids)
                .map_err(|error| WorkloadError::Encode {
                    file: self.path.clone(),
                    error,
                }),
        }
    }

    /// The fast counter's pieces so far, `(answered from its memo, tokenized by the model)`,
    /// or `None` without a fast counter (see [`FastCounter::memo_stats`]).
    pub fn fast_memo_stats(&self) -> Option<(u64, u64)> {
        self.fast.as_ref().map(FastCounter::memo_stats)
    }

    /// Whether [`Self::fast_count`] can answer for this tokenizer's shape.
    pub fn has_fast_count(&self) -> bool {
        self.fast.is_some()
    }

    /// Whether the fast counter tokenizes new pieces with its own BPE merge loop (the model's
    /// merge table, no per-call allocations; see [`FastCounter::with_merges_from`]).
    pub fn has_fast_bpe(&self) -> bool {
        self.fast.as_ref().is_some_and(FastCounter::has_fast_bpe)
    }

    /// A [`ByteLevelDecoder`] for this tokenizer (exact `decode` without the library's
    /// per-id strings), or `None` when its decoder is not `ByteLevel`.
    pub fn byte_level_decoder(&self) -> Option<ByteLevelDecoder> {
        ByteLevelDecoder::for_tokenizer(&self.tok)
    }

    /// Text of `ids` by `dec` (made by [`Self::byte_level_decoder`] of this tokenizer), equal
    /// to [`Self::decode`].
    pub fn decode_with(&self, dec: &mut ByteLevelDecoder, ids: &[u32]) -> String {
        dec.decode(&self.tok, ids)
    }

    /// Text of `ids` (special tokens kept, HF `decode` default).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tok
            .decode(ids, false)
            .map_err(|error| WorkloadError::Decode {
                file: self.path.clone(),
                error,
            })
    }
}

/// How many of a [`CheckedDecoder`]'s first byte-table texts are also decoded by the library
/// and compared.
pub const DECODE_CROSS_CHECKS: usize = 16;

/// Counts of a [`CheckedDecoder`]: every decode, those the library made (cross-checks and
/// fallbacks), those the byte table answered (cross-checked ones included), and disagreements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// Every `decode` call.
    pub decodes: usize,
    /// Texts made by the library.
    pub library: usize,
    /// Texts made by the byte table.
    pub table: usize,
    /// Cross-checks where the table and the library differed (each turns the table off).
    pub mismatches: usize,
}

/// The one rule for decoding with the byte table ([`ByteLevelDecoder`]) of a
/// [`LocalTokenizer`]: the first [`DECODE_CROSS_CHECKS`] table texts are also decoded by the
/// library and the library's text is returned; a difference turns the table off for good.
/// Without a `ByteLevel` decoder (or with `enabled` false) every text is the library's. Used by
/// the random dataset build and by AgentX's trace reconstruction.
pub struct CheckedDecoder {
    dec: Option<ByteLevelDecoder>,
    /// Decode counts so far.
    pub stats: DecodeStats,
}

impl CheckedDecoder {
    /// For `tok`; the table only when `enabled` and its decoder is `ByteLevel`.
    pub fn new(tok: &LocalTokenizer, enabled: bool) -> Self {
        CheckedDecoder {
            dec: tok.byte_level_decoder().filter(|_| enabled),
            stats: DecodeStats::default(),
        }
    }

    /// Text of `ids`, equal to [`LocalTokenizer::decode`].
    ///
    /// Errors: the library's decode error (fallback and cross-checks only).
    pub fn decode(&mut self, tok: &LocalTokenizer, ids: &[u32]) -> Result<String> {
        self.stats.decodes += 1;
        let Some(dec) = self.dec.as_mut() else {
            self.stats.library += 1;
            return tok.decode(ids);
        };
        let text = tok.decode_with(dec, ids);
        self.stats.table += 1;
        if self.stats.table <= DECODE_CROSS_CHECKS {
            self.stats.library += 1;
            let full = tok.decode(ids)?;
            if full != text {
                self.stats.mismatches += 1;
                self.dec = None;
            }
            return Ok(full);
        }
        Ok(text)
    }
}

impl TokenCounter for LocalTokenizer {
    fn count(&mut self, text: &str) -> Result<u32> {
        Ok(self.encode(text)?.len() as u32)
    }
    fn describe(&self) -> String {
        format!("local tokenizer {}", self.path.display())
    }
}

/// A chat template from `tokenizer_config.json` (`chat_template`, a Jinja string, or a list of
/// `{name, template}` of which `default` is used), with its `bos_token`/`eos_token`.
///
/// Rendered with minijinja; `raise_exception`, `strftime_now` and the Python string/dict methods
/// templates commonly call (`strip`, `startswith`, `endswith`, `split`, `items`, …) are provided.
pub struct ChatTemplate {
    env: minijinja::Environment<'static>,
    bos: String,
    eos: String,
    path: PathBuf,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChatTemplate({})", self.path.display())
    }
}

fn token_string(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Object(o)) => o
            .get("content")
            .and_then(|c| c.as_str())
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

impl ChatTemplate {
    /// Loads the template from `tokenizer_config.json` (path to the file or its directory).
    ///
    /// Errors: unreadable/invalid JSON, no `chat_template` key, or a template minijinja cannot
    /// compile — each naming the file.
    pub fn from_tokenizer_config(path: &Path) -> Result<Self> {
        let file = if path.is_dir() {
            path.join("tokenizer_config.json")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&file).map_err(|source| WorkloadError::Read {
            file: file.clone(),
            source,
        })?;
        let cfg: serde_json::Value =
            serde_json::from_str(&text).map_err(|source| WorkloadError::Json {
                file: file.clone(),
                source,
            })?;
        let tmpl = match cfg.get("chat_template") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(list)) => list
                .iter()
                .find(|e| e.get("name").and_then(|n| n.as_str()) == Some("default"))
                .or_else(|| list.first())
                .and_then(|e| e.get("template"))
                .and_then(|t| t.as_str())
                .map(str::to_string)
                .ok_or_else(|| WorkloadError::EmptyChatTemplateList { file: file.clone() })?,
            _ => return Err(WorkloadError::NoChatTemplate { file }),
        };
        Self::from_source(
            &tmpl,
            &token_string(cfg.get("bos_token")),
            &token_string(cfg.get("eos_token")),
            &file,
        )
    }

    /// Builds a template from its Jinja source (used by tests and by [`Self::from_tokenizer_config`]).
    pub fn from_source(source: &str, bos: &str, eos: &str, origin: &Path) -> Result<Self> {
        let mut env = minijinja::Environment::new();
        env.set_keep_trailing_newline(true);
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.add_function(
            "raise_exception",
            |msg: String| -> Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    msg,
                ))
            },
        );
        env.add_function("strftime_now", |_fmt: String| -> String {
            // Deterministic prompts: a fixed date instead of the wall clock.
            "01 Jan 2026".to_string()
        });
        env.set_unknown_method_callback(py_methods);
        env.add_template_owned("chat".to_string(), source.to_string())
            .map_err(|error| WorkloadError::TemplateCompile {
                origin: origin.to_path_buf(),
                error,
            })?;
        Ok(Self {
            env,
            bos: bos.to_string(),
            eos: eos.to_string(),
            path: origin.to_path_buf(),
        })
    }

    /// `apply_chat_template([{"role":"user","content":text}], add_generation_prompt=True)`.
    pub fn render_user(&self, text: &str) -> Result<String> {
        let t = self
            .env
            .get_template("chat")
            .expect("template added in constructor");
        t.render(minijinja::context! {
            messages => vec![minijinja::context!{ role => "user", content => text }],
            add_generation_prompt => true,
            bos_token => &self.bos,
            eos_token => &self.eos,
        })
        .map_err(|error| WorkloadError::TemplateRender {
            origin: self.path.clone(),
            error,
        })
    }
}

/// The Python `str`/`dict` methods HF chat templates call most often.
fn py_methods(
    _state: &minijinja::State,
    value: &minijinja::Value,
    method: &str,
    args: &[minijinja::Value],
) -> Result<minijinja::Value, minijinja::Error> {
    use minijinja::value::{Value, ValueKind};
    let arg_str = |i: usize| args.get(i).and_then(|a| a.as_str()).map(str::to_string);
    if let Some(s) = value.as_str() {
        let out = match method {
            "strip" => match arg_str(0) {
                Some(c) => Value::from(s.trim_matches(|x| c.contains(x))),
                None => Value::from(s.trim()),
            },
            "lstrip" => match arg_str(0) {
                Some(c) => Value::from(s.trim_start_matches(|x| c.contains(x))),
                None => Value::from(s.trim_start()),
            },
            "rstrip" => match arg_str(0) {
                Some(c) => Value::from(s.trim_end_matches(|x| c.contains(x))),
                None => Value::from(s.trim_end()),
            },
            "startswith" => Value::from(arg_str(0).is_some_and(|p| s.starts_with(&p))),
            "endswith" => Value::from(arg_str(0).is_some_and(|p| s.ends_with(&p))),
            "lower" => Value::from(s.to_lowercase()),
            "upper" => Value::from(s.to_uppercase()),
            "split" => match arg_str(0) {
                Some(sep) => {
                    Value::from(s.split(sep.as_str()).map(Value::from).collect::<Vec<_>>())
                }
                None => Value::from(s.split_whitespace().map(Value::from).collect::<Vec<_>>()),
            },
            "replace" => match (arg_str(0), arg_str(1)) {
                (Some(a), Some(b)) => Value::from(s.replace(&a, &b)),
                _ => {
                    return Err(minijinja::Error::from(
                        minijinja::ErrorKind::MissingArgument,
                    ))
                }
            },
            _ => return Err(minijinja::Error::from(minijinja::ErrorKind::UnknownMethod)),
        };
        return Ok(out);
    }
    if value.kind() == ValueKind::Map {
        match method {
            "items" => {
                let mut items = Vec::new();
                if let Ok(iter) = value.try_iter() {
                    for k in iter {
                        let v = value.get_item(&k).unwrap_or(Value::UNDEFINED);
                        items.push(Value::from(vec![k, v]));
                    }
                }
                return Ok(Value::from(items));
            }
            "get" => {
                let key = args.first().cloned().unwrap_or(Value::UNDEFINED);
                let v = value.get_item(&key).unwrap_or(Value::UNDEFINED);
                return Ok(if v.is_undefined() {
                    args.get(1).cloned().unwrap_or(Value::from(()))
                } else {
                    v
                });
            }
            "keys" => {
                return Ok(Value::from(
                    value
                        .try_iter()
                        .map(|i| i.collect::<Vec<_>>())
                        .unwrap_or_default(),
                ));
            }
            _ => {}
        }
    }
    Err(minijinja::Error::from(minijinja::ErrorKind::UnknownMethod))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn chatml_renders_like_transformers() {
        let t = ChatTemplate::from_source(CHATML, "", "<|im_end|>", Path::new("test")).unwrap();
        assert_eq!(
            t.render_user("hi").unwrap(),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn python_methods_and_raise() {
        let src = "{{ messages[0].content.strip() }}|{{ messages[0].content.startswith(' a') }}{% if false %}{{ raise_exception('no') }}{% endif %}";
        let t = ChatTemplate::from_source(src, "", "", Path::new("test")).unwrap();
        assert_eq!(t.render_user(" ab ").unwrap(), "ab|True");
        let bad = ChatTemplate::from_source(
            "{{ raise_exception('only system') }}",
            "",
            "",
            Path::new("x.json"),
        )
        .unwrap();
        let e = bad.render_user("a").unwrap_err().to_string();
        assert!(e.contains("x.json") && e.contains("only system"), "{e}");
    }

    #[test]
    fn missing_tokenizer_file_is_named() {
        let e = LocalTokenizer::from_path(Path::new("/nonexistent/tok.json")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/tok.json"));
    }
}
