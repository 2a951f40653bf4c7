//! Click's two-interface IP router (the configuration of the Click paper,
//! as conf/make-ip-conf.pl writes it) parses unmodified, and so do the
//! other configurations in `tests/data` and every example in the
//! workspace's `conf/`.

use std::path::Path;

use bricks_config::{parse, parse_data, split_keyword, unquote, Router, Source, SourceMap};

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
fn compound_example() {
    let r = parse_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compound.click"));
    let names: Vec<&str> = r.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "FromDevice@1",
            "p/Counted@1/c",
            "p/Counted@1/Queue@2",
            "p/Unqueue@2",
            "ToDevice@3",
            "InfiniteSource@4",
            "Print@5",
            "Sink@6",
        ]
    );
    assert_eq!(r.element("Sink@6").unwrap().class, "Discard");
    assert_eq!(r.element("p/Unqueue@2").unwrap().arg_texts(), ["BURST 8"]);
    assert_eq!(r.element("ToDevice@3").unwrap().arg_texts(), ["eth0"]);
    let print = r.element("Print@5").unwrap();
    assert_eq!(unquote(&print.args[0].text).unwrap(), "to sink: \"eth0\"");
    let data = split_keyword(&r.element("InfiniteSource@4").unwrap().args[0].text)
        .1
        .to_string();
    assert_eq!(parse_data(&data).unwrap().len(), 18);
    assert_eq!(r.connections.len(), 6);
    assert!(connected(&r, "InfiniteSource@4", 0, "Print@5", 0));
    assert!(connected(&r, "p/Unqueue@2", 0, "ToDevice@3", 0));
    assert_eq!(r.requirements, [r#"package "bricks-test""#]);
}

/// Every file in `tests/data` parses; the directory also seeds the
/// `config_parse` fuzz target.
#[test]
fn every_test_configuration_parses() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for entry in std::fs::read_dir(data).unwrap() {
        parse_file(&entry.unwrap().path());
    }
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
