// The sidebar's "In messages" results: what the person typed found in every session's
// words, answers and tool output (newest first), each line opening its session there.
import { useEffect, useState } from "preact/hooks";
import { errorMessage, searchEntries } from "../../api/commands";
import type { SearchHit } from "../../api/generated/bindings";
import { hitHref, hitSource, searchable, snippetParts } from "./search";

/** How long typing must pause before the index is asked (one query per pause, not per key). */
const DEBOUNCE_MS = 120;
const LIMIT = 30;

export function SearchResults({ query }: { query: string }) {
  const [hits, setHits] = useState<SearchHit[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!searchable(query)) {
      setHits(null);
      return;
    }
    let live = true;
    const timer = setTimeout(() => {
      searchEntries(query, null, LIMIT)
        .then((h) => {
          if (!live) return;
          setHits(h);
          setError(null);
        })
        .catch((e) => live && setError(errorMessage(e)));
    }, DEBOUNCE_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [query]);
  if (!searchable(query)) return null;
  return (
    <section class="search-results" aria-label="Found in messages" data-testid="search-results" aria-live="polite">
      <h2>In messages</h2>
      {error && <p class="notice error">{error}</p>}
      {hits !== null && hits.length === 0 && <p class="muted" data-testid="search-empty">No message matches.</p>}
      <ul>
        {hits?.map((h) => (
          <li key={h.entry_id}>
            <a
              href={hitHref(h)}
              class="search-hit"
              data-testid="search-hit"
              data-session-id={h.session_id}
              data-entry-id={h.entry_id}
            >
              <span class="session-title">{h.session_title}</span>
              <span class="search-snippet">
                <span class="muted">{hitSource(h)}: </span>
                {snippetParts(h.snippet).map((p, i) => (p.mark ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))}
              </span>
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}
