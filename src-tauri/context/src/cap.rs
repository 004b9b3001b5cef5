//! Cutting a long text to a number of tokens: its head and its tail, with a marker in
//! the middle saying how much was cut (the start of an output says what it is, its end
//! how it ended: both matter more than the middle).
use crate::estimate::Estimator;
use crate::view::thousands;

/// A text after capping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    pub text: String,
    /// Bytes of the original that are not in `text` (0: it was short enough).
    pub cut_bytes: usize,
}

/// `text` in at most `max_tokens` (as `estimator` counts), as its head and tail around a
/// marker "[… 12,345 bytes elided …]". A text that fits is returned whole.
pub fn cap_tool_output_tokens(text: &str, max_tokens: u32, estimator: &Estimator) -> Capped {
    cap_with(text, max_tokens, estimator, |cut| {
        format!("[… {} bytes elided …]", thousands(cut))
    })
}

/// Like [`cap_tool_output_tokens`] with a marker of the caller's making (it is told the
/// number of bytes cut). Two thirds of the room go to the head, one third to the tail;
/// cuts fall on line ends where one is near, else on character boundaries.
pub fn cap_with(
    text: &str,
    max_tokens: u32,
    estimator: &Estimator,
    marker: impl Fn(usize) -> String,
) -> Capped {
    cap_counted(text, estimator.text(text), max_tokens, estimator, marker)
}

/// [`cap_with`] for a text whose count (`whole`) the caller already has.
pub(crate) fn cap_counted(
    text: &str,
    whole: u32,
    max_tokens: u32,
    estimator: &Estimator,
    marker: impl Fn(usize) -> String,
) -> Capped {
    if whole <= max_tokens {
        return Capped {
            text: text.to_owned(),
            cut_bytes: 0,
        };
    }
    let probe = marker(text.len());
    let marker_tokens = estimator.text(&probe) + 2;
    if max_tokens <= marker_tokens {
        // No room for any of the text: the marker alone says what was there.
        return Capped {
            text: probe,
            cut_bytes: text.len(),
        };
    }
    let room = f64::from(max_tokens - marker_tokens);
    let bytes_per_token = text.len() as f64 / f64::from(whole.max(1));
    let mut keep = (room * bytes_per_token) as usize;
    // The estimate of parts differs from the parts of the estimate: shrink until it fits.
    for _ in 0..16 {
        let head_len = keep * 2 / 3;
        let tail_len = keep - head_len;
        let head_end = cut_point(text, head_len, true);
        let tail_start = cut_point(text, text.len().saturating_sub(tail_len), false).max(head_end);
        let cut = tail_start - head_end;
        let out = format!(
            "{}\n{}\n{}",
            &text[..head_end],
            marker(cut),
            &text[tail_start..]
        );
        if estimator.text(&out) <= max_tokens || keep == 0 {
            return Capped {
                text: out,
                cut_bytes: cut,
            };
        }
        keep = keep * 4 / 5;
    }
    Capped {
        text: marker(text.len()),
        cut_bytes: text.len(),
    }
}

/// A byte offset near `at` on a character boundary, moved to just after a line end when
/// one is near (backwards for a head, forwards for a tail) — near: within 200 bytes and
/// within half of the part, so that snapping never eats most of a short part.
fn cut_point(text: &str, at: usize, head: bool) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let part = if head { at } else { text.len() - at };
    let near = (part / 2).min(200);
    if near == 0 {
        return at;
    }
    if head {
        let mut from = at - near;
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        if let Some(p) = text[from..at].rfind('\n') {
            return from + p + 1;
        }
    } else {
        let mut to = at + near;
        while !text.is_char_boundary(to) {
            to -= 1;
        }
        if let Some(p) = text[at..to].find('\n') {
            return at + p + 1;
        }
    }
    at
}

#[cfg(test)]
#[path = "cap_tests.rs"]
mod tests;
