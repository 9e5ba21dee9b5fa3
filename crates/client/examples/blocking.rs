//! The same calls without an async runtime, for scripts and tools.
//! Run with a node at STRATA_URL (default http://127.0.0.1:7001).

pub fn main() -> Result<(), strata_client::Error> {
    let url = std::env::var("STRATA_URL").unwrap_or_else(|_| "http://127.0.0.1:7001".into());
    let client = strata_client::Client::builder()
        .seed(url)
        .connect_blocking()?;
    client.put("script:1", "one")?;
    client.put("script:2", "two")?;
    let keys: Vec<_> = client
        .range("script:", Some(b"script;"))
        .map(|e| e.map(|(k, _)| k))
        .collect::<Result<_, _>>()?;
    assert_eq!(keys.len(), 2);
    assert_eq!(client.get("script:2")?.as_deref(), Some(&b"two"[..]));
    client.delete("script:1")?;
    assert_eq!(client.get("script:1")?, None);
    Ok(())
}
