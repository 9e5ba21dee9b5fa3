//! Tests of `wire`: every request and answer encoded and decoded back, frames split whole from bytes that arrive a few at a time, bad frames refused.

use super::*;

fn rec(v: Option<&'static [u8]>) -> Record {
    Record {
        version: Version { hlc: 99, node: 7 },
        value: v.map(Bytes::from_static),
        marks: Vec::new(),
    }
}

#[test]
fn every_message_round_trips_through_a_byte_stream() {
    let reqs = vec![
        Request::Write {
            key: Bytes::from_static(b"k"),
            record: rec(Some(b"value")),
        },
        Request::Write {
            key: Bytes::from_static(b""),
            record: rec(None),
        },
        Request::Repair {
            key: Bytes::from_static(b"r"),
            record: rec(None),
        },
        Request::Read {
            key: Bytes::from_static(b"k2"),
        },
        Request::Version {
            key: Bytes::from_static(b"k3"),
            write: None,
        },
        Request::Version {
            key: Bytes::from_static(b"k3"),
            write: Some(crate::record::WriteId(u128::MAX - 1)),
        },
        Request::Ping,
        Request::Scan {
            start: Bytes::from_static(b"a"),
            end: Some(Bytes::from_static(b"z")),
            limit: 10,
        },
        Request::Scan {
            start: Bytes::from_static(b"a"),
            end: None,
            limit: 1,
        },
        Request::Hashes {
            set: 42,
            level: 2,
            branches: vec![0, 7, 255],
        },
        Request::Keys {
            set: 42,
            all: false,
            leaves: vec![1, 65535],
            after: Some(Bytes::from_static(b"k")),
            limit: 4096,
        },
        Request::Keys {
            set: 1,
            all: true,
            leaves: vec![],
            after: None,
            limit: 1,
        },
        Request::Fetch {
            keys: vec![Bytes::from_static(b"a"), Bytes::new()],
        },
        Request::Push {
            entries: vec![(Bytes::from_static(b"p"), rec(Some(b"v")))],
        },
        Request::Layout {
            state: crate::layout::LayoutState {
                version: 3,
                replication: 2,
                members: vec!["http://a".into(), "http://b".into()],
                previous: Some(vec!["http://a".into()]),
                stage: crate::layout::Stage::Syncing,
            },
            cleanup: true,
        },
        Request::LayoutGet,
    ];
    let resps = vec![
        Response::Written(Outcome::Applied, LocalTiming::default()),
        Response::Written(
            Outcome::Superseded(Version { hlc: 5, node: 6 }),
            LocalTiming {
                queued: std::time::Duration::from_micros(7),
                stall: std::time::Duration::from_micros(8),
                fsync: std::time::Duration::from_micros(3_000),
                apply: std::time::Duration::from_micros(10),
            },
        ),
        Response::Read(None),
        Response::Read(Some(rec(Some(b"x")))),
        Response::Version(None, None),
        Response::Version(
            Some(Version {
                hlc: u64::MAX,
                node: 3,
            }),
            None,
        ),
        Response::Version(
            Some(Version { hlc: 9, node: 3 }),
            Some(Version { hlc: 7, node: 2 }),
        ),
        Response::Pong,
        Response::Scanned {
            entries: vec![(Bytes::from_static(b"a"), rec(None))],
            more: true,
        },
        Response::Hashes {
            ready: true,
            keys: 3,
            root: 9,
            hashes: vec![1, 2, u64::MAX],
        },
        Response::Keys {
            entries: vec![(Bytes::from_static(b"k"), Version { hlc: 1, node: 2 }, true)],
            resume: None,
        },
        Response::Fetched(vec![Some(rec(None)), None]),
        Response::Pushed { applied: 7 },
        Response::Layout {
            state: crate::layout::LayoutState::none(),
            stream: StreamStats {
                version: 4,
                done: true,
                keys: 9,
                error: Some("x".into()),
                ..Default::default()
            },
        },
        Response::Error {
            transient: true,
            read_only: false,
            message: "busy".into(),
        },
        Response::Error {
            transient: false,
            read_only: true,
            message: "fsync failed".into(),
        },
    ];
    let mut buf = BytesMut::new();
    for (i, r) in reqs.iter().enumerate() {
        encode_request(&mut buf, i as u64, 1000 + i as u64, r);
    }
    // Fed a byte at a time, frames come out whole and in order.
    let all = buf.split().freeze();
    let mut feed = BytesMut::new();
    let mut got = Vec::new();
    for b in all.iter() {
        feed.put_u8(*b);
        while let Some((id, kind, hlc, body)) = split_frame(&mut feed).unwrap() {
            assert_eq!(hlc, 1000 + id);
            got.push(decode_request(kind, body).unwrap());
        }
    }
    assert_eq!(got, reqs);
    for (i, r) in resps.iter().enumerate() {
        encode_response(&mut buf, i as u64, 0, r);
    }
    let mut got = Vec::new();
    while let Some((_, kind, _, body)) = split_frame(&mut buf).unwrap() {
        got.push(decode_response(kind, body).unwrap());
    }
    assert_eq!(got, resps);
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0x7f][..]);
    assert!(split_frame(&mut buf).is_err());
    let mut buf = BytesMut::from(&[3, 0, 0, 0, 1, 2, 3][..]);
    assert!(split_frame(&mut buf).is_err());
    assert!(decode_request(WRITE, Bytes::from_static(&[9, 0, 0, 0, 1])).is_err());
    assert!(decode_request(77, Bytes::new()).is_err());
    assert!(decode_response(READ_ANSWER, Bytes::from_static(&[1, 200, 0, 0, 0])).is_err());
    // A forged count asks for more items than the frame holds.
    assert!(decode_request(FETCH, Bytes::from_static(&[255, 255, 255, 255])).is_err());
    assert!(decode_response(HASHES_ANSWER, Bytes::from_static(&[1; 21])).is_err());
}
