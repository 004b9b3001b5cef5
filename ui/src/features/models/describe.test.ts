import { describe, expect, it } from "vitest";
import { builtinName, describeProgress, describeServer, displayNameOf, percentOf, runModelOf } from "./describe";
import type { ModelRow } from "../../api/generated/bindings";

describe("a run's model", () => {
  it("is local when the provider label is local:", () => {
    expect(runModelOf("local:smollm2-135m-instruct")).toEqual({ model: "smollm2-135m-instruct", local: true });
  });
  it("is not local for another provider, whose model may hold a colon", () => {
    expect(runModelOf("openai:gpt-4o-mini")).toEqual({ model: "gpt-4o-mini", local: false });
    expect(runModelOf("ollama:qwen2.5:7b")).toEqual({ model: "qwen2.5:7b", local: false });
    expect(runModelOf("localhost:x")?.local).toBe(false);
  });
  it("is unknown without a label", () => {
    expect(runModelOf(null)).toBeNull();
    expect(runModelOf("local:")).toBeNull();
  });
});

describe("the built-in model's name", () => {
  it("adds the parameters unless the name says them", () => {
    expect(builtinName({ display_name: "SmolLM2", parameters: "135M" })).toBe("SmolLM2 135M");
    expect(builtinName({ display_name: "SmolLM2 135M Instruct", parameters: "135M" })).toBe("SmolLM2 135M Instruct");
    expect(builtinName({ display_name: "tiny", parameters: null })).toBe("tiny");
  });
  it("comes from the list when the model is kept", () => {
    const row: ModelRow = {
      name: "smol", display_name: "SmolLM2", size_mib: 98, parameters: "135M", quantization: "Q4_1",
      training_context: 8192, in_use: true, source: "bundled",
    };
    expect(displayNameOf("smol", [row])).toBe("SmolLM2 135M");
    expect(displayNameOf("other", [row])).toBe("other");
  });
});

describe("the server's state", () => {
  it("says each state in a sentence", () => {
    expect(describeServer({ state: "stopped" })).toMatch(/^Stopped/);
    expect(describeServer({ state: "starting", model: "smol" })).toBe("Starting smol…");
    expect(describeServer({ state: "ready", model: "smol", port: 41234, memory_mib: 310, context: 8192 })).toBe(
      "Ready: smol on port 41234, using 310 MiB of memory, 8,192-token context.",
    );
    expect(describeServer({ state: "crashed", model: "smol", reason: "exit status 1", log_tail: [] })).toBe(
      "smol stopped unexpectedly: exit status 1",
    );
  });
});

describe("a download's progress", () => {
  it("is a percentage when the size is known", () => {
    expect(percentOf({ done_mib: 49, total_mib: 98, rate_mib_s: 1, eta_secs: 49 })).toBe(50);
    expect(percentOf({ done_mib: 5, total_mib: null, rate_mib_s: 1, eta_secs: null })).toBeNull();
  });
  it("reads as figures", () => {
    expect(describeProgress({ done_mib: 12, total_mib: 98, rate_mib_s: 3.1, eta_secs: 28 })).toBe(
      "12 MiB of 98 MiB · 3.1 MiB/s · about 28 s left",
    );
    expect(describeProgress({ done_mib: 0.5, total_mib: null, rate_mib_s: 0, eta_secs: null })).toBe("0.5 MiB");
  });
});
