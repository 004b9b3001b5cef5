//! Cutting text at a size cap, visibly.

/// `text` cut at `max` bytes (on a character boundary) with a marker naming `what` and its
/// full size; unchanged when it fits.
pub fn cut_at(text: &str, max: usize, what: &str) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… {what} cut here: it is {} bytes, the first {end} are shown]",
        &text[..end],
        text.len()
    )
}
