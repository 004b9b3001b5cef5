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
    let items = all(SseStream::new(body(parts), Duration::from_secs(5)))
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
    let mut s = SseStream::new(pending, Duration::from_secs(3));
    let err = s.next().await.unwrap_err();
    assert!(matches!(err, ProviderError::Stream(_)), "{err}");
    assert!(err.to_string().contains("silent"), "{err}");
}
