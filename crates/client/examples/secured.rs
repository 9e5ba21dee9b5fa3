//! A cluster that wants credentials: the client's own token (and, for
//! https:// nodes, the certificate authority to trust), never the
//! process's. Run with STRATA_URL and STRATA_TOKEN (a token the nodes
//! accept; `docs/security.md`), and STRATA_TLS_CA for https://.

use strata_client::{Client, Error};

#[tokio::main]
pub async fn main() -> Result<(), Error> {
    let url = std::env::var("STRATA_URL").unwrap_or_else(|_| "http://127.0.0.1:7001".into());
    let token = std::env::var("STRATA_TOKEN").expect("STRATA_TOKEN: a token the nodes accept");

    // Without credentials the node says why it refused, as a typed error.
    match Client::builder().seed(url.clone()).connect().await {
        Err(Error::Unauthorized { reason, .. }) => println!("refused as expected: {reason}"),
        Err(e) => return Err(e),
        Ok(_) => panic!("{url} served a client without credentials"),
    }

    let mut builder = Client::builder().seed(url).token(token);
    if let Ok(ca) = std::env::var("STRATA_TLS_CA") {
        builder = builder.tls_ca(ca);
    }
    let client = builder.connect().await?;
    client.put("secret:1", "kept").await?;
    assert_eq!(client.get("secret:1").await?.as_deref(), Some(&b"kept"[..]));
    client.delete("secret:1").await?;
    Ok(())
}
