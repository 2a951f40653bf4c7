//! Click's two-interface IP router (the configuration of the Click paper,
//! as conf/make-ip-conf.pl writes it) parses unmodified, and so does every
//! example in the workspace's `conf/`.

use std::path::Path;

use bricks_config::{parse, split_keyword, Router, Source, SourceMap};

fn parse_file(path: &Path) -> Router {
    let text = std::fs::read_to_string(path).unwrap();
    let mut map = SourceMap::new();
    match parse(&mut map, Source::new(path.display().to_string(), text)) {
        Ok(router) => router,
        Err(errors) => panic!("{}", map.render_all(&errors)),
    }
}

fn ip_router() -> Router {
    parse_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ip-router.click"))
}

fn connected(r: &Router, from: &str, from_port: usize, to: &str, to_port: usize) -> bool {
    let (f, t) = (r.find(from).unwrap(), r.find(to).unwrap());
    r.connections
        .iter()
        .any(|c| (c.from, c.from_port, c.to, c.to_port) == (f, from_port, t, to_port))
}

#[test]
fn ip_router_counts() {
    let r = ip_router();
    assert_eq!(r.elements.len(), 45);
    assert_eq!(r.connections.len(), 58);
    assert_eq!(r.elements.iter().filter(|e| e.anonymous).count(), 23);
    assert!(r.requirements.is_empty());
}

#[test]
fn ip_router_names_follow_click() {
    let r = ip_router();
    for name in [
        "rt",
        "ip",
        "CheckIPHeader@3",
        "GetIPAddress@4",
        "PollDevice@7",
        "Paint@12",
        "Print@22",
        "EtherEncap@25",
        "DropBroadcasts@26",
        "FixIPSrc@29",
        "ICMPError@32",
        "ICMPError@45",
    ] {
        assert!(r.find(name).is_some(), "no element {name}");
    }
}

#[test]
fn ip_router_arguments() {
    let r = ip_router();
    let c0 = r.element("c0").unwrap();
    assert_eq!(c0.class, "Classifier");
    assert_eq!(
        c0.arg_texts(),
        ["12/0806 20/0001", "12/0806 20/0002", "12/0800", "-"]
    );
    let rt = r.element("rt").unwrap();
    assert_eq!(rt.class, "StaticIPLookup");
    assert_eq!(rt.args.len(), 11);
    assert_eq!(rt.args[0].text, "18.26.4.1/32 0");
    assert_eq!(rt.args[10].text, "0.0.0.0/0.0.0.0 18.26.4.254 1");
    let check = r.element("CheckIPHeader@3").unwrap();
    assert_eq!(
        split_keyword(&check.args[0].text),
        (Some("INTERFACES"), "18.26.4.1/24 1.0.0.1/8")
    );
    assert_eq!(
        r.element("ar1").unwrap().arg_texts(),
        ["1.0.0.1 1.0.0.0/8 00:00:C0:AE:67:EF"]
    );
    assert_eq!(
        r.element("ICMPError@33").unwrap().arg_texts(),
        ["18.26.4.1", "unreachable", "needfrag"]
    );
    assert_eq!(
        r.element("Print@13").unwrap().arg_texts(),
        ["\"eth0 non-IP\""]
    );
    assert!(r.element("dt0").unwrap().args.is_empty());
}

#[test]
fn ip_router_connections() {
    let r = ip_router();
    assert!(connected(&r, "GetIPAddress@4", 0, "rt", 0));
    assert!(connected(&r, "c0", 2, "Paint@12", 0));
    assert!(connected(&r, "Paint@12", 0, "ip", 0));
    assert!(connected(&r, "arpt", 1, "arpq1", 1));
    assert!(connected(&r, "rt", 2, "DropBroadcasts@36", 0));
    assert!(connected(&r, "fr1", 0, "arpq1", 0));
    assert!(connected(&r, "dt0", 1, "ICMPError@32", 0));
    assert!(connected(&r, "ICMPError@32", 0, "rt", 0));
    assert!(connected(&r, "out0", 0, "todevice0", 0));
}

#[test]
fn workspace_examples_parse() {
    let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf");
    let Ok(entries) = std::fs::read_dir(&conf) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "click") {
            parse_file(&path);
        }
    }
}
