//! What came from outside the person's own words (files, tool results, fetched pages,
//! MCP output, instructions, memories) reaches the model inside markers the system text
//! tells it never to obey.
pub const UNTRUSTED_OPEN: &str = "<untrusted-data>";
pub const UNTRUSTED_CLOSE: &str = "</untrusted-data>";

/// Marks content that came from outside the person's own words. A closing marker inside the
/// content is defused so the data cannot end its own quarantine.
pub fn wrap_untrusted(source: &str, text: &str) -> String {
    let safe = text.replace(UNTRUSTED_CLOSE, "</untrusted-data\u{200b}>");
    format!("{UNTRUSTED_OPEN}\nsource: {source}\n{safe}\n{UNTRUSTED_CLOSE}")
}
