//! A new session's title. It starts as the first line of the person's first message
//! ([`from_goal`]); after the first answer, the model may name it in a few words
//! (`SessionTitles`): one small request, no tools, a few tokens, made in the background
//! once the run has ended so that nothing waits for it. The model's title replaces the
//! first one only while the session still has it: a title the person gave is never
//! overwritten, and no column records where a title came from.
//!
//! Only sessions a person started in the window are named this way. A CLI run, an eval or
//! a trigger leaves its title as it is: those processes may end with the run, and their
//! sessions are named by what started them.
use std::sync::Arc;
use std::time::Duration;

use pocketpilot_local::server::BusyGuard;
use pocketpilot_model::{Message, OpenAiProvider, Provider, ProviderError};
use pocketpilot_protocol::{RunSource, SessionTitles};
use tokio_util::task::TaskTracker;

use crate::config::ProviderSettings;
use crate::engine::feed::{Change, Feed};
use crate::engine::provider;
use crate::engine::scheduler::RunRegistry;
use crate::policy::cost::Prices;
use crate::store::{sessions, settings, tasks, Store, StoreError};

/// The settings key of [`SessionTitles`].
pub const SESSION_TITLES_KEY: &str = "session_titles";

/// How long a title may take: a slow local model on two cores answers a few tokens well
/// within it; a title that comes later is not worth the wait.
const TITLE_TIMEOUT: Duration = Duration::from_secs(90);
/// What the model may write: a title is a few words.
const TITLE_MAX_TOKENS: u32 = 24;
/// How much of the first message and the answer the model is shown.
const EXCERPT_CHARS: usize = 1_200;
/// A title's length in the sessions list.
const TITLE_CHARS: usize = 60;

const INSTRUCTION: &str = "Write a title for this conversation: 2 to 6 words, in the \
language of the request. Reply with the title only, without quotes and without a full stop.";

/// A session's first title: the first line of its first message, cut to fit the list.
pub fn from_goal(goal: &str) -> String {
    let line = goal.lines().next().unwrap_or(goal);
    cut(line)
}

fn cut(text: &str) -> String {
    let mut title: String = text.chars().take(TITLE_CHARS).collect();
    if text.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    title
}

/// The setting as stored (the default when never set).
pub fn load_setting(c: &rusqlite::Connection) -> Result<SessionTitles, StoreError> {
    Ok(settings::get(c, SESSION_TITLES_KEY)?.unwrap_or_default())
}

/// The title jobs of this process and where their changes are announced.
pub struct Titles {
    jobs: TaskTracker,
    feed: Feed,
}

impl Titles {
    pub fn new(feed: Feed) -> Self {
        Self {
            jobs: TaskTracker::new(),
            feed,
        }
    }

    /// Waits until no title job is running (tests and a closing host).
    pub async fn settled(&self) {
        self.jobs.close();
        self.jobs.wait().await;
        self.jobs.reopen();
    }
}

/// What a finished run hands over for its session's title.
pub struct Answered<'a> {
    pub task: &'a tasks::Task,
    pub answer: &'a str,
    pub settings: &'a ProviderSettings,
    /// The provider's label, as prices are set for it.
    pub label: String,
}

/// Starts the title request for `done`'s session when it is wanted (see the module
/// comment and [`wanted`]); `busy` keeps the built-in model's server up until it is done.
pub(crate) fn after_answer(
    titles: &Titles,
    store: &Arc<Store>,
    runs: &Arc<RunRegistry>,
    done: Answered<'_>,
    busy: Option<BusyGuard>,
) {
    let first_title = match wanted(store, &done) {
        Ok(Some(t)) => t,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "no title for the session: its settings could not be read");
            return;
        }
    };
    let provider = match title_provider(done.settings) {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!(error = %e, "no title for the session");
            return;
        }
    };
    let job = Job {
        store: store.clone(),
        runs: runs.clone(),
        feed: titles.feed.clone(),
        session_id: done.task.session_id,
        task_id: done.task.id,
        first_title,
        prompt: prompt(&done.task.goal, done.answer),
    };
    titles.jobs.spawn(async move {
        job.run(provider).await;
        drop(busy);
    });
}

/// The session's first title when the model should name it now: a session started in the
/// window, on its first task, still titled by its first message, with the setting allowing
/// it for this model.
fn wanted(store: &Store, done: &Answered<'_>) -> Result<Option<String>, StoreError> {
    if done.task.trigger != RunSource::Chat || done.answer.trim().is_empty() {
        return Ok(None);
    }
    store.read(|c| {
        let allowed = match load_setting(c)? {
            SessionTitles::Off => false,
            SessionTitles::Always => true,
            SessionTitles::FreeModels => is_free(done.settings, &Prices::load(c)?, &done.label),
        };
        if !allowed {
            return Ok(None);
        }
        let session = sessions::get(c, done.task.session_id)?;
        let first = tasks::list_for_session(c, session.id)?
            .into_iter()
            .min_by_key(|t| t.id);
        let Some(first) = first.filter(|t| t.id == done.task.id) else {
            return Ok(None);
        };
        let title = from_goal(&first.goal);
        Ok((session.title == title).then_some(title))
    })
}

/// Whether asking this model costs nothing: a price set for it says so (zero or not);
/// without one, the built-in model and a server on this computer are free, and any other
/// server is taken to charge.
pub fn is_free(settings: &ProviderSettings, prices: &Prices, label: &str) -> bool {
    if let Some(p) = prices.find(label) {
        return p.input_per_mtok == 0.0 && p.output_per_mtok == 0.0;
    }
    settings.api_key_override.is_some()
        || settings
            .base_url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .is_some_and(|u| is_this_computer(&u))
}

fn is_this_computer(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The run's model, asked for a few words in one answer, not streamed.
fn title_provider(settings: &ProviderSettings) -> Result<Arc<dyn Provider>, String> {
    let mut config = provider::openai_config(settings).map_err(|e| e.to_string())?;
    config.max_tokens = Some(TITLE_MAX_TOKENS);
    config.stream = false;
    let p = OpenAiProvider::new(config).map_err(|e| e.to_string())?;
    Ok(Arc::new(p))
}

fn prompt(goal: &str, answer: &str) -> Vec<Message> {
    let excerpt = |t: &str| -> String { t.trim().chars().take(EXCERPT_CHARS).collect() };
    vec![
        Message::system(INSTRUCTION),
        Message::user(format!(
            "Request:\n{}\n\nAnswer:\n{}",
            excerpt(goal),
            excerpt(answer)
        )),
    ]
}

struct Job {
    store: Arc<Store>,
    runs: Arc<RunRegistry>,
    feed: Feed,
    session_id: i64,
    task_id: i64,
    first_title: String,
    prompt: Vec<Message>,
}

impl Job {
    async fn run(mut self, provider: Arc<dyn Provider>) {
        // One model server is often all there is (the built-in model): a run that started
        // meanwhile comes first, and the session keeps its first title.
        if self.runs.any_other_than(self.task_id) {
            tracing::debug!(
                session_id = self.session_id,
                "no title: another run is active"
            );
            return;
        }
        let prompt = std::mem::take(&mut self.prompt);
        let asked = tokio::time::timeout(TITLE_TIMEOUT, provider.complete(prompt, vec![]));
        let text = match asked.await {
            Ok(Ok(r)) => r.text,
            Ok(Err(e)) => return self.not_named(&e),
            Err(_) => {
                return self.not_named(&ProviderError::Timeout(format!(
                    "no title within {} s",
                    TITLE_TIMEOUT.as_secs()
                )))
            }
        };
        let Some(title) = clean(&text) else {
            tracing::debug!(session_id = self.session_id, answer = %text, "no title: the answer holds none");
            return;
        };
        match self
            .store
            .write(|tx| sessions::replace_title(tx, self.session_id, &self.first_title, &title))
        {
            Ok(true) => self.feed.announce(Change::Refresh),
            Ok(false) => {
                tracing::debug!(
                    session_id = self.session_id,
                    "the session was renamed meanwhile"
                )
            }
            Err(e) => {
                tracing::warn!(session_id = self.session_id, error = %e, "the title was not saved")
            }
        }
    }

    fn not_named(&self, e: &ProviderError) {
        tracing::info!(session_id = self.session_id, error = %e, "the model gave no title");
    }
}

/// A title out of what the model wrote: its first line, without a reasoning block, a
/// "Title:" label, markdown, quotes or a closing full stop, cut to fit the list; `None`
/// when nothing readable is left.
pub fn clean(text: &str) -> Option<String> {
    let text = match text.rfind("</think>") {
        Some(end) => &text[end + "</think>".len()..],
        None => text,
    };
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = strip_label(line);
    let decoration = |c: char| "\"'`*_#“”‘’«»".contains(c) || c.is_whitespace();
    let line = line.trim_matches(decoration);
    let line = line.trim_end_matches(['.', ',', ';', ':', '。']);
    let line = line.trim_matches(decoration);
    let words: Vec<&str> = line.split_whitespace().collect();
    if !words.iter().any(|w| w.chars().any(char::is_alphanumeric)) {
        return None;
    }
    Some(cut(&words.join(" ")))
}

fn strip_label(line: &str) -> &str {
    let bare = line.trim_start_matches(['*', '#', ' ']);
    match bare.split_once(':') {
        Some((label, rest)) if label.trim_matches(['*', ' ']).eq_ignore_ascii_case("title") => rest,
        _ => line,
    }
}

#[cfg(test)]
#[path = "title_tests.rs"]
mod tests;
