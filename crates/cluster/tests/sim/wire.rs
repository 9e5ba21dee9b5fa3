//! The simulation's wire: the handshake that stands in for the node's HTTP
//! upgrade, the dialer over turmoil's TCP, and the client protocol the
//! workers speak to a coordinator.

use super::*;

/// The node's side of the HTTP upgrade, simulated: `P <from> <token>\n`
/// answered `101\n` (or `403\n`); then the cluster's own challenge and
/// transport. Clients send `C` and one request.
pub(super) struct SimDialer {
    pub(super) me: String,
    pub(super) secret: Secret,
}

impl Dialer for SimDialer {
    fn dial<'a>(&'a self, to: &'a str) -> DialFuture<'a> {
        Box::pin(async move {
            let host = to.trim_start_matches("http://").to_string();
            let mut s = TcpStream::connect(host).await?;
            let line = format!("P {} {}\n", self.me, self.secret.upgrade_token(&self.me));
            s.write_all(line.as_bytes()).await?;
            let mut answer = [0u8; 4];
            s.read_exact(&mut answer).await?;
            if &answer != b"101\n" {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "upgrade refused",
                ));
            }
            Ok(Box::new(s) as BoxStream)
        })
    }
}

pub(super) async fn read_line<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<String> {
    let mut line = Vec::new();
    loop {
        let b = r.read_u8().await?;
        if b == b'\n' || line.len() > 4096 {
            return Ok(String::from_utf8_lossy(&line).into_owned());
        }
        line.push(b);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Put,
    Delete,
    Get,
}

/// What a client saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Ok(Option<String>),
    /// The node answered with an error (code: 1 not enough replicas,
    /// 2 busy or closed, 3 other).
    Failed(u8),
    /// No answer: timed out or the connection broke.
    Unknown,
}

pub(super) async fn serve_client(c: &Cluster, s: &mut TcpStream) -> std::io::Result<()> {
    let op = s.read_u8().await?;
    let ack = s.read_u8().await? as usize;
    let from = s.read_u8().await? as usize;
    let klen = s.read_u16().await? as usize;
    let mut key = vec![0u8; klen];
    s.read_exact(&mut key).await?;
    let vlen = s.read_u32().await? as usize;
    let mut value = vec![0u8; vlen];
    s.read_exact(&mut value).await?;
    let r = match c.replication(Some(ack), Some(from)) {
        Ok(r) => r,
        Err(_) => return s.write_all(&[3]).await,
    };
    let res = match op {
        b'p' => c
            .put(0, Bytes::from(key), Bytes::from(value), r)
            .await
            .map(|_| None),
        b'd' => c.delete(0, Bytes::from(key), r).await.map(|_| None),
        _ => c.get(0, &key, r).await,
    };
    match res {
        Ok(None) => s.write_all(&[0, 0]).await,
        Ok(Some(v)) => {
            let mut out = vec![0, 1];
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(&v);
            s.write_all(&out).await
        }
        Err(ClusterError::NotEnoughReplicas { .. }) => s.write_all(&[1]).await,
        Err(ClusterError::Busy(_) | ClusterError::Closed) => s.write_all(&[2]).await,
        Err(_) => s.write_all(&[3]).await,
    }
}

pub(super) async fn serve_conn(c: Arc<Cluster>, mut s: TcpStream) {
    let Ok(kind) = s.read_u8().await else {
        return;
    };
    if kind == b'C' {
        let _ = serve_client(&c, &mut s).await;
        return;
    }
    let Ok(line) = read_line(&mut s).await else {
        return;
    };
    let mut parts = line.trim_start().splitn(2, ' ');
    let (from, token) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !c.check_upgrade(from, token) {
        let _ = s.write_all(b"403\n").await;
        return;
    }
    if s.write_all(b"101\n").await.is_err() {
        return;
    }
    let _ = c.serve_peer(Box::new(s)).await;
}

pub(super) async fn call(
    node: usize,
    op: Op,
    ack: usize,
    from: usize,
    key: &str,
    value: &str,
) -> Outcome {
    let req = async {
        let mut s = TcpStream::connect((name(node), PORT)).await?;
        let mut msg = vec![b'C'];
        msg.push(match op {
            Op::Put => b'p',
            Op::Delete => b'd',
            Op::Get => b'g',
        });
        msg.extend_from_slice(&[ack as u8, from as u8]);
        msg.extend_from_slice(&(key.len() as u16).to_be_bytes());
        msg.extend_from_slice(key.as_bytes());
        msg.extend_from_slice(&(value.len() as u32).to_be_bytes());
        msg.extend_from_slice(value.as_bytes());
        s.write_all(&msg).await?;
        let status = s.read_u8().await?;
        if status != 0 {
            return Ok::<_, std::io::Error>(Outcome::Failed(status));
        }
        if s.read_u8().await? == 0 {
            return Ok(Outcome::Ok(None));
        }
        let n = s.read_u32().await? as usize;
        let mut v = vec![0u8; n];
        s.read_exact(&mut v).await?;
        Ok(Outcome::Ok(Some(String::from_utf8_lossy(&v).into_owned())))
    };
    match tokio::time::timeout(CLIENT_TIMEOUT, req).await {
        Ok(Ok(o)) => o,
        _ => Outcome::Unknown,
    }
}
