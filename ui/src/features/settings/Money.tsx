// Money (issue 19), beside the step/seconds/token limits: today's spend against the daily
// budgets, the money budgets (per task, per day, the daily cap for unattended runs) and
// the prices per model. Figures go to the runtime as typed; it checks them and answers
// with its own message when one is refused (nothing is saved then).
import { useEffect, useState } from "preact/hooks";
import { deletePrice, errorMessage, moneySettings, setMoneyBudgets, setPrice } from "../../api/commands";
import type { MoneyBudgetsForm, MoneySettings, PriceForm, SpendToday } from "../../api/generated/bindings";
import { usd } from "../../lib/format";
import { useChanges } from "../../store/useStore";
import { usePartLoaded } from "../../lib/loaded";
import { Overridden, StatusLine, useOverrides, type Status } from "./fields";

const EMPTY_PRICE: PriceForm = { model: "", input: "", output: "", cached: "" };

const text = (v: number | null) => (v === null ? "" : String(v));

function budgetsOf(m: MoneySettings): MoneyBudgetsForm {
  return { task_usd: text(m.max_task_usd), day_usd: text(m.max_day_usd), trigger_day_usd: text(m.max_trigger_day_usd) };
}

export function MoneySection() {
  const [money, setMoney] = useState<MoneySettings | null>(null);
  const [budgets, setBudgets] = useState<MoneyBudgetsForm | null>(null);
  const [error, setError] = useState<string | null>(null);
  const reload = async (resetForm: boolean) => {
    try {
      const m = await moneySettings();
      setMoney(m);
      if (resetForm) setBudgets(budgetsOf(m));
      setError(null);
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  useEffect(() => {
    void reload(true);
  }, []);
  usePartLoaded(money !== null || error !== null);
  // Today's spend moves when a run records a turn; a run's change of state says so.
  useChanges(
    (c) => {
      if (c.kind === "task" || c.kind === "refresh") void reload(false);
    },
    [],
  );
  return (
    <section class="card" data-testid="money-settings">
      <h2>Money: budgets and prices</h2>
      {error && <div class="notice error" role="alert">{error}</div>}
      {money && <Spend today={money.today} />}
      {budgets && <BudgetsForm budgets={budgets} onChange={setBudgets} onSaved={() => void reload(true)} />}
      {money && <Prices money={money} onSaved={() => void reload(false)} />}
    </section>
  );
}

function Spend({ today }: { today: SpendToday }) {
  // f64 reaches the window as `number | null` (serde writes a NaN as null).
  const against = (spent: number | null, budget: number | null, noun: string) =>
    budget === null ? `${usd(spent ?? 0)} (no ${noun})` : `${usd(spent ?? 0)} of the ${noun} of ${usd(budget)}`;
  const resets = new Date(today.resets_at).toISOString().slice(11, 16);
  return (
    <p class="muted" data-testid="spend-today" data-cost={today.cost_usd} data-unattended={today.unattended_cost_usd}>
      Today ({today.day}, UTC): <strong>{against(today.cost_usd, today.day_budget_usd, "daily budget")}</strong>
      {" · "}unattended runs: {against(today.unattended_cost_usd, today.trigger_day_budget_usd, "daily cap")}
      {today.unpriced_turns > 0 && ` · ${today.unpriced_turns} turns without a price`}
      {` · resets at ${resets} UTC`}
    </p>
  );
}

interface BudgetsProps {
  budgets: MoneyBudgetsForm;
  onChange: (b: MoneyBudgetsForm) => void;
  onSaved: () => void;
}

function BudgetsForm({ budgets, onChange, onSaved }: BudgetsProps) {
  const overrides = useOverrides();
  const [status, setStatus] = useState<Status>(null);
  const field = (name: keyof MoneyBudgetsForm) => (e: Event) =>
    onChange({ ...budgets, [name]: (e.target as HTMLInputElement).value });
  const save = async () => {
    setStatus(null);
    try {
      await setMoneyBudgets(budgets);
      setStatus({ tone: "ok", text: "Saved." });
      onSaved();
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };
  const input = (name: keyof MoneyBudgetsForm, testid: string) => (
    <input inputMode="decimal" placeholder="none" data-testid={testid} value={budgets[name]} onInput={field(name)} />
  );
  return (
    <>
      <div class="grid">
        <label class="field">
          Per task ($; empty: none)
          {input("task_usd", "budget-task-usd")}
          <Overridden field="max_task_usd" overrides={overrides} />
        </label>
        <label class="field">
          Per day, all runs ($)
          {input("day_usd", "budget-day-usd")}
          <Overridden field="max_day_usd" overrides={overrides} />
        </label>
        <label class="field">
          Per day, unattended runs ($)
          {input("trigger_day_usd", "budget-trigger-day-usd")}
          <Overridden field="max_trigger_day_usd" overrides={overrides} />
        </label>
      </div>
      <p class="muted">
        A run that reaches a budget pauses for you before its next model request. A scheduled, watched or webhook run
        parked by the unattended cap continues by itself when the cap resets the next UTC day.
      </p>
      <div class="row actions">
        <button type="button" class="primary" data-testid="save-budgets" onClick={() => void save()}>
          Save budgets
        </button>
      </div>
      <StatusLine status={status} testid="budgets-status" />
    </>
  );
}

function Prices({ money, onSaved }: { money: MoneySettings; onSaved: () => void }) {
  const [form, setForm] = useState<PriceForm>(EMPTY_PRICE);
  const [status, setStatus] = useState<Status>(null);
  const field = (name: keyof PriceForm) => (e: Event) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value });
  const save = async () => {
    setStatus(null);
    try {
      const saved = await setPrice(form);
      setForm(EMPTY_PRICE);
      setStatus({ tone: "ok", text: `Saved the prices of ${saved.model}.` });
      onSaved();
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };
  const remove = async (model: string) => {
    setStatus(null);
    try {
      await deletePrice(model);
      onSaved();
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };
  return (
    <>
      <h3>Prices, dollars per million tokens</h3>
      {money.prices.length === 0 ? (
        <p class="muted" data-testid="no-prices">
          No prices set: costs show as turns without a price.
        </p>
      ) : (
        <table class="policy" data-testid="prices-table">
          <thead>
            <tr>
              <th>Model</th>
              <th>Input</th>
              <th>Output</th>
              <th>Cached input</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {money.prices.map((p) => (
              <tr key={p.model} data-testid="price-row" data-model={p.model}>
                <td>
                  <code>{p.model}</code>
                </td>
                <td>${p.input_per_mtok}</td>
                <td>${p.output_per_mtok}</td>
                <td>{p.cached_input_per_mtok === null ? "as input" : `$${p.cached_input_per_mtok}`}</td>
                <td>
                  <button type="button" class="link" data-testid="delete-price" onClick={() => void remove(p.model)}>
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="grid" style={{ gridTemplateColumns: "2fr 1fr 1fr 1fr" }}>
        <label class="field">
          Model
          <input data-testid="price-model" placeholder="openai:gpt-4o-mini" value={form.model} onInput={field("model")} />
        </label>
        <label class="field">
          Input
          <input inputMode="decimal" data-testid="price-input" value={form.input} onInput={field("input")} />
        </label>
        <label class="field">
          Output
          <input inputMode="decimal" data-testid="price-output" value={form.output} onInput={field("output")} />
        </label>
        <label class="field">
          Cached input
          <input inputMode="decimal" placeholder="as input" data-testid="price-cached" value={form.cached} onInput={field("cached")} />
        </label>
      </div>
      <p class="muted">
        Model: a provider label (<code>openai:gpt-4o-mini</code>), a model name, <code>provider:*</code> or{" "}
        <code>*</code>; the most specific match wins. Cached input: prompt tokens the server reports as cached.
      </p>
      <div class="row actions">
        <button type="button" class="primary" data-testid="save-price" onClick={() => void save()}>
          Set price
        </button>
      </div>
      <StatusLine status={status} testid="price-status" />
    </>
  );
}
