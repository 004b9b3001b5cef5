// The markdown renderer (loaded lazily through markdown.ts): marked → DOMPurify (model
// output is untrusted) with highlight.js for fenced code. Only a few common languages are
// bundled to stay small.
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import diff from "highlight.js/lib/languages/diff";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import typescript from "highlight.js/lib/languages/typescript";
import { Marked } from "marked";

for (const [name, lang] of Object.entries({ bash, diff, javascript, json, python, rust, typescript })) {
  hljs.registerLanguage(name, lang);
}
hljs.registerAliases(["sh", "shell"], { languageName: "bash" });
hljs.registerAliases(["js"], { languageName: "javascript" });
hljs.registerAliases(["ts"], { languageName: "typescript" });
hljs.registerAliases(["rs"], { languageName: "rust" });
hljs.registerAliases(["py"], { languageName: "python" });

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    code({ text, lang }) {
      const language = (lang ?? "").split(/\s/)[0];
      const body = language && hljs.getLanguage(language)
        ? hljs.highlight(text, { language }).value
        : escapeHtml(text);
      // A header with the language and a copy button (lib/copy.ts handles its clicks).
      const label = language ? `<span class="code-lang">${escapeHtml(language)}</span>` : "<span></span>";
      return (
        `<div class="code-block"><div class="code-head">${label}` +
        `<button type="button" class="code-copy" data-testid="code-copy">Copy</button></div>` +
        `<pre class="code"><code class="hljs">${body}</code></pre></div>`
      );
    },
  },
});

export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false }) as string;
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
}

/**
 * Splits a growing answer into the leading blocks that later text cannot change and the
 * open block at its end. A block is final once another non-blank block follows it (a
 * trailing blank line may still continue a list), so the stable part is rendered once and
 * only the tail is rendered again as text arrives.
 */
export function splitStable(text: string): { stable: string; tail: string } {
  const tokens = marked.lexer(text);
  let last = tokens.length - 1;
  while (last >= 0 && tokens[last].type === "space") last--;
  let stable = "";
  for (let i = 0; i < last; i++) stable += tokens[i].raw;
  // The lexer normalises some input (line endings): commit only what matches verbatim.
  if (!text.startsWith(stable)) return { stable: "", tail: text };
  return { stable, tail: text.slice(stable.length) };
}
