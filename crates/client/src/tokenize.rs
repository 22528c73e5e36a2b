//! Server-side token counting for prompt calibration when no local tokenizer is given.
//!
//! Tries, in order: vLLM/SGLang-shaped `POST /tokenize {"model", "prompt", "add_special_tokens":
//! false}` → `{"count"|"tokens"}`; llama.cpp-shaped `POST /tokenize {"content", "add_special":
//! false}` → `{"tokens": [...]}`; and finally `usage.prompt_tokens` of a 1-token completion
//! (minus the server's fixed overhead, measured once with a one-word prompt). The description
//! says which one was used.

use std::time::Duration;

use crate::error::ClientError;
use crate::http::{simple_request, Endpoint};
use servebench_workload::{TokenCounter, WorkloadError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Vllm,
    LlamaCpp,
    Usage { overhead: u32 },
}

/// Counts tokens with the server. Blocking: call it from a non-async thread (e.g. inside
/// `tokio::task::spawn_blocking`), it drives its requests on `handle`.
pub struct ServerTokenCounter {
    ep: Endpoint,
    model: String,
    handle: tokio::runtime::Handle,
    shape: Option<Shape>,
    calls: u64,
}

impl ServerTokenCounter {
    /// A counter for `ep` serving `model`.
    pub fn new(ep: Endpoint, model: &str, handle: tokio::runtime::Handle) -> Self {
        Self {
            ep,
            model: model.to_string(),
            handle,
            shape: None,
            calls: 0,
        }
    }

    /// Number of requests made.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    fn post(
        &mut self,
        path: &str,
        body: serde_json::Value,
    ) -> Result<(u16, serde_json::Value), ClientError> {
        self.calls += 1;
        let ep = self.ep.clone();
        let path = path.to_string();
        let r = self.handle.block_on(async move {
            simple_request(
                &ep,
                http::Method::POST,
                &path,
                Some(serde_json::to_vec(&body).expect("a JSON value serialises")),
                Duration::from_secs(60),
            )
            .await
        })?;
        let v = serde_json::from_slice(&r.body).unwrap_or(serde_json::Value::Null);
        Ok((r.status, v))
    }

    fn count_with(&mut self, shape: Shape, text: &str) -> Result<Option<u32>, ClientError> {
        match shape {
            Shape::Vllm => {
                let (s, v) = self.post(
                    "/tokenize",
                    serde_json::json!({"model": self.model, "prompt": text, "add_special_tokens": false}),
                )?;
                if s != 200 {
                    return Ok(None);
                }
                Ok(v.get("count")
                    .and_then(|c| c.as_u64())
                    .or_else(|| {
                        v.get("tokens")
                            .and_then(|t| t.as_array())
                            .map(|a| a.len() as u64)
                    })
                    .map(|c| c as u32))
            }
            Shape::LlamaCpp => {
                let (s, v) = self.post(
                    "/tokenize",
                    serde_json::json!({"content": text, "add_special": false}),
                )?;
                if s != 200 {
                    return Ok(None);
                }
                Ok(v.get("tokens")
                    .and_then(|t| t.as_array())
                    .map(|a| a.len() as u32))
            }
            Shape::Usage { overhead } => {
                let (s, v) = self.post(
                    "/v1/completions",
                    serde_json::json!({"model": self.model, "prompt": text, "max_tokens": 1, "temperature": 0.0}),
                )?;
                if s != 200 {
                    return Err(ClientError::Http {
                        url: format!("{}/v1/completions", self.ep.base_url),
                        status: s,
                        body: v.to_string(),
                    });
                }
                Ok(v.pointer("/usage/prompt_tokens")
                    .and_then(|c| c.as_u64())
                    .map(|c| (c as u32).saturating_sub(overhead)))
            }
        }
    }

    fn detect(&mut self, text: &str) -> Result<u32, ClientError> {
        // The vLLM shape first: a llama.cpp server answers it too but ignores `prompt`
        // (it reads `content`), so an empty token list with a non-empty text means "wrong shape".
        for shape in [Shape::Vllm, Shape::LlamaCpp] {
            if let Ok(Some(n)) = self.count_with(shape, text) {
                if n > 0 || text.trim().is_empty() {
                    self.shape = Some(shape);
                    return Ok(n);
                }
            }
        }
        let (_, v) = self.post(
            "/v1/completions",
            serde_json::json!({"model": self.model, "prompt": "a", "max_tokens": 1, "temperature": 0.0}),
        )?;
        let one = v
            .pointer("/usage/prompt_tokens")
            .and_then(|c| c.as_u64())
            .ok_or_else(|| ClientError::NoTokenCounting {
                base_url: self.ep.base_url.clone(),
            })?;
        let shape = Shape::Usage {
            overhead: (one as u32).saturating_sub(1),
        };
        self.shape = Some(shape);
        self.count_with(shape, text)?
            .ok_or_else(|| ClientError::UsageMissing {
                base_url: self.ep.base_url.clone(),
            })
    }
}

impl TokenCounter for ServerTokenCounter {
    /// Errors: the [`ClientError`] (request failed, HTTP status, no way to count) as
    /// [`WorkloadError::Counter`], its text unchanged.
    fn count(&mut self, text: &str) -> Result<u32, WorkloadError> {
        let n = match self.shape {
            None => self.detect(text),
            Some(s) => self.count_with(s, text).and_then(|n| {
                n.ok_or_else(|| ClientError::CountStopped {
                    base_url: self.ep.base_url.clone(),
                })
            }),
        };
        Ok(n?)
    }

    fn describe(&self) -> String {
        match self.shape {
            Some(Shape::Vllm) => format!("{}/tokenize, vLLM shape", self.ep.base_url),
            Some(Shape::LlamaCpp) => format!("{}/tokenize, llama.cpp shape", self.ep.base_url),
            Some(Shape::Usage { overhead }) => format!(
                "usage.prompt_tokens of 1-token completions at {} minus {overhead} overhead tokens",
                self.ep.base_url
            ),
            None => format!("{} (not contacted)", self.ep.base_url),
        }
    }
}
