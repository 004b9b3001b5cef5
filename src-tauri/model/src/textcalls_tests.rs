use super::*;
use serde_json::json;

fn tools() -> Vec<ToolSpec> {
    ["read_file", "write_file", "list_dir"]
        .iter()
        .map(|n| ToolSpec {
            name: (*n).into(),
            description: String::new(),
            parameters: json!({ "type": "object" }),
        })
        .collect()
}

fn generic(text: &str) -> TextCalls {
    extract_text_calls(text, &tools(), TemplateFamily::Generic)
}

fn args(call: &RepairedCall) -> Value {
    serde_json::from_str(&call.call.arguments).unwrap()
}

/// The one call `text` holds, with its arguments.
fn only_call(text: &str) -> RepairedCall {
    let found = generic(text);
    assert!(found.broken.is_empty(), "{:?}", found.broken);
    assert_eq!(found.calls.len(), 1, "{text:?} → {found:?}");
    found.calls[0].clone()
}

fn nothing(text: &str) {
    let found = generic(text);
    assert!(found.is_empty(), "{text:?} must not be a call: {found:?}");
    assert_eq!(found.remaining_text, text);
}

#[test]
fn a_hermes_tag_is_a_call_and_leaves_the_prose() {
    // What Qwen2.5-0.5B-Instruct answers through llama.cpp without `--jinja`.
    let text = "I'll read the file first.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>";
    let found = generic(text);
    assert_eq!(found.calls.len(), 1);
    let c = &found.calls[0];
    assert_eq!(c.call.id, "text_call_1");
    assert_eq!(c.call.name, "read_file");
    assert_eq!(args(c), json!({ "path": "notes.txt" }));
    assert_eq!(c.fixes, vec![TextCallFix::ToolCallTag]);
    assert!(c.original.starts_with("<tool_call>") && c.original.ends_with("</tool_call>"));
    assert_eq!(found.remaining_text, "I'll read the file first.");
}

#[test]
fn several_tags_are_several_calls_in_order_and_an_unclosed_one_runs_to_the_end() {
    let text = "<tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}</tool_call>\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}";
    let found = generic(text);
    let names: Vec<_> = found.calls.iter().map(|c| c.call.name.as_str()).collect();
    assert_eq!(names, ["list_dir", "read_file"]);
    let ids: Vec<_> = found.calls.iter().map(|c| c.call.id.as_str()).collect();
    assert_eq!(ids, ["text_call_1", "text_call_2"]);
    assert_eq!(found.remaining_text, "");
    assert_eq!(found.tool_calls().len(), 2);
}

#[test]
fn a_bare_json_object_that_is_the_whole_answer_is_a_call() {
    let c = only_call("  \n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"hi\"}}\n\n");
    assert_eq!(c.call.name, "write_file");
    assert_eq!(args(&c), json!({ "path": "a.txt", "content": "hi" }));
    assert_eq!(c.fixes, vec![TextCallFix::WholeAnswerJson]);
}

#[test]
fn llama_style_json_with_parameters_is_a_call() {
    // What Llama-3.2-1B-Instruct writes for a custom tool.
    let text = "{\"type\": \"function\", \"name\": \"read_file\", \"parameters\": {\"path\": \"README.md\"}}";
    let found = extract_text_calls(text, &tools(), TemplateFamily::Llama);
    let c = &found.calls[0];
    assert_eq!(c.call.name, "read_file");
    assert_eq!(args(c), json!({ "path": "README.md" }));
    assert_eq!(
        c.fixes,
        vec![TextCallFix::WholeAnswerJson, TextCallFix::ParametersKey]
    );
}

#[test]
fn the_python_tag_is_a_call_for_llama_and_text_for_hermes() {
    let text =
        "<|python_tag|>{\"name\": \"list_dir\", \"parameters\": {\"path\": \"src\"}}<|eom_id|>";
    let found = extract_text_calls(text, &tools(), TemplateFamily::Llama);
    assert_eq!(found.calls.len(), 1);
    assert_eq!(found.calls[0].call.name, "list_dir");
    assert!(found.calls[0].fixes.contains(&TextCallFix::PythonTag));
    assert_eq!(found.remaining_text, "");
    assert!(extract_text_calls(text, &tools(), TemplateFamily::Hermes).is_empty());
}

#[test]
fn a_tool_call_tag_is_text_for_a_llama_model() {
    let text = "Done. <tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>";
    assert!(extract_text_calls(text, &tools(), TemplateFamily::Llama).is_empty());
    assert_eq!(
        extract_text_calls(text, &tools(), TemplateFamily::Hermes)
            .calls
            .len(),
        1
    );
}

#[test]
fn a_fenced_block_that_is_the_whole_answer_or_closes_it_is_a_call() {
    let c = only_call("```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```");
    assert_eq!(c.fixes, vec![TextCallFix::FencedBlock]);
    let c = only_call(
        "```tool_call\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n```\n",
    );
    assert_eq!(c.call.name, "list_dir");
    let text = "Let me look at the folder.\n\n```json\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n```";
    let found = generic(text);
    assert_eq!(found.calls.len(), 1, "{found:?}");
    assert_eq!(found.remaining_text, "Let me look at the folder.");
}

#[test]
fn a_nearly_right_name_is_the_one_tool_it_can_only_be() {
    for written in ["Read_File", "read-file", "functions.read_file", "READ FILE"] {
        let text = format!("<tool_call>{{\"name\": \"{written}\", \"arguments\": {{\"path\": \"a\"}}}}</tool_call>");
        let c = only_call(&text);
        assert_eq!(c.call.name, "read_file", "{written}");
        assert!(c.fixes.contains(&TextCallFix::NameNormalised), "{written}");
    }
}

#[test]
fn arguments_written_as_a_json_string_are_read_and_missing_ones_are_empty() {
    let c = only_call(
        r#"<tool_call>{"name": "read_file", "arguments": "{\"path\": \"a\"}"}</tool_call>"#,
    );
    assert_eq!(args(&c), json!({ "path": "a" }));
    assert!(c.fixes.contains(&TextCallFix::ArgumentsUnquoted));
    let c = only_call(r#"<tool_call>{"name": "list_dir"}</tool_call>"#);
    assert_eq!(args(&c), json!({}));
    assert!(c.fixes.contains(&TextCallFix::ArgumentsMissing));
    // OpenAI's own shape, written as text.
    let c = only_call(
        r#"{"type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"b\"}"}}"#,
    );
    assert_eq!(args(&c), json!({ "path": "b" }));
}

#[test]
fn quoted_examples_inline_code_and_example_fences_are_not_calls() {
    nothing("You can call it like this:\n\n> <tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"x\", \"content\": \"y\"}}</tool_call>\n\nShall I?");
    nothing("Write `<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"x\"}}</tool_call>` to call a tool.");
    nothing("For example:\n\n```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"x\", \"content\": \"y\"}}\n```");
    nothing("A call looks e.g. like\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}\n```");
    nothing("The format is:\n```\n<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>\n```\nand then the result comes back.");
    nothing("For example, <tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"x\"}}</tool_call> would write x.");
    nothing("> {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}");
}

#[test]
fn json_in_prose_or_among_other_text_is_a_mention() {
    nothing("I would send {\"name\": \"write_file\", \"arguments\": {\"path\": \"x\", \"content\": \"y\"}} but I need your go-ahead.");
    nothing("{\"name\": \"read_file\", \"arguments\": {}} is how a call looks; I am done.");
    // Two fences: neither is clearly the call.
    nothing("First:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\nthen:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n```");
    // JSON that is data, not a call, stays the answer.
    nothing("{\"name\": \"Alice\", \"age\": 31}");
    nothing("```python\nread_file('a')\n```");
    nothing("Plain answer with no calls.");
}

#[test]
fn broken_calls_say_what_was_wrong_and_never_run() {
    let found = generic(
        "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\",}}</tool_call>",
    );
    assert!(found.calls.is_empty());
    let b = &found.broken[0];
    assert!(matches!(b.problem, Problem::InvalidJson(_)), "{b:?}");
    assert!(b
        .problem
        .to_string()
        .starts_with("arguments are not valid JSON: "));
    assert_eq!(b.problem.kind(), ToolErrorKind::InvalidArguments);
    assert_eq!(b.call.id, "text_call_1");
    assert_eq!(b.call.name, "write_file");
    assert!(
        serde_json::from_str::<Value>(&b.call.arguments).is_err(),
        "never runnable"
    );
    // The broken call stays in the text: the model sees what it wrote.
    assert!(found.remaining_text.contains("<tool_call>"));

    let found =
        generic("<tool_call>{\"name\": \"delete_everything\", \"arguments\": {}}</tool_call>");
    let b = &found.broken[0];
    assert_eq!(b.problem.kind(), ToolErrorKind::UnknownTool);
    let said = b.problem.to_string();
    assert!(
        said.contains("delete_everything") && said.contains("read_file, write_file, list_dir"),
        "{said}"
    );

    let found = generic(r#"<tool_call>{"name": "read_file", "arguments": "not json"}</tool_call>"#);
    assert!(matches!(found.broken[0].problem, Problem::InvalidJson(_)));
    let found = generic(r#"<tool_call>{"name": "read_file", "arguments": [1]}</tool_call>"#);
    assert_eq!(found.broken[0].problem, Problem::ArgumentsNotObject);
    let found = generic("<tool_call>{\"arguments\": {}}</tool_call>");
    assert_eq!(found.broken[0].problem, Problem::NoName);
    let found = generic("{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"");
    assert!(matches!(found.broken[0].problem, Problem::InvalidJson(_)));
}

#[test]
fn a_name_that_could_be_two_tools_is_refused_naming_them() {
    let mut offered = tools();
    offered.push(ToolSpec {
        name: "Read-File".into(),
        description: String::new(),
        parameters: json!({}),
    });
    let found = extract_text_calls(
        "<tool_call>{\"name\": \"READ_FILE\", \"arguments\": {\"path\": \"a\"}}</tool_call>",
        &offered,
        TemplateFamily::Generic,
    );
    let Problem::AmbiguousName { candidates, .. } = &found.broken[0].problem else {
        panic!("{found:?}")
    };
    assert_eq!(candidates, "read_file, Read-File");
    // The exact name is never ambiguous.
    let found = extract_text_calls(
        "<tool_call>{\"name\": \"Read-File\", \"arguments\": {}}</tool_call>",
        &offered,
        TemplateFamily::Generic,
    );
    assert_eq!(found.calls[0].call.name, "Read-File");
}

#[test]
fn repaired_and_broken_calls_keep_the_order_they_were_written_in() {
    let text = "<tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>";
    let found = generic(text);
    let ids: Vec<_> = found.tool_calls().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["text_call_1", "text_call_2"]);
    assert_eq!(found.broken[0].call.id, "text_call_1");
    assert_eq!(found.calls[0].call.id, "text_call_2");
}

#[test]
fn proper_tool_calls_win_and_the_text_is_not_read() {
    let mut response = ModelResponse {
        text: "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"x\"}}</tool_call>"
            .into(),
        ..ModelResponse::default()
    };
    assert!(repair_response(&response, &tools(), TemplateFamily::Generic).is_some());
    response.tool_calls.push(ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: "{\"path\":\"a\"}".into(),
    });
    assert_eq!(
        repair_response(&response, &tools(), TemplateFamily::Generic),
        None
    );
    // A request with no tools offered has nothing to call.
    response.tool_calls.clear();
    assert_eq!(
        repair_response(&response, &[], TemplateFamily::Generic),
        None
    );
}

#[test]
fn the_family_follows_the_template_or_the_model_name() {
    let qwen = "{%- if tools %}<tool_call>\\n{{ tool_call | tojson }}\\n</tool_call>{%- endif %}";
    assert_eq!(
        TemplateFamily::from_chat_template(qwen),
        TemplateFamily::Hermes
    );
    let llama = "{%- if builtin_tools is defined %}<|python_tag|>{%- endif %}<|eot_id|>";
    assert_eq!(
        TemplateFamily::from_chat_template(llama),
        TemplateFamily::Llama
    );
    assert_eq!(
        TemplateFamily::from_chat_template("{{ messages }}"),
        TemplateFamily::Generic
    );
    assert_eq!(
        TemplateFamily::from_model_name("Qwen2.5-0.5B-Instruct-Q4_K_M.gguf"),
        TemplateFamily::Hermes
    );
    assert_eq!(
        TemplateFamily::from_model_name("Llama-3.2-1B-Instruct"),
        TemplateFamily::Llama
    );
    assert_eq!(
        TemplateFamily::from_model_name("gpt-4o"),
        TemplateFamily::Generic
    );
}

#[test]
fn arguments_holding_backticks_and_fences_do_not_hide_the_call() {
    let text = "Writing the readme.\n<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"README.md\", \"content\": \"Run `make` then ```sh\\nmake\\n``` for example\"}}</tool_call>";
    let c = only_call(text);
    assert_eq!(
        args(&c)["content"],
        "Run `make` then ```sh\nmake\n``` for example"
    );
    // The arguments of the first call introduce nothing for the second.
    let text = format!("{text}\n<tool_call>{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"README.md\"}}}}</tool_call>");
    assert_eq!(generic(&text).calls.len(), 2);
}
