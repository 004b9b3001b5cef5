//! The settings screen's money section (issue 19) on the real runtime and store: prices and
//! money budgets typed as text, refused with the runtime's message when bad (nothing
//! saved), obeyed by a run once saved, and today's spend read back. The model is scripted.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_test_support as support;

use pocketpilot_core::config::Limits;
use pocketpilot_core::TaskStatus;
use pocketpilot_protocol::{ErrorKind, LimitsForm, MoneyBudgetsForm, PriceForm};
use serde_json::{json, Value};
use support::*;

fn price(model: &str, input: &str, output: &str, cached: &str) -> PriceForm {
    PriceForm {
        model: model.into(),
        input: input.into(),
        output: output.into(),
        cached: cached.into(),
    }
}

fn budgets(task: &str, day: &str, trigger_day: &str) -> MoneyBudgetsForm {
    MoneyBudgetsForm {
        task_usd: task.into(),
        day_usd: day.into(),
        trigger_day_usd: trigger_day.into(),
    }
}

fn call(path: &str) -> Value {
    json!({ "tool_calls": [{ "name": "read_file", "arguments": { "path": path } }],
            "usage": { "prompt_tokens": 1000, "completion_tokens": 500 } })
}

#[test]
fn a_bad_price_is_refused_with_the_runtimes_message_and_nothing_is_saved() {
    let f = Fixture::new();
    let refused = [
        (
            price("scripted:*", "-1", "1000", ""),
            "the input price must be 0 or more dollars per million tokens, not -1",
        ),
        (
            price("scripted:*", "1000", "lots", ""),
            "the output price must be a number of dollars per million tokens (like 2.5), not \"lots\"",
        ),
        (price("scripted:*", "1000", "1000", "NaN"), "the cached input price must be 0 or more"),
        (price("scripted:*", "inf", "1000", ""), "the input price must be 0 or more"),
        (price("scripted:*", "", "1000", ""), "the input price must be a number"),
        (price("  ", "1", "1", ""), "a price needs a model"),
    ];
    for (form, says) in refused {
        let e = f.rt.call(ops::SetPrice { form: form.clone() }).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{form:?}");
        assert!(e.to_string().contains(says), "{form:?}: {e}");
    }
    assert!(f.rt.call(ops::GetPrices {}).unwrap().models.is_empty());
    assert!(f
        .rt
        .call(ops::GetMoneySettings {})
        .unwrap()
        .prices
        .is_empty());

    // A good one is stored trimmed; setting the same model again replaces it.
    let row =
        f.rt.call(ops::SetPrice {
            form: price(" gpt-4o ", " 2.5 ", "10", ""),
        })
        .unwrap();
    assert_eq!(
        (row.model.as_str(), row.cached_input_per_mtok),
        ("gpt-4o", None)
    );
    f.rt.call(ops::SetPrice {
        form: price("gpt-4o", "2.5", "10", "1.25"),
    })
    .unwrap();
    let prices = f.rt.call(ops::GetMoneySettings {}).unwrap().prices;
    assert_eq!(prices.len(), 1);
    assert_eq!(prices[0].cached_input_per_mtok, Some(1.25));
    // A refused change leaves the stored price as it was.
    f.rt.call(ops::SetPrice {
        form: price("gpt-4o", "-3", "10", ""),
    })
    .unwrap_err();
    assert_eq!(
        f.rt.call(ops::GetPrices {}).unwrap().models[0].input_per_mtok,
        2.5
    );

    assert!(f
        .rt
        .call(ops::DeletePrice {
            model: "gpt-4o".into()
        })
        .unwrap());
    assert!(!f
        .rt
        .call(ops::DeletePrice {
            model: "gpt-4o".into()
        })
        .unwrap());
    assert!(f.rt.call(ops::GetPrices {}).unwrap().models.is_empty());
}

#[test]
fn bad_budgets_are_refused_whole_and_good_ones_keep_the_other_limits() {
    let f = Fixture::new();
    f.rt.call(ops::SaveLimitsForm {
        form: LimitsForm {
            max_steps: 7,
            ..LimitsForm::from(Limits::default())
        },
    })
    .unwrap();
    for (form, says) in [
        (
            budgets("-2", "", ""),
            "the task budget must be 0 or more dollars, not -2",
        ),
        (
            budgets("", "abc", ""),
            "the daily budget must be a number of dollars",
        ),
        // One bad figure refuses the whole form: the good task budget is not saved either.
        (
            budgets("2", "", "-0.5"),
            "the daily cap for unattended runs must be 0 or more",
        ),
    ] {
        let e = f.rt.call(ops::SetMoneyBudgets { form }).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArguments);
        assert!(e.to_string().contains(says), "{e}");
    }
    let stored = Limits::stored(f.rt.store_for_tests()).unwrap();
    assert_eq!(stored.max_task_usd, None);
    assert_eq!(stored.max_trigger_day_usd, None);

    f.rt.call(ops::SetMoneyBudgets {
        form: budgets("2", "", " 1.5 "),
    })
    .unwrap();
    let stored = Limits::stored(f.rt.store_for_tests()).unwrap();
    assert_eq!(
        (
            stored.max_task_usd,
            stored.max_day_usd,
            stored.max_trigger_day_usd
        ),
        (Some(2.0), None, Some(1.5))
    );
    assert_eq!(stored.max_steps, 7, "the other limits stay as stored");
    let m = f.rt.call(ops::GetMoneySettings {}).unwrap();
    assert_eq!(
        (m.max_task_usd, m.max_day_usd, m.max_trigger_day_usd),
        (Some(2.0), None, Some(1.5))
    );
    // The CLI's path (`budget set`) is held to the same rule.
    let e =
        f.rt.call(ops::SetLimits {
            limits: Limits {
                max_day_usd: Some(-1.0),
                ..stored
            },
        })
        .unwrap_err();
    assert!(
        e.to_string().contains("the daily budget must be 0 or more"),
        "{e}"
    );
}

#[tokio::test]
async fn a_price_and_a_task_budget_set_here_pause_a_run_and_today_shows_its_spend() {
    let f = Fixture::new();
    f.rt.call(ops::SetPrice {
        form: price("scripted:*", "1000", "1000", ""),
    })
    .unwrap();
    f.rt.call(ops::SetMoneyBudgets {
        form: budgets("2", "10", ""),
    })
    .unwrap();
    // Each turn: 1000 + 500 tokens at $1000 per million = $1.50; after two, $3.00 ≥ $2.
    let p = f.script(
        "priced.json",
        json!([call("a"), call("b"), { "text": "never asked" }]),
    );
    let id = f.submit("spend", &p);
    assert_eq!(f.settle(id).await, TaskStatus::Paused);
    let pause = f.rt.call(ops::GetTask { id }).unwrap().pause.unwrap();
    assert_eq!(pause.message, "the task cost $3.00 of its budget of $2.00");
    assert_eq!(
        pause.resumes_at, None,
        "a person's budget waits for the person"
    );
    let today = f.rt.call(ops::GetMoneySettings {}).unwrap().today;
    assert!((today.cost_usd - 3.0).abs() < 1e-9, "{today:?}");
    assert_eq!((today.turns, today.unpriced_turns), (2, 0));
    assert_eq!(today.day_budget_usd, Some(10.0));
    assert_eq!(today.trigger_day_budget_usd, None);
    assert_eq!(today.unattended_cost_usd, 0.0);
    assert!(today.resets_at.ends_with("T00:00:00.000Z"), "{today:?}");
}
