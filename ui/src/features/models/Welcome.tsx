// The first screen when no provider is set up but this computer has the built-in model:
// start a conversation with it, or set up a server (those lead to the provider settings).
import { useEffect, useRef } from "preact/hooks";
import type { BuiltinModel } from "../../api/generated/bindings";
import { builtinName, sizeOf } from "./describe";
import "./models.css";

interface Props {
  builtin: BuiltinModel;
  onBuiltin: () => void;
  onProvider: () => void;
}

export function Welcome({ builtin, onBuiltin, onProvider }: Props) {
  const first = useRef<HTMLButtonElement>(null);
  useEffect(() => first.current?.focus(), []);
  const name = builtinName(builtin);
  return (
    <main class="session-view" data-testid="welcome-view" data-loaded="true">
      <header class="view-head">
        <h1>Welcome to PocketPilot</h1>
      </header>
      <div class="scroll welcome">
        <p id="welcome-ask">Which model should answer?</p>
        <div class="welcome-choices" role="group" aria-labelledby="welcome-ask">
          <button type="button" class="primary welcome-choice" ref={first} data-testid="choose-builtin" onClick={onBuiltin}>
            <strong data-testid="builtin-name">Built-in: {name}, runs on this computer</strong>
            <span class="muted">
              Nothing leaves this computer. {sizeOf(builtin.size_mib)}
              {builtin.training_context !== null ? `, ${builtin.training_context.toLocaleString("en-US")}-token context` : ""}.
              Small and quick to start; a larger model answers better.
            </span>
          </button>
          <button type="button" class="welcome-choice" data-testid="choose-local-server" onClick={onProvider}>
            <strong>Ollama or another local server</strong>
            <span class="muted">A model server you run yourself: Ollama, LM Studio, llama.cpp, vLLM.</span>
          </button>
          <button type="button" class="welcome-choice" data-testid="choose-openai-compatible" onClick={onProvider}>
            <strong>OpenAI-compatible server</strong>
            <span class="muted">OpenAI, OpenRouter or any service with an OpenAI-compatible API and a key.</span>
          </button>
        </div>
        <p class="muted">You can change this later in Settings.</p>
      </div>
    </main>
  );
}
