//! The settings screen edits stored values: an environment override is reported, never
//! saved (issue 12, defect (b)). One test in its own binary: it sets process environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::config::{Limits, ProviderSettings};
use pocketpilot_core::ops;
use pocketpilot_protocol::{LimitsForm, SettingField};
use pocketpilot_test_support::Fixture;

#[test]
fn the_window_reads_and_saves_stored_settings_and_is_told_what_the_environment_overrides() {
    std::env::remove_var("POCKETPILOT_PROVIDER");
    let f = Fixture::new();
    // Setup: an endpoint is not enough, runs need a model name too.
    assert!(
        !f.rt
            .call(ops::GetSetupStatus {})
            .unwrap()
            .provider_configured
    );
    f.rt.call(ops::SetProviderSettings {
        settings: ProviderSettings {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..ProviderSettings::default()
        },
    })
    .unwrap();
    assert!(
        !f.rt
            .call(ops::GetSetupStatus {})
            .unwrap()
            .provider_configured,
        "an endpoint without a model"
    );

    let stored = ProviderSettings {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        model: Some("stored-model".into()),
        ..ProviderSettings::default()
    };
    f.rt.call(ops::SetProviderSettings {
        settings: stored.clone(),
    })
    .unwrap();
    assert!(
        f.rt.call(ops::GetSetupStatus {})
            .unwrap()
            .provider_configured
    );
    let limits = Limits::stored(f.rt.store_for_tests()).unwrap();

    std::env::set_var("POCKETPILOT_MODEL", "env-model");
    std::env::set_var("POCKETPILOT_MAX_AGENT_STEPS", "99");

    // Runs see the override...
    assert_eq!(
        f.rt.call(ops::GetProviderSettings {})
            .unwrap()
            .model
            .as_deref(),
        Some("env-model")
    );
    assert_eq!(f.rt.call(ops::GetLimits {}).unwrap().max_steps, 99);
    // ...the form shows what is stored, and which fields the environment overrides.
    let mut form = f.rt.call(ops::GetProviderForm {}).unwrap();
    assert_eq!(form.model.as_deref(), Some("stored-model"));
    let mut lf = f.rt.call(ops::GetLimitsForm {}).unwrap();
    assert_eq!(lf.max_steps, limits.max_steps);
    let overrides = f.rt.call(ops::SettingOverrides {}).unwrap();
    let model = overrides
        .iter()
        .find(|o| o.field == SettingField::Model)
        .unwrap();
    assert_eq!(
        (model.variable.as_str(), model.value.as_str()),
        ("POCKETPILOT_MODEL", "env-model")
    );
    let steps = overrides
        .iter()
        .find(|o| o.field == SettingField::MaxSteps)
        .unwrap();
    assert_eq!(
        (steps.variable.as_str(), steps.value.as_str()),
        ("POCKETPILOT_MAX_AGENT_STEPS", "99")
    );
    assert!(!overrides.iter().any(|o| o.field == SettingField::BaseUrl));

    // Saving an unrelated change writes no env-derived value.
    form.temperature = Some(0.5);
    f.rt.call(ops::SaveProviderForm { form }).unwrap();
    lf.max_task_seconds = 77;
    f.rt.call(ops::SaveLimitsForm { form: lf }).unwrap();

    std::env::remove_var("POCKETPILOT_MODEL");
    std::env::remove_var("POCKETPILOT_MAX_AGENT_STEPS");
    let p = ProviderSettings::stored(f.rt.store_for_tests()).unwrap();
    assert_eq!(p.model.as_deref(), Some("stored-model"));
    assert_eq!(p.temperature, Some(0.5));
    let l = Limits::stored(f.rt.store_for_tests()).unwrap();
    assert_eq!(
        LimitsForm::from(l),
        LimitsForm {
            max_task_seconds: 77,
            ..LimitsForm::from(limits)
        }
    );
    assert!(f.rt.call(ops::SettingOverrides {}).unwrap().is_empty());

    // A money budget from the environment: named beside its field, used by runs and in
    // today's spend, never saved by the money form.
    std::env::set_var("POCKETPILOT_MAX_DAY_USD", "4.5");
    let day =
        f.rt.call(ops::SettingOverrides {})
            .unwrap()
            .into_iter()
            .find(|o| o.field == SettingField::MaxDayUsd)
            .unwrap();
    assert_eq!(
        (day.variable.as_str(), day.value.as_str()),
        ("POCKETPILOT_MAX_DAY_USD", "4.5")
    );
    let money = f.rt.call(ops::GetMoneySettings {}).unwrap();
    assert_eq!(money.max_day_usd, None);
    assert_eq!(money.today.day_budget_usd, Some(4.5));
    f.rt.call(ops::SetMoneyBudgets {
        form: pocketpilot_protocol::MoneyBudgetsForm {
            task_usd: "1".into(),
            day_usd: String::new(),
            trigger_day_usd: String::new(),
        },
    })
    .unwrap();
    std::env::remove_var("POCKETPILOT_MAX_DAY_USD");
    let l = Limits::stored(f.rt.store_for_tests()).unwrap();
    assert_eq!((l.max_task_usd, l.max_day_usd), (Some(1.0), None));
}
