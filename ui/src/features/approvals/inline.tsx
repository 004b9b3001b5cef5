// A line of text the runtime wrote with `backticks` around names (tools, capabilities,
// paths): shown with those parts as code, never with literal backticks.
export function Inline({ text }: { text: string }) {
  const parts = text.split(/`([^`]+)`/);
  return (
    <>
      {parts.map((p, i) => (i % 2 === 1 ? <code key={i}>{p}</code> : p))}
    </>
  );
}
