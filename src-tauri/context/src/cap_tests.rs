use super::*;

fn lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("line {i:05} of the output\n"))
        .collect()
}

#[test]
fn a_text_that_fits_is_returned_whole() {
    let e = Estimator::for_model("gpt-4o");
    let text = lines(10);
    assert_eq!(
        cap_tool_output_tokens(&text, 1000, &e),
        Capped {
            text: text.clone(),
            cut_bytes: 0
        }
    );
}

#[test]
fn a_long_text_keeps_head_and_tail_within_the_tokens() {
    for e in [
        Estimator::for_model("gpt-4o"),
        Estimator::for_model("smollm2"),
        Estimator::shape_based("m"),
    ] {
        let text = lines(2000);
        for max in [50, 200, 1000] {
            let capped = cap_tool_output_tokens(&text, max, &e);
            assert!(
                e.text(&capped.text) <= max,
                "{max}: {}",
                e.text(&capped.text)
            );
            assert!(
                capped.text.starts_with("line 00000 of the output\n"),
                "{max}"
            );
            // The very end survives; with room for it, the whole last line.
            assert!(capped.text.ends_with("of the output\n"), "{max}");
            if max >= 200 {
                assert!(
                    capped.text.ends_with("\nline 01999 of the output\n"),
                    "{max}"
                );
            }
            // The marker, on its own line, tells the bytes that are gone.
            let marker = format!(
                "[… {} bytes elided …]",
                crate::view::thousands(capped.cut_bytes)
            );
            assert!(
                capped.text.contains(&format!("\n{marker}\n")),
                "{max}: {}",
                capped.text
            );
            assert_eq!(
                capped.text.len() - marker.len() - 2,
                text.len() - capped.cut_bytes
            );
            // The head gets the larger share.
            let (head, tail) = capped.text.split_once(&marker).unwrap();
            assert!(head.len() > tail.len(), "{max}: {:?}", capped.text);
        }
    }
}

#[test]
fn multi_byte_text_without_line_ends_is_cut_on_character_boundaries() {
    let e = Estimator::for_model("smollm2");
    let text = "日本語のテキストとÄÖÜ ".repeat(500);
    let capped = cap_tool_output_tokens(&text, 100, &e);
    assert!(e.text(&capped.text) <= 100);
    assert!(capped.cut_bytes > 0 && capped.text.starts_with("日本語"));
}

#[test]
fn no_room_for_text_leaves_the_marker_alone() {
    let e = Estimator::for_model("gpt-4o");
    let text = lines(100);
    let capped = cap_tool_output_tokens(&text, 5, &e);
    assert_eq!(capped.cut_bytes, text.len());
    assert!(capped.text.starts_with("[… ") && !capped.text.contains("line"));
}
