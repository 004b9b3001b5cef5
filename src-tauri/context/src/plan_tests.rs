use super::*;
use pocketpilot_model::{Role, ToolCall, ToolKind};

fn est() -> Estimator {
    Estimator::shape_based("test")
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

/// Text of `tokens` short words (one token each): `{tag}a {tag}b … {tag}j {tag}a …`.
fn words(tag: &str, tokens: usize) -> String {
    (0..tokens)
        .map(|i| format!("{tag}{} ", char::from(b'a' + (i % 10) as u8)))
        .collect()
}

/// A letters-only tag for round `n` (digits would be tokens of their own).
fn tag(n: usize) -> String {
    let mut t = String::from("r");
    let mut n = n;
    loop {
        t.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            break t;
        }
    }
}

/// A session: rules, a goal, then `turns` rounds of (assistant calls read_file, its
/// result of `result_tokens`), with a person steer every `steer_every` rounds.
struct Session {
    items: Vec<Item>,
    next: ItemId,
}

impl Session {
    fn new(goal: &str) -> Self {
        let mut s = Self {
            items: Vec::new(),
            next: 1,
        };
        s.push(|id| Item::system_rules(id, "You are PocketPilot. Ask before risky steps."));
        s.push(|id| {
            Item::workspace_instructions(id, "AGENTS.md: run cargo fmt before committing.")
        });
        s.push(|id| Item::goal(id, goal));
        s
    }
    fn push(&mut self, make: impl FnOnce(ItemId) -> Item) -> ItemId {
        let id = self.next;
        self.next += 1;
        self.items.push(make(id));
        id
    }
    fn round(&mut self, n: usize, result_tokens: usize) {
        let c = call(
            &format!("c{n}"),
            "read_file",
            &format!(r#"{{"path":"src/f{n}.rs"}}"#),
        );
        self.push(|id| Item::assistant(id, format!("Reading f{n}."), vec![c.clone()]));
        self.push(|id| Item::tool_result(id, &c, ToolKind::Read, words(&tag(n), result_tokens)));
    }
    fn person(&mut self, text: &str) -> ItemId {
        self.push(|id| Item::person(id, text))
    }
    /// What the runtime does with a compaction: the summary replaces the turns it covers.
    fn apply(&mut self, compacted: &Compacted) {
        let Some(summary) = &compacted.summary else {
            return;
        };
        let covered = |i: &Item| summary.replaces.contains(&i.id);
        let Some(last) = self.items.iter().rposition(covered) else {
            return;
        };
        // The summary takes the place of the last item it replaces.
        let insert_at = last + 1 - self.items[..=last].iter().filter(|i| covered(i)).count();
        self.items.retain(|i| !covered(i));
        let id = self.next;
        self.next += 1;
        self.items
            .insert(insert_at, Item::summary(id, &summary.text));
    }
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m.content.clone().unwrap_or_default())
        .collect()
}

fn plan(items: &[Item], window: u32, reserve: u32) -> Result<Plan, ContextError> {
    let e = est();
    let budget = Budget::new(window, reserve, &e);
    plan_compaction(items, &[], &budget, &e, &PlanOptions::default(), None)
}

#[test]
fn a_view_that_fits_is_left_alone() {
    let mut s = Session::new("Fix the bug in parse().");
    s.round(1, 50);
    let p = plan(&s.items, 4096, 512).unwrap();
    assert!(p.is_noop() && p.summary_request().is_none());
    let out = p.finish(None, &est());
    assert_eq!(
        out.messages,
        s.items
            .iter()
            .map(|i| i.message.clone())
            .collect::<Vec<_>>()
    );
    assert!(out.summary.is_none());
}

#[test]
fn old_tool_results_are_elided_first_with_a_marker_saying_how_to_get_them_back() {
    let mut s = Session::new("Review the parser.");
    for n in 1..=6 {
        s.round(n, 400);
    }
    let p = plan(&s.items, 2048, 256).unwrap();
    assert!(
        matches!(p.steps.first(), Some(Step::ToolResultsElided { .. })),
        "{:?}",
        p.steps
    );
    assert!(p.summary_request().is_none(), "{:?}", p.steps);
    let out = p.finish(None, &est());
    assert!(out.estimate <= p.budget.limit());
    let all = texts(&out.messages).join("\n");
    assert!(
        all.contains("bytes of this read_file(path=src/f1.rs) output elided"),
        "{all}"
    );
    assert!(all.contains("read the file again to see it"));
    // The oldest went first; the last two turns are verbatim.
    assert!(matches!(p.items[4].action, Action::Elided { .. }));
    let last = &s.items[s.items.len() - 1];
    assert_eq!(out.messages.last(), Some(&last.message));
    // The protected items are untouched.
    for (i, item) in s.items.iter().enumerate().take(3) {
        assert_eq!(out.messages[i], item.message);
    }
}

#[test]
fn older_turns_are_summarised_when_eliding_is_not_enough() {
    let mut s = Session::new("Refactor the config loader.");
    let steer = s.person("Keep the public API unchanged.");
    // Many small turns: eliding results cannot make room, only summarising can.
    for n in 1..=60 {
        s.round(n, 10);
    }
    let p = plan(&s.items, 2048, 256).unwrap();
    let request = p
        .summary_request()
        .unwrap_or_else(|| {
            panic!(
                "a summary is needed: {:?} est {} limit {}",
                p.steps,
                p.estimate,
                p.budget.limit()
            )
        })
        .clone();
    assert!(request.max_tokens >= 32 && request.max_tokens <= p.budget.limit() / 2);
    // The summary covers turns only: never the rules, the goal or the person's steer.
    for id in &request.covers {
        let item = s.items.iter().find(|i| i.id == *id).unwrap();
        assert!(!item.kind.is_protected(), "{item:?}");
    }
    assert!(!request.covers.contains(&steer));
    assert_eq!(request.messages[0].role, Role::System);
    let asked = texts(&request.messages).join("\n");
    // The oldest turns at least by name, the newest of them in full.
    assert!(asked.contains("path=src/f1.rs"), "{asked}");
    let newest = s
        .items
        .iter()
        .find(|i| Some(&i.id) == request.covers.last())
        .unwrap();
    assert!(asked.contains(newest.text().trim()), "{asked}");
    // The request for the summary fits the window with its answer.
    let e = est();
    let cost: u32 = request.messages.iter().map(|m| e.message(m)).sum::<u32>() + e.fixed();
    assert!(cost + request.max_tokens <= p.budget.window);

    let out = p.finish(
        Some("f1..f20 read; loader uses serde; no API change yet."),
        &e,
    );
    assert!(
        out.estimate <= p.budget.limit(),
        "{} > {}",
        out.estimate,
        p.budget.limit()
    );
    let summary = out.summary.clone().unwrap();
    assert!(!summary.fallback);
    assert_eq!(summary.replaces, request.covers);
    let all = texts(&out.messages).join("\n");
    assert!(all.contains("f1..f20 read"));
    assert!(all.contains("Keep the public API unchanged."));
    assert!(all.contains("Refactor the config loader."));
    // Tool calls and their results stay paired: every tool message follows its call.
    let mut open: Vec<String> = Vec::new();
    for m in &out.messages {
        match m.role {
            Role::Assistant => open = m.tool_calls.iter().map(|c| c.id.clone()).collect(),
            Role::Tool => assert!(
                open.contains(m.tool_call_id.as_ref().unwrap()),
                "orphan tool result {m:?}"
            ),
            _ => open.clear(),
        }
    }
}

/// The server counted the summary request over its window: a cut makes the next plan's
/// summary request that much smaller, for the same turns.
#[test]
fn a_summary_room_cut_fits_the_summary_request_to_a_smaller_room() {
    let mut s = Session::new("Refactor the config loader.");
    for n in 1..=60 {
        s.round(n, 40);
    }
    let e = est();
    let budget = Budget::new(2048, 256, &e);
    let planned = |cut: u32| {
        let options = PlanOptions {
            summary_room_cut: cut,
            ..PlanOptions::default()
        };
        plan_compaction(&s.items, &[], &budget, &e, &options, None).unwrap()
    };
    let cost = |p: &Plan| {
        let r = p.summary_request().expect("a summary is planned");
        r.messages.iter().map(|m| e.message(m)).sum::<u32>() + e.fixed()
    };
    let whole = planned(0);
    let r = whole.summary_request().unwrap();
    let room = budget.window - r.max_tokens - budget.margin;
    assert!(cost(&whole) > room - room / 2, "{} of {room}", cost(&whole));
    let cut = planned(room / 2);
    assert!(
        cost(&cut) <= room - room / 2,
        "{} of {}",
        cost(&cut),
        room - room / 2
    );
    assert_eq!(cut.summary_request().unwrap().covers, r.covers);
}

#[test]
fn a_failed_summary_falls_back_to_a_fixed_marker_listing_what_was_dropped() {
    let mut s = Session::new("Refactor the config loader.");
    // Many small turns: eliding results cannot make room, only summarising can.
    for n in 1..=60 {
        s.round(n, 10);
    }
    let p = plan(&s.items, 2048, 256).unwrap();
    assert!(p.summary_request().is_some());
    for answer in [None, Some("   ")] {
        let out = p.finish(answer, &est());
        assert!(out.estimate <= p.budget.limit());
        let summary = out.summary.unwrap();
        assert!(summary.fallback);
        assert!(
            summary.text.contains("Earlier turns were dropped"),
            "{}",
            summary.text
        );
        assert!(summary.text.contains("read_file ×"), "{}", summary.text);
        assert!(summary.text.contains("redo a step"));
    }
    // A summary far longer than asked is cut to the room planned for it.
    let long = words("blah", 5000);
    let out = p.finish(Some(&long), &est());
    assert!(
        out.estimate <= p.budget.limit(),
        "{} > {}",
        out.estimate,
        p.budget.limit()
    );
    assert!(!out.summary.unwrap().fallback);
}

#[test]
fn three_successive_compactions_keep_every_person_instruction_verbatim() {
    let e = est();
    let mut s = Session::new("Port the CLI to clap 4.");
    let mut said = vec!["Port the CLI to clap 4.".to_owned()];
    let mut compactions = 0;
    let mut n = 0;
    while compactions < 3 {
        n += 1;
        assert!(n < 400, "never compacted three times");
        s.round(n, 60);
        if n % 7 == 0 {
            let text = format!("Instruction {n}: keep the --verbose flag working.");
            s.person(&text);
            said.push(text);
        }
        let budget = Budget::new(3000, 400, &e);
        let p = plan_compaction(&s.items, &[], &budget, &e, &PlanOptions::default(), None).unwrap();
        let answer = p.summary_request().map(|_| {
            format!(
                "Summary {}: rounds read so far, nothing changed.",
                compactions + 1
            )
        });
        let out = p.finish(answer.as_deref(), &e);
        assert!(
            out.estimate <= budget.limit(),
            "turn {n}: {} > {}",
            out.estimate,
            budget.limit()
        );
        if out.summary.is_some() {
            compactions += 1;
        }
        s.apply(&out);
        let all = texts(&out.messages);
        for text in &said {
            assert!(all.iter().any(|t| t == text), "turn {n}: lost {text:?}");
        }
    }
    // The earlier summaries were folded into the later ones: one summary item remains.
    let summaries = s
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Summary)
        .count();
    assert_eq!(
        summaries,
        1,
        "{:?}",
        s.items.iter().map(|i| &i.kind).collect::<Vec<_>>()
    );
}

#[test]
fn a_tool_result_bigger_than_the_window_is_capped() {
    let mut s = Session::new("What does the log say?");
    s.round(1, 20);
    s.round(2, 9000);
    let p = plan(&s.items, 2048, 256).unwrap();
    assert!(
        p.steps
            .iter()
            .any(|st| matches!(st, Step::RecentToolResultsCapped { .. })),
        "{:?}",
        p.steps
    );
    let out = p.finish(None, &est());
    assert!(out.estimate <= p.budget.limit());
    let last = out.messages.last().unwrap().content.clone().unwrap();
    let t = tag(2);
    assert!(last.starts_with(&format!("{t}a {t}b")), "the head is kept");
    assert!(last.contains("output elided"), "{last}");
    assert!(
        last.trim_end().ends_with(&format!("{t}j")),
        "the tail is kept: {last}"
    );
    assert!(texts(&out.messages).contains(&"What does the log say?".to_owned()));
}

#[test]
fn when_the_kept_items_alone_do_not_fit_the_oldest_instructions_go_visibly() {
    let mut s = Session::new("Now fix the tests.");
    let old = s.person(&words("old", 900));
    s.person("Use the nightly toolchain.");
    s.round(1, 10);
    let p = plan(&s.items, 1024, 128).unwrap();
    assert!(
        p.steps
            .contains(&Step::InstructionsElided { ids: vec![old] }),
        "{:?}",
        p.steps
    );
    let out = p.finish(None, &est());
    assert!(out.estimate <= p.budget.limit());
    let all = texts(&out.messages);
    assert!(all
        .iter()
        .any(|t| t.starts_with("[An earlier message from the person (")
            && t.contains("It began: \"olda oldb")));
    assert!(all.contains(&"Use the nightly toolchain.".to_owned()));
    assert!(all.contains(&"Now fix the tests.".to_owned()));
}

#[test]
fn nothing_that_cannot_fit_is_ever_planned() {
    let s = Session::new(&words("goal", 5000));
    match plan(&s.items, 2048, 256) {
        Err(ContextError::GoalTooLong {
            tokens, room, cut, ..
        }) => {
            assert!(tokens > room);
            assert_eq!(cut, tokens - room);
        }
        other => panic!("{other:?}"),
    }
    // Tools that take the whole window.
    let e = est();
    let tools = vec![ToolSpec {
        name: "huge".into(),
        description: words("d", 3000),
        parameters: serde_json::json!({}),
    }];
    let s = Session::new("hi");
    let budget = Budget::new(2048, 256, &e);
    assert!(plan_compaction(&s.items, &tools, &budget, &e, &PlanOptions::default(), None).is_err());
    // The answer's room alone is the window.
    assert!(plan(&s.items, 512, 512).is_err());
}

#[test]
fn an_anchor_that_says_it_fits_is_believed() {
    let e = est();
    let mut s = Session::new("Go on.");
    for n in 1..=10 {
        s.round(n, 100);
    }
    let messages: Vec<Message> = s.items.iter().map(|i| i.message.clone()).collect();
    let budget = Budget::new(1500, 100, &e);
    // The estimate alone says it does not fit…
    assert!(
        !plan_compaction(&s.items, &[], &budget, &e, &PlanOptions::default(), None)
            .unwrap()
            .is_noop()
    );
    // …but the server counted the same messages at 900 tokens.
    let anchor = Anchor::new(&messages, &[], 900);
    let p = plan_compaction(
        &s.items,
        &[],
        &budget,
        &e,
        &PlanOptions::default(),
        Some(&anchor),
    )
    .unwrap();
    assert!(p.is_noop());
    assert_eq!(p.estimate, 900);
}

/// A small deterministic generator, so the property test needs no crate and never flakes.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below.max(1)
    }
}

#[test]
fn every_planned_view_is_within_budget() {
    let e = est();
    let mut rng = Lcg(7);
    let mut planned = 0;
    let mut summarised = 0;
    for case in 0..300 {
        let mut s = Session::new(&words("goal", 1 + rng.next(60) as usize));
        let rounds = 1 + rng.next(40) as usize;
        for n in 0..rounds {
            match rng.next(5) {
                0 => {
                    s.person(&words("steer", 1 + rng.next(80) as usize));
                }
                1 => {
                    s.push(|id| {
                        Item::assistant(id, words("thinking", 1 + rng.next(100) as usize), vec![])
                    });
                }
                _ => s.round(n, rng.next(1500) as usize),
            }
        }
        let window = [1024, 2048, 4096, 8192][rng.next(4) as usize];
        let reserve = window / [4, 8, 16][rng.next(3) as usize];
        let budget = Budget::new(window, reserve, &e);
        let options = PlanOptions {
            keep_last_turns: 1 + rng.next(3) as usize,
            ..PlanOptions::default()
        };
        let Ok(p) = plan_compaction(&s.items, &[], &budget, &e, &options, None) else {
            continue;
        };
        planned += 1;
        assert!(p.estimate <= budget.limit(), "case {case}");
        let summary_len = rng.next(4000) as usize;
        let answers = [None, Some(words("sum", summary_len))];
        for answer in &answers {
            let out = p.finish(answer.as_deref(), &e);
            let counted = e.fixed() + out.messages.iter().map(|m| e.message(m)).sum::<u32>();
            assert_eq!(counted, out.estimate);
            assert!(
                out.estimate <= budget.limit(),
                "case {case} answer {}: {} > {}",
                answer.is_some(),
                out.estimate,
                budget.limit()
            );
        }
        if p.summary_request().is_some() {
            summarised += 1;
            let r = p.summary_request().unwrap();
            let cost: u32 = r.messages.iter().map(|m| e.message(m)).sum::<u32>() + e.fixed();
            assert!(
                cost + r.max_tokens <= budget.window,
                "case {case}: summary request overflows"
            );
        }
    }
    // The generator reaches the interesting cases.
    assert!(
        planned > 200 && summarised > 20,
        "planned {planned}, summarised {summarised}"
    );
}

/// The instructions a plan elided.
fn instructions_elided(p: &Plan) -> Vec<ItemId> {
    p.items
        .iter()
        .filter(|i| matches!(i.action, Action::InstructionElided { .. }))
        .map(|i| i.id)
        .collect()
}

#[test]
fn once_the_persons_words_overflow_the_same_ones_stay_elided_for_several_turns() {
    let e = est();
    let budget = Budget::new(2048, 128, &e);
    let options = PlanOptions::default();
    let target = (f64::from(budget.limit()) * options.target_fraction) as u32;
    let mut s = Session::new("Keep notes.");
    for n in 0..8 {
        s.person(&words(&tag(n), 150));
    }
    let mut before: Vec<ItemId> = Vec::new();
    let mut changes = 0;
    for n in 8..16 {
        s.person(&words(&tag(n), 150));
        let p = plan_compaction_after(&s.items, &[], &budget, &e, &options, None, &before).unwrap();
        assert!(p.estimate <= budget.limit());
        let now = instructions_elided(&p);
        if now != before {
            // The first elision aims below the target (70% of the limit), leaving room
            // for the next turns.
            if before.is_empty() {
                assert!(p.estimate <= target, "turn {n}: {} > {target}", p.estimate);
            }
            assert!(before.iter().all(|id| now.contains(id)), "turn {n}");
            changes += 1;
        }
        before = now;
    }
    // 8 turns of 150 tokens each; each change leaves the 30% above the target free, about
    // three turns here: a few changes of the view, not one per turn.
    assert!((1..=3).contains(&changes), "{changes} changes in 8 turns");
}

/// A chat as a small local model sees it: a large fixed part (system rules, tool specs),
/// then turns of a person's message and a short answer. The person's words cannot be
/// summarised, so once the window is full a summary of the answers alone buys a turn or
/// two; compacting on every turn after that would change the request's prefix each time
/// (the server's prompt cache lost, a summary request per turn).
#[test]
fn a_long_chat_compacts_once_every_several_turns_not_on_each() {
    let e = est();
    let budget = Budget::new(4096, 48, &e);
    let options = PlanOptions::default();
    let mut s = Session::new("Chat with me.");
    s.items[0] = Item::system_rules(0, words("sys", 1600));
    let mut before: Vec<ItemId> = Vec::new();
    let mut compactions = 0;
    for n in 0..60 {
        s.person(&words(&tag(n), 60));
        let p = plan_compaction_after(&s.items, &[], &budget, &e, &options, None, &before).unwrap();
        assert!(p.estimate <= budget.limit(), "turn {n}");
        let elided = instructions_elided(&p);
        // A change of the view: a summary, or another message elided.
        if p.summary_request().is_some() || elided != before {
            compactions += 1;
        }
        let summary = p.summary_request().map(|_| words("sum", 150));
        let out = p.finish(summary.as_deref(), &e);
        assert!(out.estimate <= budget.limit(), "turn {n}");
        before = elided;
        s.apply(&out);
        s.push(|id| Item::assistant(id, words("ans", 45), vec![]));
    }
    // The window fills near turn 20; from then on a compaction every turn would be ~40.
    assert!(compactions <= 10, "{compactions} compactions in 60 turns");
}

/// Two long turns beside a large fixed part: the last two turns alone do not fit. The one
/// before the last is summarised rather than the request refused; the last stays verbatim.
#[test]
fn when_the_last_two_turns_alone_do_not_fit_the_older_is_summarised() {
    let e = est();
    let budget = Budget::new(4096, 512, &e);
    let mut s = Session::new("List the folder, thinking aloud.");
    s.items[0] = Item::system_rules(0, words("sys", 1500));
    let mut last = String::new();
    for n in 0..2 {
        let c = call(&format!("c{n}"), "list_dir", r#"{"path":"."}"#);
        last = words(&tag(n), 700);
        let text = last.clone();
        s.push(|id| Item::assistant(id, text, vec![c.clone()]));
        s.push(|id| Item::tool_result(id, &c, ToolKind::Search, "a.txt b.txt"));
    }
    let p = plan(&s.items, 4096, 512).unwrap();
    assert!(p.estimate <= budget.limit());
    assert!(p.summary_request().is_some());
    let out = p.finish(Some("Listed once."), &e);
    assert!(
        texts(&out.messages).contains(&last),
        "the last turn verbatim"
    );
    assert!(!texts(&out.messages).iter().any(|t| t.starts_with(&tag(0))));
}

#[test]
fn the_answers_reserve_scales_with_the_window_and_never_drops_below_a_short_answer() {
    let r = Budget::default_reserve;
    assert_eq!(r(4096), MIN_RESERVE);
    assert_eq!(r(8192), 512);
    assert_eq!(r(16_384), 2048);
    assert_eq!(r(32_768), 4096);
    assert_eq!(r(1_000_000), 4096);
    assert_eq!(r(2048), MIN_RESERVE);
    // Never more than half a tiny window.
    assert_eq!(r(300), 150);
    // Monotone: a larger window never keeps less for the answer.
    let mut last = 0;
    for w in (512..=65_536).step_by(512) {
        assert!(r(w) >= last, "window {w}");
        last = r(w);
    }
}

/// The first message of a session, its answer, then the next message: each a quarter of
/// a 4,096-token window, beside a system text and tools that take about 700.
fn long_chat(messages: usize, message_tokens: usize, answer_tokens: usize) -> Session {
    let mut s = Session {
        items: Vec::new(),
        next: 1,
    };
    s.push(|id| Item::system_rules(id, words("sys", 300)));
    for n in 0..messages {
        let text = words(&tag(n), message_tokens);
        if n + 1 == messages {
            s.push(|id| Item::goal(id, text));
        } else {
            s.push(|id| Item::person(id, text));
            let answer = words(&format!("ans{}", tag(n)), answer_tokens);
            s.push(|id| Item::assistant(id, answer, vec![]));
        }
    }
    s
}

fn lean_tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".into(),
        description: words("tool", 380),
        parameters: serde_json::json!({"type": "object"}),
    }]
}

#[test]
fn the_persons_older_long_messages_are_elided_visibly_and_the_goal_never_is() {
    let e = est();
    let budget = Budget::new(4096, Budget::default_reserve(4096), &e);
    for messages in 2..=10 {
        let s = long_chat(messages, 1010, 256);
        let p = plan_compaction(
            &s.items,
            &lean_tools(),
            &budget,
            &e,
            &PlanOptions::default(),
            None,
        )
        .unwrap_or_else(|err| panic!("{messages} messages: {err}"));
        let out = p.finish(Some("They talked about long messages."), &e);
        assert!(out.estimate <= budget.limit(), "{messages} messages");
        let all = texts(&out.messages);
        let goal = words(&tag(messages - 1), 1010);
        assert_eq!(all.iter().filter(|t| **t == goal).count(), 1);
        if messages >= 3 {
            // Three long messages cannot all be there: the oldest go, as one visible marker.
            assert!(
                all.iter()
                    .any(|t| t.contains("from the person") && t.contains("elided")),
                "{messages} messages: {all:?}"
            );
            assert!(!all.contains(&words(&tag(0), 1010)));
            assert!(p
                .steps
                .iter()
                .any(|s| matches!(s, Step::InstructionsElided { .. })));
        }
    }
}

#[test]
fn a_long_last_answer_beside_a_long_goal_is_summarised_rather_than_the_goal_refused() {
    let e = est();
    let budget = Budget::new(4096, Budget::default_reserve(4096), &e);
    // The previous answer ran to 1,500 tokens: with it verbatim the goal cannot fit.
    let s = long_chat(2, 1010, 1500);
    let p = plan_compaction(
        &s.items,
        &lean_tools(),
        &budget,
        &e,
        &PlanOptions::default(),
        None,
    )
    .unwrap();
    let out = p.finish(None, &e);
    assert!(out.estimate <= budget.limit());
    assert!(texts(&out.messages).contains(&words(&tag(1), 1010)));
}

#[test]
fn a_goal_too_long_for_the_window_is_refused_in_words_with_how_much_to_cut() {
    let e = est();
    let budget = Budget::new(4096, Budget::default_reserve(4096), &e);
    let s = long_chat(1, 4000, 0);
    let err = plan_compaction(
        &s.items,
        &lean_tools(),
        &budget,
        &e,
        &PlanOptions::default(),
        None,
    )
    .unwrap_err();
    let ContextError::GoalTooLong {
        tokens,
        room,
        cut,
        words,
    } = err.clone()
    else {
        panic!("{err:?}");
    };
    assert!((4000..4100).contains(&tokens), "{tokens}");
    assert_eq!(cut, tokens - room);
    // The room is what the limit leaves beside the system text and the tools.
    let carried = e.tools(&lean_tools()) + e.fixed() + e.message(&s.items[0].message);
    assert_eq!(room, budget.limit() - carried);
    assert!(words > cut / 2 && words < cut);
    assert_eq!(
        err.to_string(),
        format!(
            "Your message is about {tokens} tokens; this model's window leaves room for {room}. Shorten it by about {cut} tokens (~{words} words)."
        )
    );
    // Cut by that much, it fits.
    let shorter = long_chat(1, 4000 - cut as usize - 8, 0);
    assert!(plan_compaction(
        &shorter.items,
        &lean_tools(),
        &budget,
        &e,
        &PlanOptions::default(),
        None
    )
    .is_ok());
}

/// The hint in a marker comes from what the tool declares it does, not from its name: a
/// tool called `zz` that runs commands is rerun, one called `read_zz` that fetches is
/// fetched again, and a tool of no known kind is named.
#[test]
fn an_elided_output_says_how_to_get_it_back_by_the_tools_declared_kind() {
    let cases = [
        ("zz", ToolKind::Command, "rerun the command to see it"),
        ("read_zz", ToolKind::Fetch, "fetch it again to see it"),
        (
            "mcp__s__files",
            ToolKind::Search,
            "run the search again to see it",
        ),
        ("run_it", ToolKind::Read, "read the file again to see it"),
        (
            "fetch_it",
            ToolKind::Write,
            "read the file to see what it holds now",
        ),
        (
            "read_file",
            ToolKind::Other,
            "call read_file again to see it",
        ),
    ];
    for (name, kind, hint) in cases {
        let mut s = Session::new("Review the parser.");
        for n in 1..=6 {
            let c = call(&format!("c{n}"), name, r#"{"x":"1"}"#);
            s.push(|id| Item::assistant(id, format!("Step {n}."), vec![c.clone()]));
            s.push(|id| Item::tool_result(id, &c, kind, words(&tag(n), 400)));
        }
        let p = plan(&s.items, 2048, 256).unwrap();
        let all = texts(&p.finish(None, &est()).messages).join("\n");
        assert!(
            all.contains(&format!("output elided to fit the context window; {hint}]")),
            "{name} ({kind:?}): {all}"
        );
    }
}
