//! The repetition guard (issue 19): a run that keeps doing the same thing pauses for the
//! person instead of burning its budget. It trips when the same tool call (name and
//! normalised arguments) gets the same result — or the same error — `limit` times in a
//! row, or when the model's turns stop changing (`limit` identical turns in a row, call
//! ids aside). The agent feeds it; it only counts.
use pocketpilot_model::{ModelResponse, ToolCall};
use pocketpilot_protocol::Repeated;

pub struct RepetitionGuard {
    /// 0: off.
    limit: u32,
    last_call: Option<(String, String, String)>,
    call_times: u32,
    last_turn: Option<String>,
    turn_times: u32,
    tripped: Option<Repeated>,
}

/// Arguments with keys sorted and whitespace gone, so `{"b":1, "a":2}` and
/// `{"a":2,"b":1}` are the same call; text that is not JSON is compared trimmed.
pub fn normalise_arguments(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) => sorted(v).to_string(),
        Err(_) => raw.trim().to_owned(),
    }
}

/// The value with every object's keys in order. The keys are sorted here rather than
/// left to serde_json's map: a dependency of the binary (the ACP crate) turns on its
/// `preserve_order`, which keeps keys in the order they came.
fn sorted(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) => {
            let mut pairs: Vec<(String, serde_json::Value)> = map.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(pairs.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

impl RepetitionGuard {
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            last_call: None,
            call_times: 0,
            last_turn: None,
            turn_times: 0,
            tripped: None,
        }
    }

    /// One call and what it returned (its output, or the error the model was told).
    pub fn observe_call(&mut self, call: &ToolCall, result: &str) {
        if self.limit == 0 || self.tripped.is_some() {
            return;
        }
        let key = (
            call.name.clone(),
            normalise_arguments(&call.arguments),
            result.to_owned(),
        );
        if self.last_call.as_ref() == Some(&key) {
            self.call_times += 1;
        } else {
            self.last_call = Some(key);
            self.call_times = 1;
        }
        if self.call_times >= self.limit {
            if let Some((name, arguments, result)) = &self.last_call {
                self.tripped = Some(Repeated {
                    name: Some(name.clone()),
                    arguments: arguments.clone(),
                    result: result.clone(),
                    times: self.call_times,
                });
            }
        }
    }

    /// One model turn. Noted after its calls ran, so that a repeated call with the same
    /// result is reported as that (with its result) rather than as a repeated turn.
    pub fn observe_turn(&mut self, turn: &ModelResponse) {
        if self.limit == 0 {
            return;
        }
        let calls: Vec<String> = turn
            .tool_calls
            .iter()
            .map(|c| format!("{}({})", c.name, normalise_arguments(&c.arguments)))
            .collect();
        let signature = format!("{}\u{0}{}", turn.text.trim(), calls.join("\u{0}"));
        if self.last_turn.as_ref() == Some(&signature) {
            self.turn_times += 1;
        } else {
            self.last_turn = Some(signature);
            self.turn_times = 1;
        }
        if self.tripped.is_none() && self.turn_times >= self.limit {
            self.tripped = Some(Repeated {
                name: None,
                arguments: calls.join(", "),
                result: turn.text.clone(),
                times: self.turn_times,
            });
        }
    }

    /// What tripped the guard, once it has.
    pub fn tripped(&self) -> Option<&Repeated> {
        self.tripped.as_ref()
    }
}

/// The pause's one line: "the agent is repeating itself: …".
pub fn describe(r: &Repeated) -> String {
    let mut result: String = r.result.chars().take(120).collect();
    if r.result.chars().count() > 120 {
        result.push('…');
    }
    match &r.name {
        Some(name) => format!(
            "the agent is repeating itself: {name} {} returned the same result {} times in a row ({result})",
            r.arguments, r.times
        ),
        None => format!(
            "the agent is repeating itself: its last {} turns were the same",
            r.times
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn the_same_call_with_the_same_result_trips_at_the_limit_whatever_the_key_order() {
        let mut g = RepetitionGuard::new(3);
        g.observe_call(&call("1", r#"{"path":"a","n":1}"#), "no such file");
        g.observe_call(&call("2", r#"{ "n": 1, "path": "a" }"#), "no such file");
        assert!(g.tripped().is_none());
        g.observe_call(&call("3", r#"{"n":1,"path":"a"}"#), "no such file");
        let r = g.tripped().unwrap();
        assert_eq!((r.name.as_deref(), r.times), (Some("read_file"), 3));
        assert_eq!(r.result, "no such file");
    }

    #[test]
    fn a_different_result_or_call_starts_the_count_again_and_zero_is_off() {
        let mut g = RepetitionGuard::new(3);
        for result in ["1", "1", "2", "2"] {
            g.observe_call(&call("x", "{}"), result);
        }
        assert!(g.tripped().is_none());
        let mut off = RepetitionGuard::new(0);
        for _ in 0..10 {
            off.observe_call(&call("x", "{}"), "same");
        }
        assert!(off.tripped().is_none());
    }

    #[test]
    fn turns_that_stop_changing_trip_it() {
        let mut g = RepetitionGuard::new(3);
        let turn = |id: &str| ModelResponse {
            text: "Let me try again.".into(),
            tool_calls: vec![call(id, "{}")],
            finish_reason: None,
            usage: None,
            cached_prompt_tokens: None,
        };
        for (i, result) in ["a", "b"].iter().enumerate() {
            g.observe_call(&call(&i.to_string(), "{}"), result);
            g.observe_turn(&turn(&i.to_string()));
        }
        assert!(g.tripped().is_none());
        g.observe_call(&call("3", "{}"), "c");
        g.observe_turn(&turn("3"));
        let r = g.tripped().unwrap();
        assert_eq!((r.name.as_deref(), r.times), (None, 3));
    }
}
