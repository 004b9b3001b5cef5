// Two small fields the window uses in several places: a search box that Esc clears, and a
// title field that Enter saves and Esc or leaving it abandons.
import type { Ref } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { errorMessage } from "../api/commands";

interface SearchProps {
  value: string;
  onValue: (v: string) => void;
  placeholder: string;
  label: string;
  testid: string;
  class?: string;
  inputRef?: Ref<HTMLInputElement>;
  keyshortcuts?: string;
}

/** A search box; Esc empties it (and only then lets Esc go on to close what it is in). */
export function SearchInput({ value, onValue, placeholder, label, testid, inputRef, keyshortcuts, ...rest }: SearchProps) {
  return (
    <input
      type="search"
      ref={inputRef}
      class={rest.class}
      placeholder={placeholder}
      aria-label={label}
      aria-keyshortcuts={keyshortcuts}
      data-testid={testid}
      value={value}
      onInput={(e) => onValue((e.target as HTMLInputElement).value)}
      onKeyDown={(e) => {
        if (e.key === "Escape" && value) {
          e.preventDefault();
          onValue("");
        }
      }}
    />
  );
}

interface TitleProps {
  initial: string;
  testid: string;
  /** Saves; a rejection is shown next to the field, which stays open. */
  save: (title: string) => Promise<unknown>;
  /** The field is done: saved, or abandoned with Esc or by leaving it. */
  done: (saved: boolean) => void;
}

export function TitleInput({ initial, testid, save, done }: TitleProps) {
  const [value, setValue] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.select(), []);
  const submit = async () => {
    try {
      await save(value);
      done(true);
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <>
      <input
        ref={input}
        class="title-input"
        data-testid={testid}
        aria-label="Session title"
        value={value}
        onInput={(e) => setValue((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter") {
            e.preventDefault();
            void submit();
          } else if (e.key === "Escape") {
            e.preventDefault();
            e.stopPropagation();
            done(false);
          }
        }}
        onBlur={() => done(false)}
      />
      {error && <span class="composer-blocked" role="alert">{error}</span>}
    </>
  );
}
