use super::*;
use serde_json::json;

#[test]
fn the_server_root_drops_the_version_segment_only() {
    let root = |base: &str| {
        OpenAiConfig {
            base_url: base.into(),
            ..OpenAiConfig::default()
        }
        .server_root()
    };
    assert_eq!(root("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080");
    assert_eq!(root("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080");
    assert_eq!(root("http://localhost:11434/v1"), "http://localhost:11434");
    assert_eq!(root("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    assert_eq!(
        root("https://openrouter.ai/api/v1"),
        "https://openrouter.ai/api"
    );
    // A path that merely ends in "v1" is not a version segment.
    assert_eq!(root("http://h/apiv1"), "http://h/apiv1");
}

#[test]
fn props_reads_the_slot_window() {
    assert_eq!(
        props_window(&json!({"default_generation_settings":{"n_ctx":4096},"total_slots":1})),
        Some(4096)
    );
    assert_eq!(props_window(&json!({"n_ctx": 2048})), Some(2048));
    assert_eq!(
        props_window(&json!({"default_generation_settings":{"n_ctx":0}})),
        None
    );
    assert_eq!(props_window(&json!({"build_info":"b1"})), None);
}

#[test]
fn models_reads_the_configured_entry() {
    // vLLM
    let vllm = json!({"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","owned_by":"vllm","max_model_len":32768}]});
    assert_eq!(
        models_window(&vllm, "Qwen/Qwen2.5-7B-Instruct"),
        Some(32768)
    );
    // One entry: whatever the configured name, that is the model served.
    assert_eq!(models_window(&vllm, "anything"), Some(32768));
    // OpenRouter: many entries, the configured one counts.
    let openrouter = json!({"data":[
        {"id":"openai/gpt-4o-mini","context_length":128000,"top_provider":{"context_length":128000,"max_completion_tokens":16384}},
        {"id":"meta-llama/llama-3.1-8b-instruct","context_length":131072},
        {"id":"mistralai/ministral-8b","top_provider":{"context_length":32000}}
    ]});
    assert_eq!(
        models_window(&openrouter, "meta-llama/llama-3.1-8b-instruct"),
        Some(131072)
    );
    assert_eq!(
        models_window(&openrouter, "mistralai/ministral-8b"),
        Some(32000)
    );
    assert_eq!(models_window(&openrouter, "not/listed"), None);
    // LM Studio: the loaded length wins over the maximum.
    let lmstudio = json!({"data":[{"id":"qwen2.5-7b-instruct","max_context_length":32768,"loaded_context_length":8192}]});
    assert_eq!(models_window(&lmstudio, "qwen2.5-7b-instruct"), Some(8192));
    // An older llama.cpp's list has only the training length: not the window.
    let llama = json!({"object":"list","data":[{"id":"smollm2","object":"model","meta":{"n_ctx_train":8192,"n_params":134515008}}]});
    assert_eq!(models_window(&llama, "smollm2"), None);
    // A newer one lists the window it runs with (recorded from the real server).
    let recorded: serde_json::Value =
        serde_json::from_str(include_str!("../../fixtures/window/llamacpp-models.json")).unwrap();
    assert_eq!(models_window(&recorded, "smollm2"), Some(4096));
    // OpenAI: no lengths at all.
    let openai = json!({"object":"list","data":[{"id":"gpt-4o-mini","object":"model","owned_by":"system"},{"id":"gpt-4o","object":"model"}]});
    assert_eq!(models_window(&openai, "gpt-4o-mini"), None);
}

#[test]
fn ollama_prefers_num_ctx_over_the_trained_length() {
    let show = json!({
        "parameters": "stop \"<|eot_id|>\"\nnum_ctx 16384",
        "model_info": {"general.architecture":"llama","llama.context_length":131072}
    });
    assert_eq!(ollama_window(&show), Some(16384));
    let show = json!({"model_info": {"general.architecture":"qwen2","qwen2.context_length":32768,"qwen2.embedding_length":3584}});
    assert_eq!(ollama_window(&show), Some(32768));
    let show = json!({"model_info": {"gemma3.context_length":8192}});
    assert_eq!(ollama_window(&show), Some(8192));
    assert_eq!(ollama_window(&json!({"license":"x"})), None);
}

#[test]
fn props_names_the_chat_template() {
    // Recorded from the real server started with the Qwen2.5 (ChatML, tools) template.
    let recorded: serde_json::Value =
        serde_json::from_str(include_str!("../../fixtures/window/llamacpp-props.json")).unwrap();
    let template = props_chat_template(&recorded).expect("the recorded server names it");
    assert!(template.contains("<|im_start|>"), "{template}");
    assert_eq!(
        crate::TemplateFamily::from_chat_template(&template),
        crate::TemplateFamily::Hermes
    );
    assert_eq!(props_chat_template(&json!({"chat_template": ""})), None);
    assert_eq!(props_chat_template(&json!({"chat_template": 3})), None);
    assert_eq!(props_chat_template(&json!({"n_ctx": 2048})), None);
}
