// Well-known OpenAI-compatible servers: choosing one fills the base URL (and leaves the
// model to the person, or to the picker that asks the server).
export interface Preset {
  id: string;
  label: string;
  baseUrl: string;
  /** Whether the service needs an API key. */
  needsKey: boolean;
}

export const PRESETS: Preset[] = [
  { id: "openai", label: "OpenAI", baseUrl: "https://api.openai.com/v1", needsKey: true },
  { id: "openrouter", label: "OpenRouter", baseUrl: "https://openrouter.ai/api/v1", needsKey: true },
  { id: "ollama", label: "Ollama", baseUrl: "http://127.0.0.1:11434/v1", needsKey: false },
  { id: "lmstudio", label: "LM Studio", baseUrl: "http://127.0.0.1:1234/v1", needsKey: false },
  { id: "llamacpp", label: "llama.cpp server", baseUrl: "http://127.0.0.1:8080/v1", needsKey: false },
  { id: "vllm", label: "vLLM", baseUrl: "http://127.0.0.1:8000/v1", needsKey: false },
];

/** The preset whose base URL this is, if any. */
export function presetOf(baseUrl: string | null): Preset | undefined {
  const u = (baseUrl ?? "").replace(/\/+$/, "");
  return PRESETS.find((p) => p.baseUrl === u);
}
