//! Versioned migrations, applied at open inside one transaction each. The version lives in
//! `PRAGMA user_version`; a database from a newer PocketPilot is refused, never touched.

pub const MIGRATIONS: &[&str] = &[
    // 1: the core tables.
    r#"
CREATE TABLE sessions (
    id              INTEGER PRIMARY KEY,
    title           TEXT NOT NULL,
    workspace       TEXT NOT NULL,
    steering_mode   TEXT NOT NULL DEFAULT 'one-at-a-time',
    follow_up_mode  TEXT NOT NULL DEFAULT 'one-at-a-time',
    last_failure    TEXT,
    grants          TEXT NOT NULL DEFAULT '[]',
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE TABLE tasks (
    id                INTEGER PRIMARY KEY,
    session_id        INTEGER NOT NULL REFERENCES sessions(id),
    goal              TEXT NOT NULL,
    trigger           TEXT NOT NULL,
    provider          TEXT,
    follow_up_of      INTEGER REFERENCES tasks(id),
    status            TEXT NOT NULL CHECK (status IN ('queued','running','waiting_approval','completed','failed','cancelled','budget_exceeded')),
    step_count        INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    active_ms         INTEGER NOT NULL DEFAULT 0,
    grants            TEXT NOT NULL DEFAULT '[]',
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    mcp               TEXT NOT NULL DEFAULT '["*"]',
    final_answer      TEXT,
    error             TEXT,
    created_at        TEXT NOT NULL,
    started_at        TEXT,
    finished_at       TEXT
);
CREATE INDEX tasks_session ON tasks(session_id, id);
CREATE INDEX tasks_status ON tasks(status);
CREATE TABLE task_events (
    task_id   INTEGER NOT NULL REFERENCES tasks(id),
    sequence  INTEGER NOT NULL,
    type      TEXT NOT NULL,
    payload   TEXT NOT NULL,
    at        TEXT NOT NULL,
    PRIMARY KEY (task_id, sequence)
) WITHOUT ROWID;
CREATE TABLE entries (
    id          INTEGER PRIMARY KEY,
    session_id  INTEGER NOT NULL REFERENCES sessions(id),
    task_id     INTEGER REFERENCES tasks(id),
    kind        TEXT NOT NULL,
    content     TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX entries_session ON entries(session_id, id);
CREATE TABLE submissions (
    id          INTEGER PRIMARY KEY,
    session_id  INTEGER NOT NULL REFERENCES sessions(id),
    kind        TEXT NOT NULL,
    mode        TEXT,
    status      TEXT NOT NULL CHECK (status IN ('queued','placed','done','unanswered')),
    reason      TEXT,
    request_id  TEXT,
    content     TEXT NOT NULL,
    position    INTEGER,
    task_id     INTEGER REFERENCES tasks(id),
    entry_id    INTEGER REFERENCES entries(id),
    answer_id   INTEGER REFERENCES entries(id),
    created_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX submissions_request ON submissions(session_id, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX submissions_status ON submissions(session_id, status, id);
CREATE TABLE tool_calls (
    task_id      INTEGER NOT NULL REFERENCES tasks(id),
    call_id      TEXT NOT NULL,
    step         INTEGER NOT NULL,
    name         TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    capability   TEXT,
    replay_safe  INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('intent','running','done','interrupted')),
    output       TEXT,
    is_error     INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    finished_at  TEXT,
    PRIMARY KEY (task_id, call_id)
);
CREATE TABLE approvals (
    id             INTEGER PRIMARY KEY,
    task_id        INTEGER NOT NULL REFERENCES tasks(id),
    call_id        TEXT NOT NULL,
    tool           TEXT NOT NULL,
    capability     TEXT,
    arguments      TEXT NOT NULL,
    effect         TEXT NOT NULL,
    reason         TEXT NOT NULL,
    step           INTEGER NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('pending','approved','rejected')),
    decision_note  TEXT,
    edited_args    TEXT,
    session_grant  INTEGER NOT NULL DEFAULT 0,
    resolved_by    TEXT,
    created_at     TEXT NOT NULL,
    resolved_at    TEXT
);
CREATE INDEX approvals_pending ON approvals(status, id);
CREATE TABLE session_leases (
    session_id  INTEGER PRIMARY KEY REFERENCES sessions(id),
    holder      TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE TABLE settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
"#,
    // Triggers (src/trigger): webhooks (token stored as a SHA-256 hex digest, never the
    // token), cron schedules, file watches, and the record of every fire or skip.
    r#"
CREATE TABLE webhooks (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    workspace      TEXT NOT NULL,
    token_sha256   TEXT NOT NULL,
    provider       TEXT,
    paused         INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    last_fired_at  TEXT
);
CREATE TABLE schedules (
    id             INTEGER PRIMARY KEY,
    expr           TEXT NOT NULL,
    workspace      TEXT NOT NULL,
    goal           TEXT NOT NULL,
    provider       TEXT,
    catch_up       INTEGER NOT NULL DEFAULT 0,
    paused         INTEGER NOT NULL DEFAULT 0,
    last_fired_at  TEXT,
    last_task_id   INTEGER REFERENCES tasks(id),
    created_at     TEXT NOT NULL
);
CREATE TABLE watches (
    id                INTEGER PRIMARY KEY,
    pattern           TEXT NOT NULL,
    workspace         TEXT NOT NULL,
    goal              TEXT NOT NULL,
    provider          TEXT,
    min_interval_secs INTEGER NOT NULL DEFAULT 30,
    paused            INTEGER NOT NULL DEFAULT 0,
    last_fired_at     TEXT,
    last_task_id      INTEGER REFERENCES tasks(id),
    created_at        TEXT NOT NULL
);
CREATE TABLE trigger_runs (
    id             INTEGER PRIMARY KEY,
    kind           TEXT NOT NULL CHECK (kind IN ('webhook','cron','watch')),
    trigger_id     INTEGER NOT NULL,
    outcome        TEXT NOT NULL CHECK (outcome IN ('fired','skipped')),
    task_id        INTEGER REFERENCES tasks(id),
    reason         TEXT,
    scheduled_for  TEXT,
    at             TEXT NOT NULL
);
CREATE INDEX trigger_runs_of ON trigger_runs(kind, trigger_id, id);
"#,
    // 2: a task's entries by task, for opening long sessions at their last tasks.
    r#"
CREATE INDEX entries_task ON entries(task_id, id);
"#,
    // 3: a session's open task by index, whatever the number of tasks it has ended
    // (admission reads it for every submission). Keep the list equal to
    // `tasks::OPEN_STATUSES_SQL`.
    r#"
CREATE INDEX tasks_open ON tasks(session_id, id) WHERE status IN ('queued','running','waiting_approval');
"#,
    // 4: the context budget's figures per model request (issue 13): what the runtime
    // estimated and what the server counted, with the window it planned against.
    r#"
CREATE TABLE context_turns (
    id             INTEGER PRIMARY KEY,
    session_id     INTEGER NOT NULL REFERENCES sessions(id),
    task_id        INTEGER NOT NULL REFERENCES tasks(id),
    window         INTEGER NOT NULL,
    window_source  TEXT NOT NULL,
    budget         INTEGER NOT NULL,
    estimate       INTEGER NOT NULL,
    prompt_tokens  INTEGER,
    messages       INTEGER NOT NULL,
    at             TEXT NOT NULL
);
CREATE INDEX context_turns_session ON context_turns(session_id, id);
CREATE INDEX entries_kind ON entries(session_id, kind, id);
"#,
    // 5: durable memories (issue 18): global (workspace NULL) or for one workspace; never
    // in the workspace itself.
    r#"
CREATE TABLE memories (
    id          INTEGER PRIMARY KEY,
    scope       TEXT NOT NULL CHECK (scope IN ('global','workspace')),
    workspace   TEXT,
    text        TEXT NOT NULL,
    task_id     INTEGER REFERENCES tasks(id),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    CHECK ((scope = 'global') = (workspace IS NULL))
);
CREATE INDEX memories_workspace ON memories(workspace, id);
"#,
    // A call id the model repeats in a later turn is a new call (issue 15): the journal
    // is keyed by task (the run), step and call id, and approvals are found the same way.
    r#"
CREATE TABLE tool_calls_by_step (
    task_id      INTEGER NOT NULL REFERENCES tasks(id),
    call_id      TEXT NOT NULL,
    step         INTEGER NOT NULL,
    name         TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    capability   TEXT,
    replay_safe  INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('intent','running','done','interrupted')),
    output       TEXT,
    is_error     INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    finished_at  TEXT,
    PRIMARY KEY (task_id, step, call_id)
);
INSERT INTO tool_calls_by_step SELECT task_id, call_id, step, name, arguments, capability,
    replay_safe, status, output, is_error, created_at, finished_at FROM tool_calls;
DROP TABLE tool_calls;
ALTER TABLE tool_calls_by_step RENAME TO tool_calls;
CREATE INDEX approvals_call ON approvals(task_id, step, call_id, id);
"#,
    // Issue 19: the `paused` status (the tasks table is rebuilt: SQLite cannot change a
    // CHECK), the budget a person added to a task when continuing it, why it paused, and
    // the recorded cost of every model turn, keyed by its `model_turn_completed` event so a
    // turn is counted once. Keep `tasks_open` equal to `tasks::OPEN_STATUSES_SQL`.
    r#"
CREATE TABLE tasks_new (
    id                INTEGER PRIMARY KEY,
    session_id        INTEGER NOT NULL REFERENCES sessions(id),
    goal              TEXT NOT NULL,
    trigger           TEXT NOT NULL,
    provider          TEXT,
    follow_up_of      INTEGER REFERENCES tasks(id),
    status            TEXT NOT NULL CHECK (status IN ('queued','running','waiting_approval','completed','failed','cancelled','budget_exceeded','paused')),
    step_count        INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    active_ms         INTEGER NOT NULL DEFAULT 0,
    grants            TEXT NOT NULL DEFAULT '[]',
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    mcp               TEXT NOT NULL DEFAULT '["*"]',
    final_answer      TEXT,
    error             TEXT,
    created_at        TEXT NOT NULL,
    started_at        TEXT,
    finished_at       TEXT,
    extra_steps       INTEGER NOT NULL DEFAULT 0,
    extra_seconds     INTEGER NOT NULL DEFAULT 0,
    extra_tokens      INTEGER NOT NULL DEFAULT 0,
    extra_usd         REAL NOT NULL DEFAULT 0,
    pause_reason      TEXT,
    pause_budget      TEXT,
    pause_message     TEXT
);
INSERT INTO tasks_new (id, session_id, goal, trigger, provider, follow_up_of, status, step_count,
    prompt_tokens, completion_tokens, active_ms, grants, cancel_requested, mcp, final_answer,
    error, created_at, started_at, finished_at)
SELECT id, session_id, goal, trigger, provider, follow_up_of, status, step_count,
    prompt_tokens, completion_tokens, active_ms, grants, cancel_requested, mcp, final_answer,
    error, created_at, started_at, finished_at FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;
CREATE INDEX tasks_session ON tasks(session_id, id);
CREATE INDEX tasks_status ON tasks(status);
CREATE INDEX tasks_open ON tasks(session_id, id) WHERE status IN ('queued','running','waiting_approval','paused');
CREATE TABLE turn_costs (
    task_id               INTEGER NOT NULL REFERENCES tasks(id),
    sequence              INTEGER NOT NULL,
    session_id            INTEGER NOT NULL REFERENCES sessions(id),
    step                  INTEGER NOT NULL,
    trigger               TEXT NOT NULL,
    model                 TEXT,
    prompt_tokens         INTEGER NOT NULL,
    cached_prompt_tokens  INTEGER NOT NULL,
    completion_tokens     INTEGER NOT NULL,
    cost_usd              REAL,
    at                    TEXT NOT NULL,
    PRIMARY KEY (task_id, sequence)
) WITHOUT ROWID;
CREATE INDEX turn_costs_at ON turn_costs(at);
CREATE INDEX turn_costs_session ON turn_costs(session_id);
"#,
    // 5: the change journal (issue 16): per tool call, the prior state kept before the
    // effect (`pending`, with the pre-scan's index blob) and the changes found after it
    // (`recorded`); undos and redos are change sets too. Contents live in `<data>/blobs`.
    r#"
CREATE TABLE change_sets (
    id          INTEGER PRIMARY KEY,
    session_id  INTEGER NOT NULL REFERENCES sessions(id),
    task_id     INTEGER NOT NULL REFERENCES tasks(id),
    call_id     TEXT,
    kind        TEXT NOT NULL CHECK (kind IN ('call','undo','redo')),
    status      TEXT NOT NULL CHECK (status IN ('pending','recorded','applying','applied','pruned')),
    workspace   TEXT NOT NULL,
    scope       TEXT NOT NULL,
    pre_index   TEXT,
    changes     TEXT NOT NULL DEFAULT '[]',
    reverts     TEXT NOT NULL DEFAULT '[]',
    undone_by   INTEGER REFERENCES change_sets(id),
    bytes       INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL
);
CREATE INDEX change_sets_task ON change_sets(task_id, id);
CREATE INDEX change_sets_session ON change_sets(session_id, id);
CREATE INDEX change_sets_call ON change_sets(task_id, call_id) WHERE kind = 'call';
"#,
    // A pause that lifts by itself (issue 19): a run parked by the daily cap for
    // unattended runs continues when the cap resets, at this time (UTC, as stamped).
    r#"
ALTER TABLE tasks ADD COLUMN pause_resumes_at TEXT;
CREATE INDEX tasks_parked_until ON tasks(pause_resumes_at) WHERE pause_resumes_at IS NOT NULL;
"#,
    // The processes a session's run started (a command's or an MCP server's sandbox
    // supervisor, the root of its tree), known by pid, start time and boot, so that a
    // worker taking the session over kills them before it continues, and never a process
    // that merely reuses the pid. No foreign keys: a row outlives nothing it names.
    r#"
CREATE TABLE run_processes (
    session_id  INTEGER NOT NULL,
    task_id     INTEGER NOT NULL,
    pid         INTEGER NOT NULL,
    started     INTEGER NOT NULL,
    boot_id     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (session_id, pid, started)
) WITHOUT ROWID;
"#,
    // Command rules: a program and an argument pattern (`cargo test *`) that lets a
    // command run without asking (allow) or refuses it (deny), for a workspace, or for one
    // session of it (`session_id` set: "for this session" on a command approval).
    r#"
CREATE TABLE command_rules (
    id          INTEGER PRIMARY KEY,
    workspace   TEXT NOT NULL,
    session_id  INTEGER REFERENCES sessions(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('allow','deny')),
    rule        TEXT NOT NULL,
    origin      TEXT NOT NULL CHECK (origin IN ('person','session','plan')),
    created_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX command_rules_unique
    ON command_rules(workspace, IFNULL(session_id, 0), kind, rule);
CREATE INDEX command_rules_session ON command_rules(session_id) WHERE session_id IS NOT NULL;
"#,
    // Full-text search over what was said and done: the person's words, the answers and
    // tool output (each entry's `text`). The index holds no copy: snippets are read from
    // `entry_text`, a view over `entries`. Triggers keep it in the entry's own transaction
    // (entries are only ever inserted or deleted); the rebuild indexes the rows already there.
    // 2- and 3-letter prefixes are indexed too: a word being typed reads one list.
    r#"
CREATE VIEW entry_text AS
    SELECT id, json_extract(content, '$.text') AS text FROM entries
    WHERE kind IN ('user', 'assistant', 'tool_result') AND json_valid(content);
CREATE VIRTUAL TABLE entry_search USING fts5(
    text, content = 'entry_text', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
);
CREATE TRIGGER entry_search_insert AFTER INSERT ON entries
    WHEN new.kind IN ('user', 'assistant', 'tool_result') AND json_valid(new.content)
        AND json_type(new.content, '$.text') = 'text'
BEGIN
    INSERT INTO entry_search(rowid, text) VALUES (new.id, json_extract(new.content, '$.text'));
END;
CREATE TRIGGER entry_search_delete AFTER DELETE ON entries
    WHEN old.kind IN ('user', 'assistant', 'tool_result') AND json_valid(old.content)
        AND json_type(old.content, '$.text') = 'text'
BEGIN
    INSERT INTO entry_search(entry_search, rowid, text)
        VALUES ('delete', old.id, json_extract(old.content, '$.text'));
END;
INSERT INTO entry_search(entry_search) VALUES ('rebuild');
"#,
    // Plan mode: a task (or every task of a session) that only reads and ends with a
    // plan; the plan, what the person decided, the steps marked done, and the task that
    // carries it out (its grants come from the plan's files and commands).
    r#"
ALTER TABLE tasks ADD COLUMN plan_mode INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN plan_mode INTEGER NOT NULL DEFAULT 0;
CREATE TABLE plans (
    id          INTEGER PRIMARY KEY,
    session_id  INTEGER NOT NULL REFERENCES sessions(id),
    task_id     INTEGER NOT NULL UNIQUE REFERENCES tasks(id),
    status      TEXT NOT NULL CHECK (status IN ('proposed','approved','rejected')),
    source      TEXT NOT NULL CHECK (source IN ('tool','answer')),
    content     TEXT NOT NULL,
    done        TEXT NOT NULL DEFAULT '[]',
    edited      INTEGER NOT NULL DEFAULT 0,
    run_task_id INTEGER REFERENCES tasks(id),
    created_at  TEXT NOT NULL,
    decided_at  TEXT
);
CREATE INDEX plans_session ON plans(session_id, id);
CREATE UNIQUE INDEX plans_run_task ON plans(run_task_id) WHERE run_task_id IS NOT NULL;
"#,
    // Rewind: going back to before one of the person's messages. The entries after it stay
    // (history, exports, search) but carry the rewind that set them aside, and the model
    // never sees them again; the rewind itself is an undo change set that names the entry
    // it went back to, so `redo` brings back the conversation with the files. No foreign
    // keys: deleting a session removes both sides in one transaction, in any order.
    r#"
ALTER TABLE entries ADD COLUMN rewound_by INTEGER;
ALTER TABLE change_sets ADD COLUMN rewind_to INTEGER;
CREATE INDEX entries_rewound ON entries(rewound_by) WHERE rewound_by IS NOT NULL;
"#,
];

/// Two migrations were edited after builds with the first form had shipped, so a store of
/// the same version can have either shape. Before later migrations run on such a store,
/// it is given what the edit added:
/// - migration 1 gained `tasks.mcp` and `session_leases` (stores from the first builds
///   lack both, or the column only; migration 8 rebuilds `tasks` from `tasks.mcp`);
/// - migration 9 first made `change_sets_call` UNIQUE, then a plain index (a call id that
///   comes back in a later turn needs a change set of its own).
///
/// Runs inside the migration's transaction, so it commits or rolls back with them.
pub(crate) fn repair_edited_migrations(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let has_mcp: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('tasks') WHERE name = 'mcp')",
        [],
        |r| r.get(0),
    )?;
    if !has_mcp {
        tx.execute_batch(r#"ALTER TABLE tasks ADD COLUMN mcp TEXT NOT NULL DEFAULT '["*"]';"#)?;
    }
    let has_leases: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_leases')",
        [],
        |r| r.get(0),
    )?;
    if !has_leases {
        // Written as migration 1 writes it: the schema's text is compared with a new store's.
        tx.execute_batch(
            "CREATE TABLE session_leases (
    session_id  INTEGER PRIMARY KEY REFERENCES sessions(id),
    holder      TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);",
        )?;
    }
    let unique_call_index: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_index_list('change_sets')
                        WHERE name = 'change_sets_call' AND \"unique\" = 1)",
        [],
        |r| r.get(0),
    )?;
    if unique_call_index {
        tx.execute_batch(
            "DROP INDEX change_sets_call;
             CREATE INDEX change_sets_call ON change_sets(task_id, call_id) WHERE kind = 'call';",
        )?;
    }
    Ok(())
}
