import type { Item } from "../stream/items";
import type { TaskView } from "./useSession";
import { ToolCard } from "./ToolCard";
import { hrefOf } from "../../lib/route";
import { renderMarkdown } from "../../lib/markdown";

function ItemView({ item }: { item: Item }) {
  switch (item.kind) {
    case "user":
      return <div class="msg user" data-testid="user-message">{item.text}</div>;
    case "assistant":
      return (
        <div
          class="msg assistant markdown"
          data-testid="assistant-message"
          // Sanitised by DOMPurify in renderMarkdown.
          dangerouslySetInnerHTML={{ __html: renderMarkdown(item.text) }}
        />
      );
    case "tool":
      return <ToolCard item={item} />;
    case "notice":
      return <div class={`notice ${item.tone}`} data-testid="notice">{item.text}</div>;
  }
}

export function Transcript({ views }: { views: TaskView[] }) {
  return (
    <div class="transcript" data-testid="transcript">
      {views.map((v) => (
        <section class="task" key={v.task.id} data-testid="task" data-task-id={v.task.id} data-status={v.task.status}>
          {v.items.map((item) => (
            <ItemView item={item} key={item.key} />
          ))}
          {/* Plain text while streaming: cheap per delta; the completed turn renders markdown. */}
          {v.streaming !== null && (
            <div class="msg assistant streaming" data-testid="streaming-message">
              {v.streaming}
              <span class="cursor" aria-hidden="true" />
            </div>
          )}
          <div class="task-foot muted">
            <span data-testid="task-status">{v.task.status.replace("_", " ")}</span>
            {" · "}
            <a href={hrefOf({ name: "task", id: v.task.id })} data-testid="task-details-link">
              details
            </a>
          </div>
        </section>
      ))}
    </div>
  );
}
