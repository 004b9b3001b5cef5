//! The facts a GGUF file's header states, read without loading the weights.
//!
//! The header is parsed by `gguf-rs-lib`: it reads from any `Read + Seek`, stops at the start
//! of the tensor data, bounds what a hostile header can make it allocate (counts, string and
//! array lengths, metadata bytes) and knows the current tensor types. Only the few facts the
//! runtime decides with are kept.
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use gguf_rs_lib::format::metadata::{Metadata, MetadataValue};
use gguf_rs_lib::reader::file_reader::{GGUFFileReader, GGUFReaderConfig};
use gguf_rs_lib::GGUFError;
use serde::{Deserialize, Serialize};

/// The first four bytes of every GGUF file.
pub const MAGIC: &[u8; 4] = b"GGUF";

/// Metadata beyond this is refused. The largest real vocabularies (a quarter of a million
/// tokens with scores and merges) take a few tens of MiB; the bound keeps a header that
/// claims more from costing more than that in memory.
const MAX_METADATA_BYTES: usize = 96 * 1024 * 1024;
const MAX_DECODED_METADATA_BYTES: usize = 192 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GgufFacts {
    /// `general.architecture`, e.g. `llama`.
    pub architecture: String,
    /// `general.name`.
    pub name: Option<String>,
    /// `general.parameter_count`, else the elements of every tensor added up.
    pub parameters: Option<u64>,
    /// The quantisation `general.file_type` names, e.g. `Q4_1`.
    pub quantization: Option<String>,
    /// `{arch}.context_length`: the context the model was trained with.
    pub training_context: Option<u32>,
    pub block_count: Option<u32>,
    pub embedding_length: Option<u32>,
    pub head_count: Option<u32>,
    pub head_count_kv: Option<u32>,
    /// `tokenizer.chat_template` is present.
    pub chat_template: bool,
    /// The chat template refers to `tools`: the model was trained to call tools.
    pub template_mentions_tools: bool,
    /// The chat template speaks ChatML (`<|im_start|>`).
    pub chatml: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("{} is not a GGUF file", path.display())]
    NotGguf { path: PathBuf },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the GGUF header is malformed: {0}")]
    Malformed(String),
}

/// Whether `first_bytes` begin as a GGUF file does.
pub fn has_magic(first_bytes: &[u8]) -> bool {
    first_bytes.starts_with(MAGIC)
}

/// Reads the header of the GGUF file at `path`: metadata and tensor descriptors, no weights.
pub fn read_facts(path: &Path) -> Result<GgufFacts, GgufError> {
    let mut file = File::open(path)?;
    let mut first = [0u8; 4];
    let mut got = 0;
    while got < first.len() {
        match file.read(&mut first[got..])? {
            0 => break,
            n => got += n,
        }
    }
    if !has_magic(&first[..got]) {
        return Err(GgufError::NotGguf {
            path: path.to_path_buf(),
        });
    }
    let file = File::open(path)?;
    let config = GGUFReaderConfig {
        max_metadata_size: MAX_METADATA_BYTES,
        max_decoded_metadata_size: MAX_DECODED_METADATA_BYTES,
        ..GGUFReaderConfig::default()
    };
    let reader =
        GGUFFileReader::with_config(BufReader::new(file), config).map_err(|e| match e {
            GGUFError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                GgufError::Malformed("the file ends inside its header".into())
            }
            GGUFError::Io(io) => GgufError::Io(io),
            GGUFError::UnexpectedEof => {
                GgufError::Malformed("the file ends inside its header".into())
            }
            GGUFError::InvalidMagic { .. } => GgufError::NotGguf {
                path: path.to_path_buf(),
            },
            other => GgufError::Malformed(other.to_string()),
        })?;
    let meta = reader.metadata();
    let architecture = meta
        .get_string("general.architecture")
        .ok_or_else(|| GgufError::Malformed("general.architecture is missing".into()))?
        .to_owned();
    let arch_u32 = |key: &str| u32_of(meta, &format!("{architecture}.{key}"));
    let parameters = u64_of(meta, "general.parameter_count").or_else(|| {
        reader
            .tensor_infos()
            .iter()
            .try_fold(0u64, |sum, t| sum.checked_add(t.element_count()))
            .filter(|n| *n > 0)
    });
    let template = meta.get_string("tokenizer.chat_template");
    Ok(GgufFacts {
        name: meta.get_string("general.name").map(str::to_owned),
        parameters,
        quantization: u64_of(meta, "general.file_type").and_then(file_type_name),
        training_context: arch_u32("context_length"),
        block_count: arch_u32("block_count"),
        embedding_length: arch_u32("embedding_length"),
        head_count: arch_u32("attention.head_count"),
        head_count_kv: arch_u32("attention.head_count_kv"),
        chat_template: template.is_some(),
        template_mentions_tools: template.is_some_and(mentions_tools),
        chatml: template.is_some_and(|t| t.contains("<|im_start|>")),
        architecture,
    })
}

impl GgufFacts {
    /// Bytes of KV cache one token of context takes at f16: K and V, for every layer, of
    /// `embedding_length * head_count_kv / head_count` values each (grouped-query attention
    /// shares K and V between heads). `None` when the header lacks a figure.
    pub fn kv_bytes_per_token(&self) -> Option<u64> {
        let layers = u64::from(self.block_count?);
        let embd = u64::from(self.embedding_length?);
        let heads = u64::from(self.head_count?);
        if heads == 0 {
            return None;
        }
        let heads_kv = self.head_count_kv.map_or(heads, u64::from);
        let kv_width = embd.checked_mul(heads_kv)? / heads;
        2u64.checked_mul(layers)?
            .checked_mul(kv_width)?
            .checked_mul(2)
    }
}

/// Whether a chat template uses a `tools` variable (Jinja: `tools`, not e.g. `tool_calls`
/// alone, which only replays earlier calls).
fn mentions_tools(template: &str) -> bool {
    let bytes = template.as_bytes();
    template.match_indices("tools").any(|(at, word)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + word.len()).copied();
        let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

fn u64_of(meta: &Metadata, key: &str) -> Option<u64> {
    let value = meta.get(key)?;
    value
        .as_u64()
        .or_else(|| value.as_i64().and_then(|v| u64::try_from(v).ok()))
}

fn u32_of(meta: &Metadata, key: &str) -> Option<u32> {
    match meta.get(key)? {
        // Some converters write per-layer arrays (e.g. head counts); the first layer's
        // figure is the one the usual layer has.
        MetadataValue::Array(a) => a.values.first().and_then(|v| v.as_u64()),
        v => v
            .as_u64()
            .or_else(|| v.as_i64().and_then(|v| u64::try_from(v).ok())),
    }
    .and_then(|v| u32::try_from(v).ok())
}

/// llama.cpp's `llama_ftype` numbers, by the names people know them by.
fn file_type_name(file_type: u64) -> Option<String> {
    let name = match file_type {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        other => return Some(format!("type {other}")),
    };
    Some(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_is_a_word_of_the_template() {
        assert!(mentions_tools(
            "{% if tools %}{{ tools | tojson }}{% endif %}"
        ));
        assert!(!mentions_tools(
            "{% for c in message.tool_calls %}{% endfor %}"
        ));
        assert!(!mentions_tools("{{ my_tools_list }}"));
    }

    #[test]
    fn kv_bytes_follow_grouped_query_attention() {
        let facts = GgufFacts {
            architecture: "llama".into(),
            name: None,
            parameters: None,
            quantization: None,
            training_context: None,
            block_count: Some(30),
            embedding_length: Some(576),
            head_count: Some(9),
            head_count_kv: Some(3),
            chat_template: false,
            template_mentions_tools: false,
            chatml: false,
        };
        // 2 (K, V) * 30 layers * (576 * 3 / 9 = 192) values * 2 bytes.
        assert_eq!(facts.kv_bytes_per_token(), Some(2 * 30 * 192 * 2));
        let missing = GgufFacts {
            head_count: None,
            ..facts
        };
        assert_eq!(missing.kv_bytes_per_token(), None);
    }
}
