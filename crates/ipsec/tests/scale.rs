//! SA and policy files of real size: a gateway with tens of thousands of
//! peers. Loading and reloading must stay linear in the file (a scan of
//! the states per state or per policy was minutes at 100,000 SAs), and
//! only the decapsulating side may hold receive windows.

use bricks_ipsec::spd::Flow;
use bricks_ipsec::{Database, Side, Snapshot, Verdict};
use std::sync::Arc;

/// A gateway 10.0.0.1 with `peers` peers, in `ip xfrm` notation: for peer
/// `i`, an outbound state and policy (reqid `2i + 1`) and an inbound state
/// and policy (reqid `2i + 2`), AES-128-GCM, receive window `window`.
/// `crates/ipsec/tests/gen-sa-file` writes such a file (other keys) for
/// measurements.
fn sa_file(peers: u32, window: u32) -> String {
    let mut s = String::with_capacity(peers as usize * 700);
    for i in 0..peers {
        let peer = format!("10.{}.{}.{}", 1 + (i >> 16), (i >> 8) & 0xff, i & 0xff);
        let net = format!("172.{}.{}.{}/32", 16 + (i >> 16), (i >> 8) & 0xff, i & 0xff);
        let (out_id, in_id) = (2 * i + 1, 2 * i + 2);
        for (src, dst, reqid) in [
            ("10.0.0.1", peer.as_str(), out_id),
            (&peer, "10.0.0.1", in_id),
        ] {
            s.push_str(&format!(
                "ip xfrm state add src {src} dst {dst} proto esp spi {:#x} reqid {reqid} \
                 mode tunnel replay-window {window} \
                 aead 'rfc4106(gcm(aes))' 0x{:032x}c0ffee01 128\n",
                0x1000_0000 + reqid,
                u128::from(reqid) * 0x9e37_79b9_7f4a_7c15,
            ));
        }
        s.push_str(&format!(
            "ip xfrm policy add src 192.168.0.0/16 dst {net} dir out \
             tmpl src 10.0.0.1 dst {peer} proto esp reqid {out_id} mode tunnel\n\
             ip xfrm policy add src {net} dst 192.168.0.0/16 dir in \
             tmpl src {peer} dst 10.0.0.1 proto esp reqid {in_id} mode tunnel\n"
        ));
    }
    s
}

#[test]
fn the_generated_file_is_what_it_says() {
    let text = sa_file(300, 64);
    let f = bricks_ipsec::parse(&text).unwrap();
    assert_eq!((f.states.len(), f.policies.len()), (600, 600));
    let db = Database::from_text(&text, 0).unwrap();
    let snap = db.load();
    // Peer 257's inbound SA (reqid 516) is found by SPI and destination.
    let sa = snap
        .find(0x1000_0000 + 516, u32::from_be_bytes([10, 0, 0, 1]))
        .unwrap();
    assert_eq!(sa.src().octets(), [10, 1, 1, 1]);
    // Its outbound policy picks its outbound SA.
    let flow = Flow {
        src: u32::from_be_bytes([192, 168, 3, 4]),
        dst: u32::from_be_bytes([172, 16, 1, 1]),
        proto: 17,
        sport: 1,
        dport: 2,
    };
    match snap.outbound(&flow) {
        Verdict::Protect(sa) => assert_eq!(sa.spi(), 0x1000_0000 + 515),
        v => panic!("{v:?}"),
    }
}

/// 40,000 SAs and 40,000 policies: the duplicate-SPI check, the template
/// of each policy and each SA kept across a reload were each found by a
/// scan of all states (at 100,000 SAs, 110 s in a release build); now by
/// hash, linear in the file.
#[test]
fn forty_thousand_sas_load_and_reload_in_linear_time() {
    let text = sa_file(20_000, 64);
    let file = bricks_ipsec::parse(&text).unwrap();
    assert_eq!((file.states.len(), file.policies.len()), (40_000, 40_000));
    let old = Snapshot::build(&file, None, 0, Side::Decap);
    // A rebuild from the same lines keeps every SA, with its state.
    let new = Snapshot::build(&file, Some(&old), 1, Side::Decap);
    assert_eq!(new.sas().len(), 40_000);
    assert!(old
        .sas()
        .iter()
        .zip(new.sas())
        .all(|(a, b)| Arc::ptr_eq(a, b)));
    // The last peer's outbound policy, the last in the file, takes its SA.
    let flow = Flow {
        src: u32::from_be_bytes([192, 168, 0, 1]),
        dst: u32::from_be_bytes([172, 16, 78, 31]),
        proto: 6,
        sport: 1,
        dport: 2,
    };
    match new.outbound(&flow) {
        Verdict::Protect(sa) => assert_eq!(sa.spi(), 0x1000_0000 + 2 * 19_999 + 1),
        v => panic!("{v:?}"),
    }
    // A template that names no state is refused with its line, and a
    // duplicate SPI far down the file names the first line.
    let mut bad = text.clone();
    bad.push_str(
        "ip xfrm policy add src 1.0.0.0/8 dst 2.0.0.0/8 dir out \
         tmpl src 10.0.0.1 dst 10.0.0.9 proto esp reqid 7 mode tunnel\n",
    );
    let e = bricks_ipsec::parse(&bad).unwrap_err();
    assert!(e.to_string().contains("matches no state"), "{e}");
    let mut dup = text.clone();
    dup.push_str(text.lines().next().unwrap());
    dup.push('\n');
    let e = bricks_ipsec::parse(&dup).unwrap_err();
    assert!(e.to_string().contains("first is on line 1"), "{e}");
}

/// The receive windows exist only where sequence numbers are checked.
#[test]
fn only_the_decapsulating_side_has_receive_windows() {
    let text = sa_file(4, 65536);
    let decap = Database::for_side(&text, 0, Side::Decap).unwrap();
    let encap = Database::for_side(&text, 0, Side::Encap).unwrap();
    for sa in decap.load().sas() {
        assert_eq!(sa.replay().size(), 65536);
    }
    for sa in encap.load().sas() {
        assert_eq!(sa.replay().size(), 0);
    }
    // A reload keeps the side: unchanged SAs are kept, new ones have no
    // window either.
    let more = sa_file(5, 65536);
    let s = encap.reload(&more, 1).unwrap();
    assert_eq!((s.kept, s.added), (8, 2));
    assert!(encap.load().sas().iter().all(|sa| sa.replay().size() == 0));
}
