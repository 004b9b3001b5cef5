// What a message's actions can do with the session's composer: put text in it to edit
// (edit and send again), or send text now (regenerate). The session view provides it.
import { createContext } from "preact";

export interface ComposerActions {
  put: (text: string) => void;
  send: (text: string) => Promise<void>;
}

export const ComposerContext = createContext<ComposerActions | null>(null);
