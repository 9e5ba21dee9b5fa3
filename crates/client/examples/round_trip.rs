//! Put, get, delete and a range against a Strata cluster.
//! Run: `cargo run -p strata-client --example round_trip` with a node at
//! STRATA_URL (default http://127.0.0.1:7001), e.g. after `strata cluster up`.

use strata_client::{Client, Options};

#[tokio::main]
pub async fn main() -> Result<(), strata_client::Error> {
    let url = std::env::var("STRATA_URL").unwrap_or_else(|_| "http://127.0.0.1:7001".into());
    let client = Client::builder().seed(url).connect().await?;

    // Keys and values are bytes; the client encodes the key.
    client.put("user:42", "hello").await?;
    let value = client.get("user:42").await?;
    assert_eq!(value.as_deref(), Some(&b"hello"[..]));

    // Per request: how many replicas must answer, of how many.
    client
        .put_with("user:43", "world", &Options::replication(3, 3))
        .await?;

    // A range streams, one entry at a time, in key order.
    let mut range = client.range("user:", Some(b"user;"));
    while let Some(entry) = range.next().await {
        let (key, value) = entry?;
        println!(
            "{} = {}",
            String::from_utf8_lossy(&key),
            String::from_utf8_lossy(&value)
        );
    }

    client.delete("user:42").await?;
    assert_eq!(client.get("user:42").await?, None);
    Ok(())
}
