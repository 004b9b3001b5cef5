use super::*;

fn body(parts: Vec<&'static [u8]>) -> BoxStream<'static, Result<Bytes, ByteError>> {
    futures::stream::iter(parts.into_iter().map(|p| Ok(Bytes::from_static(p)))).boxed()
}

async fn all(mut s: SseStream) -> Result<Vec<SseItem>, ProviderError> {
    let mut out = Vec::new();
    while let Some(item) = s.next().await? {
        out.push(item);
    }
    Ok(out)
}

#[tokio::test]
async fn crlf_comments_and_a_character_split_across_reads() {
    let euro = "€".as_bytes();
    let parts: Vec<&'static [u8]> = vec![
        b": keep-alive\r\n\r\n",
        b"data: {\"a\":\"",
        &[0xE2],
        &[0x82, 0xAC],
        b"\"}\r",
        b"\n\r\ndata: [DONE]\r\n\r\n",
    ];
    assert_eq!(euro, [0xE2, 0x82, 0xAC]);
    let items = all(SseStream::new(body(parts), Duration::from_secs(5), 1 << 20))
        .await
        .unwrap();
    assert_eq!(
        items,
        vec![SseItem::Data("{\"a\":\"€\"}".into()), SseItem::Done]
    );
}

#[tokio::test(start_paused = true)]
async fn silence_past_the_idle_limit_is_a_stream_error() {
    let pending = futures::stream::iter(vec![Ok(Bytes::from_static(b": hi\n\n"))])
        .chain(futures::stream::pending())
        .boxed();
    let mut s = SseStream::new(pending, Duration::from_secs(3), 1 << 20);
    let err = s.next().await.unwrap_err();
    assert!(matches!(err, ProviderError::Stream(_)), "{err}");
    assert!(err.to_string().contains("silent"), "{err}");
}

#[tokio::test]
async fn events_up_to_the_cap_pass_and_a_larger_one_ends_the_stream() {
    // Each event is 10 bytes of `data: …` (line ends not counted), CRLF and LF framing.
    let parts: Vec<&'static [u8]> = vec![b"data: 1234\r\n\r\n", b"data: 5678\n\n"];
    let items = all(SseStream::new(body(parts), Duration::from_secs(5), 10))
        .await
        .unwrap();
    assert_eq!(items.len(), 2);
    // Two lines of one event add up; so does a line that never ends.
    for parts in [
        vec![&b"data: 1234\n"[..], b"data: 5678\n\n"],
        vec![&b"data: 12"[..], b"34567890"],
    ] {
        let err = all(SseStream::new(body(parts), Duration::from_secs(5), 10))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ProviderError::StreamLimit {
                limit: StreamLimit::EventBytes,
                cap: 10
            }
        );
        assert_eq!(err.kind().as_str(), "model_stream_limit");
        assert!(!err.is_retryable());
    }
}
