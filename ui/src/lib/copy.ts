// The copy buttons of rendered code blocks (lib/markdown-render.ts writes them as plain
// HTML, so one listener on the document serves every block, streamed or not).
export async function writeClipboard(text: string): Promise<void> {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return;
    } catch {
      // Not allowed here: fall back to a selection copy.
    }
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("copy refused");
}

export function installCodeCopy(): void {
  document.addEventListener("click", (e) => {
    const button = (e.target as HTMLElement | null)?.closest?.(".code-copy");
    if (!(button instanceof HTMLButtonElement)) return;
    const code = button.closest(".code-block")?.querySelector("code")?.textContent ?? "";
    writeClipboard(code).then(
      () => flash(button, "Copied"),
      () => flash(button, "Copy failed"),
    );
  });
}

function flash(button: HTMLButtonElement, text: string) {
  button.textContent = text;
  button.dataset.state = text === "Copied" ? "copied" : "failed";
  setTimeout(() => {
    button.textContent = "Copy";
    delete button.dataset.state;
  }, 1500);
}
