//! Tests of the whole language: one per construct and per error.

use crate::*;

fn parse_str(text: &str) -> (SourceMap, Result<Router, Vec<Diagnostic>>) {
    let mut map = SourceMap::new();
    let result = parse(&mut map, Source::new("test.click", text));
    (map, result)
}

fn ok(text: &str) -> Router {
    let (map, result) = parse_str(text);
    match result {
        Ok(r) => r,
        Err(errors) => panic!("unexpected errors:\n{}", map.render_all(&errors)),
    }
}

/// Parses text that must fail; returns (message, underlined text, help)
/// of each error.
fn errors(text: &str) -> Vec<(String, String, Option<String>)> {
    let (map, result) = parse_str(text);
    let Err(errors) = result else {
        panic!("{text:?} should not parse");
    };
    errors
        .iter()
        .map(|d| {
            assert_eq!(map.get(d.span.file).unwrap().name, "test.click");
            (
                d.message.clone(),
                text[d.span.start..d.span.end].to_string(),
                d.help.clone(),
            )
        })
        .collect()
}

/// The single error of `text`: (message, underlined text).
fn error(text: &str) -> (String, String) {
    let mut all = errors(text);
    assert_eq!(all.len(), 1, "{all:?}");
    let (m, s, _) = all.remove(0);
    (m, s)
}

fn names(r: &Router) -> Vec<&str> {
    r.elements.iter().map(|e| e.name.as_str()).collect()
}

fn conns(r: &Router) -> Vec<String> {
    r.connections
        .iter()
        .map(|c| {
            format!(
                "{}[{}] -> [{}]{}",
                r.elements[c.from].name, c.from_port, c.to_port, r.elements[c.to].name
            )
        })
        .collect()
}

fn text_of(text: &str, span: Span) -> &str {
    &text[span.start..span.end]
}

// ---- declarations and elements ----

#[test]
fn declaration() {
    let text = "q :: Queue(200);";
    let r = ok(text);
    let q = &r.elements[0];
    assert_eq!((q.name.as_str(), q.class.as_str()), ("q", "Queue"));
    assert!(!q.anonymous);
    assert_eq!(text_of(text, q.name_span), "q");
    assert_eq!(text_of(text, q.class_span), "Queue");
    assert_eq!(text_of(text, q.config_span), "200");
    assert_eq!(q.arg_texts(), ["200"]);
    assert_eq!(&*q.config, "200");
    assert!(q.expansion.is_empty());
}

#[test]
fn declaration_without_arguments() {
    let text = "d :: Discard";
    let r = ok(text);
    assert!(r.elements[0].args.is_empty());
    assert_eq!(&*r.elements[0].config, "");
    assert_eq!(r.elements[0].config_span, Span::new(0, 12, 12));
}

#[test]
fn several_names_in_one_declaration() {
    let r = ok("a, b, c :: Counter(BYTES true);");
    assert_eq!(names(&r), ["a", "b", "c"]);
    assert!(r
        .elements
        .iter()
        .all(|e| e.class == "Counter" && e.arg_texts() == ["BYTES true"]));
}

#[test]
fn several_names_start_a_chain_with_the_first() {
    // As Click: in a chain, only `b` is declared; `a` is a bare word.
    let r = ok("a, b :: Counter -> Discard;");
    assert_eq!(
        conns(&r),
        ["a@1[0] -> [0]Discard@3", "b[0] -> [0]Discard@3"]
    );
    let r = ok("a, b :: Counter; Idle -> a, b;");
    assert_eq!(conns(&r), ["Idle@3[0] -> [0]a", "Idle@3[0] -> [0]b"]);
}

#[test]
fn declarations_inside_chains() {
    let r = ok("x :: Idle; x -> n :: Counter -> y :: Discard;");
    assert_eq!(names(&r), ["x", "n", "y"]);
    assert_eq!(conns(&r), ["x[0] -> [0]n", "n[0] -> [0]y"]);
}

#[test]
fn anonymous_elements_are_numbered_by_position_as_in_click() {
    let r = ok("FromDevice(eth0) -> q :: Queue -> ToDevice(eth0); Idle -> Discard;");
    assert_eq!(
        names(&r),
        ["FromDevice@1", "q", "ToDevice@3", "Idle@4", "Discard@5"]
    );
    assert!(r.elements[0].anonymous && !r.elements[1].anonymous);
    assert_eq!(r.elements[0].arg_texts(), ["eth0"]);
    assert_eq!(
        conns(&r),
        [
            "FromDevice@1[0] -> [0]q",
            "q[0] -> [0]ToDevice@3",
            "Idle@4[0] -> [0]Discard@5"
        ]
    );
}

#[test]
fn anonymous_names_never_collide_with_declared_ones() {
    let r = ok("Idle -> Queue; Queue@2 :: Counter; Queue@3 :: Counter;");
    assert_eq!(names(&r), ["Idle@1", "Queue@4", "Queue@2", "Queue@3"]);
}

#[test]
fn anonymous_element_spans() {
    let text = "Idle -> Print(hi) -> Discard;";
    let r = ok(text);
    let p = &r.elements[1];
    assert_eq!(text_of(text, p.class_span), "Print");
    assert_eq!(text_of(text, p.name_span), "Print");
    assert_eq!(text_of(text, p.config_span), "hi");
}

#[test]
fn bare_undeclared_identifier_is_an_anonymous_element_of_that_class() {
    let r = ok("Idle -> discard;");
    assert_eq!(r.elements[1].class, "discard");
    assert_eq!(r.elements[1].name, "discard@2");
    assert!(r.elements[1].anonymous);
}

#[test]
fn each_use_of_a_class_name_is_a_new_element() {
    let r = ok("Idle -> Discard; Idle -> Discard;");
    assert_eq!(r.elements.len(), 4);
}

#[test]
fn names_may_be_declared_after_use() {
    let r = ok("Idle -> b; b :: Discard;");
    assert_eq!(names(&r), ["Idle@1", "b"]);
    assert_eq!(conns(&r), ["Idle@1[0] -> [0]b"]);
}

#[test]
fn names_with_slashes_and_at_signs() {
    let r = ok("a/b :: Idle; x@y :: Discard; a/b -> x@y;");
    assert_eq!(conns(&r), ["a/b[0] -> [0]x@y"]);
}

// ---- connections and ports ----

#[test]
fn ports_default_to_zero() {
    let r = ok("a :: Tee; b :: Discard; a[1] -> [2]b; a -> b;");
    assert_eq!(conns(&r), ["a[1] -> [2]b", "a[0] -> [0]b"]);
}

#[test]
fn ports_may_be_separated_by_whitespace() {
    let r = ok("a :: Tee; b :: Discard; a [1] -> [2] b; a\n[3]\n->\n[4]\nb");
    assert_eq!(conns(&r), ["a[1] -> [2]b", "a[3] -> [4]b"]);
}

#[test]
fn connection_spans_cover_the_connection() {
    let text = "a :: Tee; b :: Discard; a [1] -> [2] b -> c :: Discard(x);";
    let r = ok(text);
    assert_eq!(text_of(text, r.connections[0].span), "a [1] -> [2] b");
    assert_eq!(text_of(text, r.connections[1].span), "b -> c :: Discard(x)");
}

#[test]
fn long_chains() {
    let r = ok("Idle -> a :: Counter -> [0]b :: Tee(2) [1] -> Discard; b -> Discard");
    assert_eq!(
        conns(&r),
        [
            "Idle@1[0] -> [0]a",
            "a[0] -> [0]b",
            "b[1] -> [0]Discard@4",
            "b[0] -> [0]Discard@5"
        ]
    );
}

#[test]
fn semicolons_are_optional_and_newlines_are_space() {
    let r = ok("a :: Idle b :: Discard\na\n->\nb\n;;;");
    assert_eq!(conns(&r), ["a[0] -> [0]b"]);
}

#[test]
fn duplicate_connections_are_merged() {
    let r = ok("a :: Idle; b :: Discard; a -> b; a -> b;");
    assert_eq!(r.connections.len(), 1);
}

#[test]
fn empty_configuration() {
    let r = ok("  // nothing\n/* at all */\n");
    assert!(r.elements.is_empty() && r.connections.is_empty());
}

// ---- comments and preprocessor lines ----

#[test]
fn comments_everywhere() {
    let text = "// line comment\n/* block\n comment */ a /* x */ :: /* y */ Queue( /* z */ 10 // w\n ) -> // v\n Discard;\n";
    let r = ok(text);
    assert_eq!(r.elements[0].arg_texts(), ["10"]);
    assert_eq!(&*r.elements[0].config, "10");
    assert_eq!(r.connections.len(), 1);
}

#[test]
fn preprocessor_lines_are_ignored() {
    let r = ok("#!/usr/bin/click\n# 1 \"router.click\"\nIdle -> Discard;\n#include <foo>\n");
    assert_eq!(r.elements.len(), 2);
}

// ---- arguments ----

#[test]
fn arguments_are_split_at_top_level_commas() {
    let text = r#"Foo(a, "b, c", 'd, e', f(g, h), [i, j], {k, l}, \<00 /* , */ 11>, m n);"#;
    let r = ok(text);
    let e = &r.elements[0];
    assert_eq!(
        e.arg_texts(),
        [
            "a",
            r#""b, c""#,
            "'d, e'",
            "f(g, h)",
            "[i, j]",
            "{k, l}",
            r"\<00   11>",
            "m n"
        ]
    );
    for arg in e.args.iter() {
        let written = text_of(text, arg.span);
        assert!(written.starts_with(&arg.text[..1]), "{written}");
    }
    assert_eq!(text_of(text, e.args[6].span), r"\<00 /* , */ 11>");
}

#[test]
fn empty_and_trailing_arguments() {
    let r = ok("A(); B( ); C(a,); D(a, ); E(,a); F(a,,b); G(a, /* c */);");
    let args: Vec<Vec<&str>> = r.elements.iter().map(|e| e.arg_texts()).collect();
    assert_eq!(
        args,
        vec![
            vec![],
            vec![],
            vec!["a"],
            vec!["a"],
            vec!["", "a"],
            vec!["a", "", "b"],
            vec!["a"]
        ]
    );
}

#[test]
fn comments_inside_arguments_are_removed() {
    let text = "c0 :: Classifier(12/0806 20/0001, // ARP queries\n 12/0806 /* ARP */ 20/0002, -);";
    let r = ok(text);
    assert_eq!(
        r.elements[0].arg_texts(),
        ["12/0806 20/0001", "12/0806 20/0002", "-"]
    );
    assert_eq!(
        &*r.elements[0].config,
        "12/0806 20/0001, 12/0806 20/0002, -"
    );
    assert_eq!(
        text_of(text, r.elements[0].args[1].span),
        "12/0806 /* ARP */ 20/0002"
    );
}

#[test]
fn parentheses_nest_in_arguments() {
    let r = ok("IPFilter(allow (src host 1.2.3.4 and (tcp or udp)), deny all) -> Discard;");
    assert_eq!(r.elements[0].args.len(), 2);
    assert_eq!(r.connections.len(), 1);
}

#[test]
fn quotes_hide_parentheses_and_comment_markers() {
    let r = ok(r#"Print(")", '(', "// not a comment", "a\"b)") -> Discard;"#);
    assert_eq!(
        r.elements[0].arg_texts(),
        [r#"")""#, "'('", r#""// not a comment""#, r#""a\"b)""#]
    );
    assert_eq!(unquote(&r.elements[0].args[3].text).unwrap(), "a\"b)");
}

/// Click's conf/test.click, verbatim.
#[test]
fn click_test_configuration() {
    let text = r"// test.click

// This configuration should print this line five times:
// Print ok | 100 : 45000028 00000000 401177c3 01000001 02000002 13691369

// You can run it at user level as
// `userlevel/click < conf/test.click'

InfiniteSource(\<00 00 c0 ae 67 ef  00 00 00 00 00 00  08 00
45 00 00 28  00 00 00 00  40 11 77 c3  01 00 00 01  
02 00 00 02  13 69 13 69  00 14 d6 41  55 44 50 20  
70 61 63 6b  65 74 21 0a  04 00 00 00  01 00 00 00  
01 00 00 00  00 00 00 00  00 80 04 08  00 80 04 08  
53 53 00 00  53 53 00 00  05 00 00 00  00 10 00 00  
01 00 00 00  54 53 00 00  54 e3 04 08  54 e3 04 08  
d8 01 00 00>, 5, 5)
	-> Strip(14)
	-> CheckIPHeader(18.26.4.255 2.255.255.255 1.255.255.255)
        -> Print(ok)
	-> Discard;
";
    let r = ok(text);
    assert_eq!(
        names(&r),
        [
            "InfiniteSource@1",
            "Strip@2",
            "CheckIPHeader@3",
            "Print@4",
            "Discard@5"
        ]
    );
    assert_eq!(r.connections.len(), 4);
    let src = &r.elements[0];
    assert_eq!(src.args.len(), 3);
    let data = parse_data(&src.args[0].text).unwrap();
    // 14 bytes of Ethernet header, then the 100 bytes `Print` shows.
    assert_eq!(data.len(), 114);
    assert_eq!(&data[..6], &[0x00, 0x00, 0xc0, 0xae, 0x67, 0xef]);
    assert_eq!(&data[14..18], &[0x45, 0x00, 0x00, 0x28]);
    assert_eq!(&data[110..], &[0xd8, 0x01, 0x00, 0x00]);
    assert_eq!(src.arg_texts()[1..], ["5", "5"]);
}

/// Data literals may hold comments, even `//` comments with `>` in them,
/// as in Click's conf/fake-iprouter.click.
#[test]
fn data_literals_with_comments_inside() {
    let text = r"InfiniteSource(DATA \<
  // Ethernet header -> not a connection, and > is not the end
  00 00 c0 ae 67 ef  00 00 00 00 00 00  08 00
  /* IP header ) , */
  45 00 00 28
>, LIMIT 600000, BURST 5, STOP true) -> Discard;";
    let r = ok(text);
    let src = &r.elements[0];
    assert_eq!(src.args.len(), 4);
    let (keyword, value) = split_keyword(&src.args[0].text);
    assert_eq!(keyword, Some("DATA"));
    assert_eq!(parse_data(value).unwrap().len(), 18);
    assert!(!src.args[0].text.contains("Ethernet"));
    assert_eq!(split_keyword(&src.args[3].text), (Some("STOP"), "true"));
    assert_eq!(r.connections.len(), 1);
}

#[test]
fn quoted_data_and_escapes() {
    let r = ok(r#"Foo("\<0800>", "a\tb\x41\n", '\n') -> Discard;"#);
    let e = &r.elements[0];
    assert_eq!(parse_data(&e.args[0].text).unwrap(), vec![8, 0]);
    assert_eq!(unquote(&e.args[1].text).unwrap(), "a\tbA\n");
    assert_eq!(unquote(&e.args[2].text).unwrap(), "\\n");
}

// ---- require and define ----

#[test]
fn require_is_recorded_and_packages_warned_about() {
    let text = "require(package \"mine\", fastclassifier, compact_config); require(linuxmodule) Idle -> Discard;";
    let (map, r) = parse_str(text);
    let r = r.unwrap();
    assert_eq!(
        r.requirements,
        [
            "package \"mine\"",
            "fastclassifier",
            "compact_config",
            "linuxmodule"
        ]
    );
    assert_eq!(r.elements.len(), 2);
    let warned: Vec<&str> = r
        .warnings
        .iter()
        .map(|d| &text[d.span.start..d.span.end])
        .collect();
    assert_eq!(
        warned,
        ["package \"mine\"", "fastclassifier", "linuxmodule"]
    );
    assert_eq!(
        r.warnings[0].message,
        "package `mine` is not available; the requirement is ignored"
    );
    assert!(map
        .render_warning(&r.warnings[0])
        .starts_with("warning: package `mine`"));
}

#[test]
fn provide_is_recorded() {
    let r = ok("provide(Foo, Bar) Idle -> Discard;");
    assert_eq!(r.provisions, ["Foo", "Bar"]);
    assert_eq!(
        error("provide Foo;").0,
        "expected `(` after `provide`, found `Foo`"
    );
}

/// A fresh directory for library files.
fn library_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bricks-config-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    dir
}

fn parse_file(path: &std::path::Path) -> (SourceMap, Result<Router, Vec<Diagnostic>>) {
    let mut map = SourceMap::new();
    let text = std::fs::read_to_string(path).unwrap();
    let result = parse(&mut map, Source::new(path.display().to_string(), text));
    (map, result)
}

#[test]
fn require_library_reads_classes_relative_to_the_requiring_file() {
    let dir = library_dir("lib-ok");
    std::fs::write(
        dir.join("lib/a.click"),
        "require(library b.click)\nelementclass A { input -> B(3) -> output }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("lib/b.click"),
        "elementclass B { $n | input -> Queue($n) -> output }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.click"),
        "require(library lib/a.click, library \"lib/a.click\")\nIdle -> a :: A -> Discard;\n",
    )
    .unwrap();
    let (map, result) = parse_file(&dir.join("main.click"));
    let r = result.unwrap_or_else(|e| panic!("{}", map.render_all(&e)));
    assert_eq!(names(&r), ["Idle@1", "a/B@1/Queue@1", "Discard@3"]);
    assert_eq!(r.elements[1].arg_texts(), ["3"]);
    // The element's spans point into the library.
    assert!(map
        .get(r.elements[1].class_span.file)
        .unwrap()
        .name
        .ends_with("b.click"));
    assert!(r.requirements.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn require_library_errors() {
    let dir = library_dir("lib-err");
    std::fs::write(dir.join("lib/x.click"), "require(library y.click)\n").unwrap();
    std::fs::write(dir.join("lib/y.click"), "require(library x.click)\n").unwrap();
    std::fs::write(dir.join("cycle.click"), "require(library lib/x.click)\n").unwrap();
    let (map, result) = parse_file(&dir.join("cycle.click"));
    let errors = result.unwrap_err();
    assert_eq!(errors.len(), 1, "{}", map.render_all(&errors));
    assert_eq!(errors[0].message, "library `x.click` requires itself");
    std::fs::write(dir.join("missing.click"), "require(library nope.click)\n").unwrap();
    let (_, result) = parse_file(&dir.join("missing.click"));
    assert_eq!(
        result.unwrap_err()[0].message,
        "library `nope.click` not found"
    );
    std::fs::write(
        dir.join("nested.click"),
        "elementclass A { require(library lib/x.click) input -> output }\n",
    )
    .unwrap();
    let (_, result) = parse_file(&dir.join("nested.click"));
    assert_eq!(
        result.unwrap_err()[0].message,
        "`require library` must be used at file scope"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn define_substitutes_in_arguments() {
    let r = ok("define($DEV eth0, $ADDR 18.26.4.1 /* me */, $QLEN 200)\n\
                FromDevice($DEV) -> Queue(${QLEN}) -> ToDevice($DEV);\n\
                Print(\"on $DEV\", '$DEV') -> Discard; IPGWOptions($ADDR);");
    assert_eq!(r.elements[0].arg_texts(), ["eth0"]);
    assert_eq!(r.elements[1].arg_texts(), ["200"]);
    assert_eq!(r.elements[3].arg_texts(), ["\"on eth0\"", "'$DEV'"]);
    assert_eq!(r.elements[5].arg_texts(), ["18.26.4.1"]);
}

#[test]
fn define_applies_to_the_whole_file_and_may_use_earlier_defines() {
    let r = ok("Queue($LEN) -> Discard; define($BASE 100, $LEN $BASE)");
    assert_eq!(r.elements[0].arg_texts(), ["100"]);
}

#[test]
fn outside_defines_override_the_file() {
    let mut map = SourceMap::new();
    let options = Options {
        defines: vec![("$DEV".into(), "eth1".into()), ("EXTRA".into(), "7".into())],
        ..Options::default()
    };
    let r = parse_with(
        &mut map,
        Source::from_string("define($DEV eth0); FromDevice($DEV, $EXTRA) -> Discard"),
        &options,
    )
    .unwrap();
    assert_eq!(r.elements[0].arg_texts(), ["eth1", "7"]);
}

#[test]
fn undefined_variables_are_passed_on_as_written() {
    // As Click: elements such as Script expand variables of their own.
    let r = ok("define($DEV eth0) FromDevice($DEV) -> Script(write $OUT, ${x-1});");
    assert_eq!(r.elements[0].arg_texts(), ["eth0"]);
    assert_eq!(r.elements[1].arg_texts(), ["write $OUT", "1"]);
}

#[test]
fn variable_defaults_and_words() {
    let r = ok("define($IFS eth0 eth1) Print(${IFS[1]}, ${IFS[0]-x}, ${NONE-$IFS});");
    assert_eq!(r.elements[0].arg_texts(), ["eth1", "eth0", "eth0 eth1"]);
    // The index may be a variable, as in Click (`${a[$n]}`).
    let r = ok(
        "define($IFS eth0 eth1 eth2, $N 2) Print(${IFS[$N]}, ${IFS[${N}]}, <${IFS[9]}>, ${IFS[$X]});",
    );
    assert_eq!(
        r.elements[0].arg_texts(),
        ["eth2", "eth2", "<>", "eth0 eth1 eth2"]
    );
}

#[test]
fn variable_defined_twice() {
    let (m, s) = error("define($A 1, $A 2)");
    assert_eq!(m, "variable `$A` defined twice");
    assert_eq!(s, "$A");
}

#[test]
fn malformed_define() {
    let (m, s) = error("define(A 1)");
    assert_eq!(m, "expected `$NAME value` in `define`");
    assert_eq!(s, "A 1");
}

// ---- compound elements ----

const NESTED: &str = "
elementclass Counted { $n |
  input -> c :: Counter -> Queue($n) -> output;
}
elementclass Path { $dev, BURST $b |
  input -> Counted(100) -> Unqueue(BURST $b) -> [0]output;
  input[1] -> [1]output;   // straight through
}
FromDevice(eth0) -> p :: Path(eth0, BURST 8) -> ToDevice(eth0);
Idle -> [1]p[1] -> Discard;
";

#[test]
fn compound_elements_expand_to_slash_names() {
    let r = ok(NESTED);
    assert_eq!(
        names(&r),
        [
            "FromDevice@1",
            "p/Counted@1/c",
            "p/Counted@1/Queue@2",
            "p/Unqueue@2",
            "ToDevice@3",
            "Idle@4",
            "Discard@5"
        ]
    );
    assert_eq!(
        conns(&r),
        [
            "p/Counted@1/c[0] -> [0]p/Counted@1/Queue@2",
            "p/Counted@1/Queue@2[0] -> [0]p/Unqueue@2",
            "p/Unqueue@2[0] -> [0]ToDevice@3",
            "FromDevice@1[0] -> [0]p/Counted@1/c",
            "Idle@4[0] -> [0]Discard@5",
        ]
    );
}

#[test]
fn compound_parameters_are_substituted() {
    let r = ok(NESTED);
    assert_eq!(
        r.element("p/Counted@1/Queue@2").unwrap().arg_texts(),
        ["100"]
    );
    assert_eq!(r.element("p/Unqueue@2").unwrap().arg_texts(), ["BURST 8"]);
}

#[test]
fn compound_spans_point_into_the_body_with_notes_at_the_use() {
    let r = ok(NESTED);
    let q = r.element("p/Counted@1/Queue@2").unwrap();
    assert_eq!(text_of(NESTED, q.class_span), "Queue");
    assert_eq!(text_of(NESTED, q.args[0].span), "$n");
    assert_eq!(q.expansion.len(), 2);
    assert_eq!(text_of(NESTED, q.expansion[0].0), "Counted");
    assert_eq!(
        q.expansion[0].1,
        "in `p/Counted@1`, an instance of element class `Counted`"
    );
    assert_eq!(text_of(NESTED, q.expansion[1].0), "p");
}

#[test]
fn compound_input_fans_out_and_output_fans_in() {
    let r = ok("
        elementclass Dup {
            input -> a :: Counter -> output;
            input -> b :: Counter -> [1]output;
            input[1] -> [1]output;
        }
        s1 :: Idle; s2 :: Idle;
        s1 -> d :: Dup; s2 -> d;
        d[0] -> x :: Discard; d[1] -> y :: Discard;
        s3 :: Idle -> [1]d;
    ");
    let mut got = conns(&r);
    got.sort();
    assert_eq!(
        got,
        [
            "d/a[0] -> [0]x",
            "d/b[0] -> [0]y",
            "s1[0] -> [0]d/a",
            "s1[0] -> [0]d/b",
            "s2[0] -> [0]d/a",
            "s2[0] -> [0]d/b",
            "s3[0] -> [0]y",
        ]
    );
}

#[test]
fn compounds_in_series_and_pass_through() {
    let r = ok("
        elementclass Wire { input -> output }
        elementclass Two { input -> Wire -> Wire -> output }
        Idle -> Two -> Wire -> Discard;
    ");
    assert_eq!(names(&r), ["Idle@1", "Discard@4"]);
    assert_eq!(conns(&r), ["Idle@1[0] -> [0]Discard@4"]);
}

#[test]
fn pass_through_loops_terminate() {
    let r = ok("elementclass Wire { input -> output } w :: Wire; w -> w; Idle -> w;");
    assert_eq!(names(&r), ["Idle@2"]);
    assert!(r.connections.is_empty());
}

#[test]
fn compound_classes_are_scoped_and_bound_where_used() {
    // Inside its own body, `Queue` is still the primitive; an inner class
    // is invisible outside.
    let r = ok("
        elementclass Queue { $n | elementclass In { input -> Counter -> output } input -> In -> Queue($n) -> output }
        Idle -> Queue(5) -> Discard; Idle -> In -> Discard;
    ");
    let classes: Vec<&str> = r.elements.iter().map(|e| e.class.as_str()).collect();
    assert_eq!(
        classes,
        ["Idle", "Counter", "Queue", "Discard", "Idle", "In", "Discard"]
    );
    assert_eq!(r.element("Queue@2/Queue@2").unwrap().arg_texts(), ["5"]);
}

#[test]
fn class_used_before_its_definition_is_a_primitive() {
    let r = ok("Idle -> Foo -> Discard; elementclass Foo { input -> Counter -> output }");
    assert_eq!(r.elements[1].class, "Foo");
}

#[test]
fn synonyms() {
    let r = ok("
        elementclass MyQueue Queue;
        elementclass C { input -> output }
        elementclass D C;
        Idle -> q :: MyQueue(10) -> D -> Discard;
    ");
    assert_eq!(names(&r), ["Idle@1", "q", "Discard@4"]);
    assert_eq!(r.elements[1].class, "Queue");
    assert_eq!(conns(&r), ["Idle@1[0] -> [0]q", "q[0] -> [0]Discard@4"]);
}

#[test]
fn compound_keyword_parameters_and_rest() {
    let r = ok("
        elementclass Src { $data, LIMIT $limit, __REST__ $rest |
            InfiniteSource($data, LIMIT $limit, $rest) -> output
        }
        Src(\\<00>, STOP true, LIMIT 5, BURST 2) -> Discard;
        Src(x) -> Discard;
    ");
    assert_eq!(
        r.elements[0].arg_texts(),
        ["\\<00>", "LIMIT 5", "STOP true", "BURST 2"]
    );
    assert_eq!(r.elements[2].arg_texts(), ["x", "LIMIT"]);
}

#[test]
fn compound_defines_and_outer_parameters() {
    let r = ok("
        define($G global)
        elementclass Outer { $x |
            define($y inner-$x)
            elementclass Inner { input -> Print($x $y $G) -> output }
            input -> Inner -> output
        }
        Idle -> Outer(1) -> Discard;
    ");
    assert_eq!(r.elements[1].name, "Outer@2/Inner@1/Print@1");
    assert_eq!(r.elements[1].arg_texts(), ["1 inner-1 global"]);
}

#[test]
fn compound_parameters_do_not_leak_into_other_classes() {
    let r = ok("
        elementclass A { input -> Print($x) -> output }
        elementclass B { $x | input -> A -> output }
        Idle -> B(1) -> Discard;
    ");
    assert_eq!(r.elements[1].arg_texts(), ["$x"]);
}

#[test]
fn compound_errors_are_reported_once_per_place() {
    let (map, result) = parse_str(
        "
        elementclass B { $x | input -> output }
        elementclass A { $a | input -> B(1, 2) -> output }
        Idle -> A(1) -> A(2) -> Discard;
    ",
    );
    let errors = result.unwrap_err();
    assert_eq!(errors.len(), 1);
    let rendered = map.render(&errors[0]);
    assert!(
        rendered.contains("too many arguments for element class `B`"),
        "{rendered}"
    );
}

#[test]
fn undefined_compound_input_port() {
    let all = errors(
        "
        elementclass A { input -> Counter -> output; input[2] -> Discard }
        x :: A; Idle -> [1]x -> Discard;
    ",
    );
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].0, "`x` has no input 1");
    assert_eq!(all[0].1, "Idle -> [1]x");
    assert_eq!(
        all[0].2.as_deref(),
        Some("element class `A` has inputs 0, 2; its body forwards an input port with `input[1] -> ...`")
    );
}

#[test]
fn undefined_compound_output_port() {
    let (m, s) = error("elementclass A { input -> Discard } Idle -> a :: A -> Discard;");
    assert_eq!(m, "`a` has no output 0");
    assert_eq!(s, "a :: A -> Discard");
}

#[test]
fn input_cannot_receive_and_output_cannot_send() {
    let all = errors("elementclass A { Idle -> input; output -> Discard }");
    assert_eq!(all.len(), 2);
    assert_eq!(
        (all[0].0.as_str(), all[0].1.as_str()),
        ("`input` cannot receive connections", "input")
    );
    assert_eq!(
        (all[1].0.as_str(), all[1].1.as_str()),
        ("`output` cannot send connections", "output")
    );
}

#[test]
fn input_and_output_are_reserved_in_compounds() {
    let (m, s) = error("elementclass A { input :: Idle; }");
    assert_eq!(m, "redeclaration of element `input`");
    assert_eq!(s, "input");
}

#[test]
fn input_outside_compound() {
    let (m, s) = error("input -> Discard;");
    assert_eq!(m, "`input` is only defined inside an element class body");
    assert_eq!(s, "input");
}

#[test]
fn wrong_number_of_compound_arguments() {
    let all = errors(
        "
        elementclass A { $a, $b, LIMIT $l | input -> Queue($a) -> output }
        Idle -> A(1) -> A(1, 2, 3) -> A(1, 2, LIMT 4) -> A(1, 2, LIMIT 1, LIMIT 2) -> Discard;
        elementclass B { input -> output } Idle -> B(1) -> Discard;
    ",
    );
    let messages: Vec<(&str, &str)> = all
        .iter()
        .map(|(m, s, _)| (m.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        messages,
        [
            ("missing arguments for element class `A`: `$b`", "1"),
            (
                "too many arguments for element class `A`, which takes 2 positional arguments",
                "3"
            ),
            (
                "too many arguments for element class `A`, which takes 2 positional arguments",
                "LIMT 4"
            ),
            ("keyword `LIMIT` given twice", "LIMIT 2"),
            (
                "too many arguments for element class `B`, which takes no positional arguments",
                "1"
            ),
        ]
    );
    assert_eq!(all[2].2.as_deref(), Some("did you mean keyword `LIMIT`?"));
}

#[test]
fn duplicate_parameter() {
    let (m, s) = error("elementclass A { $a, $a | input -> output }");
    assert_eq!(m, "parameter `$a` declared twice");
    assert_eq!(s, "$a");
}

#[test]
fn compound_class_name_is_not_an_element_name() {
    let (m, s) = error("elementclass A { input -> output } A :: Idle;");
    assert_eq!(m, "class `A` used as element name");
    assert_eq!(s, "A");
}

/// A word a compound used as a class stays a class for the rest of the
/// file, as in Click's lexers; an element named after its own class is
/// refused; an element declared inside a compound leaves the name free.
#[test]
fn a_word_used_as_a_class_is_no_element_name_later() {
    let (m, s) = error("elementclass Foo {\n A -> B;\n}\nA :: Idle;");
    assert_eq!(
        (m.as_str(), s.as_str()),
        ("class `A` used as element name", "A")
    );
    let text = "elementclass Foo {\n A :: A -> B;\n}\nA :: Idle;";
    let all = errors(text);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all
        .iter()
        .all(|(m, s, _)| m == "class `A` used as element name" && s == "A"));
    ok("elementclass Foo {\n A :: AA -> B;\n}\nA :: Idle -> Discard;");
    ok("a -> b; a :: Idle; b :: Discard;");
}

#[test]
fn expanded_name_clash() {
    let (m, s) = error("elementclass A { input -> x :: Counter -> output } c/x :: Idle; Idle -> c :: A -> Discard;");
    assert_eq!(m, "two elements are named `c/x`");
    assert_eq!(s, "x");
}

#[test]
fn unterminated_compound_body() {
    let (m, s) = error("elementclass A { input -> output");
    assert_eq!(m, "unterminated element class body");
    assert_eq!(s, "{");
}

#[test]
fn anonymous_compounds_in_a_chain_are_named_like_click() {
    let r = ok("Idle -> { input -> Counter -> output } -> Discard;");
    assert_eq!(names(&r), ["Idle@1", "@2/Counter@1", "Discard@3"]);
    let mut c = conns(&r);
    c.sort();
    assert_eq!(
        c,
        [
            "@2/Counter@1[0] -> [0]Discard@3",
            "Idle@1[0] -> [0]@2/Counter@1"
        ]
    );
}

#[test]
fn anonymous_compounds_take_arguments_and_declare() {
    let r = ok("c :: { $n | input -> Queue($n) -> output }(5); Idle -> c -> Discard;");
    assert_eq!(names(&r), ["c/Queue@1", "Idle@2", "Discard@3"]);
    assert_eq!(r.elements[0].arg_texts(), ["5"]);
    let r = ok("Idle -> { $n | input -> Queue($n) -> output }(7) -> Discard;");
    assert_eq!(r.elements[1].name, "@2/Queue@1");
    assert_eq!(r.elements[1].arg_texts(), ["7"]);
}

#[test]
fn anonymous_compound_errors_name_the_class_by_its_braces() {
    let (m, s) = error("Idle -> { input -> output }(1) -> Discard;");
    assert_eq!(
        m,
        "too many arguments for element class `{ ... }`, which takes no positional arguments"
    );
    assert_eq!(s, "1");
}

#[test]
fn overloads_are_chosen_by_arguments_and_ports() {
    let text = "
        elementclass A { input -> Counter -> output
                      || $x | input -> Queue($x) -> output
                      || input -> Tee -> output; input[1] -> Discard }
        Idle -> a1 :: A -> Discard;
        Idle -> a2 :: A(9) -> Discard;
        Idle -> a3 :: A -> Discard; Idle -> [1]a3;
    ";
    let r = ok(text);
    let n = names(&r);
    assert!(n.contains(&"a1/Counter@1"), "{n:?}");
    assert!(n.contains(&"a2/Queue@1"), "{n:?}");
    assert!(
        n.contains(&"a3/Tee@1") && n.contains(&"a3/Discard@2"),
        "{n:?}"
    );
    assert_eq!(r.element("a2/Queue@1").unwrap().arg_texts(), ["9"]);
}

#[test]
fn overload_ellipsis_falls_back_to_the_earlier_class() {
    let r = ok("
        elementclass Queue { $a, $b | input -> Queue($a) -> Queue($b) -> output || ... }
        Idle -> q1 :: Queue(1, 2) -> Discard;
        Idle -> q2 :: Queue(3) -> Discard;
    ");
    let q2 = r.element("q2").unwrap();
    assert_eq!((q2.class.as_str(), q2.arg_texts()), ("Queue", vec!["3"]));
    assert!(r.element("q1/Queue@1").is_some());
}

#[test]
fn overload_errors() {
    let all = errors(
        "elementclass A { input -> output || $x | input -> output } Idle -> A(1, 2) -> Discard;",
    );
    assert_eq!(
        all[0].0,
        "no match for `A` with 2 arguments, 1 input and 1 output"
    );
    assert_eq!(all[0].1, "A");
    let text =
        "elementclass A { input -> output || $x | input -> output } Idle -> A(1, 2) -> Discard;";
    let (_, result) = parse_str(text);
    let d = &result.unwrap_err()[0];
    let notes: Vec<(&str, &str)> = d
        .notes
        .iter()
        .map(|(s, n)| (&text[s.start..s.end], n.as_str()))
        .collect();
    assert_eq!(
        notes,
        [
            ("{", "candidate: 0 parameters, 1 input and 1 output"),
            ("||", "candidate: 1 parameter, 1 input and 1 output")
        ]
    );
    assert_eq!(
        error("elementclass A { ... }").0,
        "`...` should occur last, after one or more compounds"
    );
    assert_eq!(
        error("Idle -> { input -> output || ... } -> Discard;").0,
        "cannot extend unknown element class"
    );
}

#[test]
fn exponential_expansion_is_capped() {
    let mut text = String::from("elementclass C0 { input -> Counter -> output }\n");
    for i in 1..30 {
        text.push_str(&format!(
            "elementclass C{i} {{ input -> C{p} -> C{p} -> output }}\n",
            p = i - 1
        ));
    }
    text.push_str("Idle -> C29 -> Discard;\n");
    let mut map = SourceMap::new();
    let options = Options {
        limits: Limits {
            max_elements: 10_000,
            ..Limits::default()
        },
        ..Options::default()
    };
    let errors = parse_with(&mut map, Source::from_string(text), &options).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].message,
        "configuration expands to more than 10000 elements"
    );
}

#[test]
fn deep_nesting_is_capped() {
    let mut text = String::from("elementclass C0 { input -> Counter -> output }\n");
    for i in 1..80 {
        text.push_str(&format!(
            "elementclass C{i} {{ input -> C{p} -> output }}\n",
            p = i - 1
        ));
    }
    text.push_str("Idle -> C79 -> Discard;\n");
    let (m, _) = error(&text);
    assert_eq!(m, "compound elements nested more than 64 deep");
}

#[test]
fn deep_class_definitions_are_capped() {
    let text = "elementclass A {".repeat(100);
    let (m, _) = error(&text);
    assert_eq!(m, "element classes nested more than 64 deep");
}

#[test]
fn argument_text_growth_is_capped() {
    let mut text = String::from("elementclass C0 { $x | input -> Print($x) -> output }\n");
    for i in 1..40 {
        text.push_str(&format!(
            "elementclass C{i} {{ $x | input -> C{p}($x$x) -> output }}\n",
            p = i - 1
        ));
    }
    text.push_str("Idle -> C39(ab) -> Discard;\n");
    let mut map = SourceMap::new();
    let options = Options {
        limits: Limits {
            max_config_bytes: 1 << 20,
            ..Limits::default()
        },
        ..Options::default()
    };
    let errors = parse_with(&mut map, Source::from_string(text), &options).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].message,
        "configuration expands to more than 1048576 bytes of argument text"
    );
}

// ---- syntax errors ----

#[test]
fn unterminated_comment() {
    let (m, s) = error("Idle -> /* Discard;");
    assert_eq!((m.as_str(), s.as_str()), ("unterminated comment", "/*"));
}

#[test]
fn unterminated_string() {
    let (m, s) = error("Idle -> Print(\"hi) -> Discard;");
    assert_eq!((m.as_str(), s.as_str()), ("unterminated string", "\""));
}

#[test]
fn unterminated_argument_list() {
    let (m, s) = error("Idle -> Queue(10 -> Discard;");
    assert_eq!(
        (m.as_str(), s.as_str()),
        ("unterminated argument list", "(")
    );
}

#[test]
fn unterminated_data_literal() {
    let (m, s) = error("InfiniteSource(\\<00 11");
    assert_eq!(
        (m.as_str(), s.as_str()),
        ("unterminated data literal `\\<...>`", "\\<")
    );
}

#[test]
fn unterminated_argument_list_explains_a_hidden_parenthesis() {
    let text = "InfiniteSource(\\<00 11) -> Discard;";
    let (_, result) = parse_str(text);
    let d = &result.unwrap_err()[0];
    assert_eq!(d.message, "unterminated argument list");
    assert_eq!(text_of(text, d.notes[0].0), "\\<00 11) ->");
    assert_eq!(
        d.notes[0].1,
        "a `)` inside this data literal, which ends only at `>`, does not close the argument list"
    );
    let text = "Print(don't) -> Discard;";
    let (_, result) = parse_str(text);
    let d = &result.unwrap_err()[0];
    assert_eq!(d.message, "unterminated string");
    assert_eq!(text_of(text, d.span), "'");
}

#[test]
fn arrow_with_nothing_after() {
    let (m, s) = error("Idle -> ;");
    assert_eq!(
        (m.as_str(), s.as_str()),
        ("expected an element after `->`, found `;`", "->")
    );
    let (m, _) = error("Idle ->");
    assert_eq!(m, "expected an element after `->`, found end of file");
}

#[test]
fn redeclaration_notes_the_first_declaration() {
    let text = "q :: Queue;\nq :: Queue(5);";
    let (map, result) = parse_str(text);
    let errors = result.unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].message, "redeclaration of element `q`");
    assert_eq!(errors[0].span, Span::new(0, 12, 13));
    assert_eq!(
        errors[0].notes,
        vec![(
            Span::new(0, 0, 1),
            "element `q` previously declared here".to_string()
        )]
    );
    assert_eq!(
        map.render(&errors[0]),
        "error: redeclaration of element `q`\n --> test.click:2:1\n  |\n2 | q :: Queue(5);\n  | ^\n  \
         = note: element `q` previously declared here\n --> test.click:1:1\n  |\n1 | q :: Queue;\n  | ^\n"
    );
}

#[test]
fn useless_ports_at_the_ends_of_a_chain() {
    let all = errors("[1]a :: Idle -> b :: Discard [2];");
    assert_eq!(all[0].0, "input ports ignored at start of chain");
    assert_eq!(all[0].1, "[1]");
    assert_eq!(all[1].0, "output ports ignored at end of chain");
    assert_eq!(all[1].1, "[2]");
}

#[test]
fn port_lists_pair_up_with_double_arrows() {
    let r = ok("a :: Tee(2); b :: Null2; a [0, 1] => [1, 0] b;");
    assert_eq!(conns(&r), ["a[0] -> [1]b", "a[1] -> [0]b"]);
    // One port on one side meets every port of the other.
    let r = ok("a :: Tee(2); b :: Discard; a [0, 1] -> b;");
    assert_eq!(conns(&r), ["a[0] -> [0]b", "a[1] -> [0]b"]);
    let r = ok("a :: Idle; b :: X; a -> [0, 1] b;");
    assert_eq!(conns(&r), ["a[0] -> [0]b", "a[0] -> [1]b"]);
}

#[test]
fn expandable_port_lists_and_double_arrow_defaults() {
    // `[]` is 0, 1, ... as many as the other side needs.
    let r = ok("a :: Tee(3); b :: X; a [0, 1, 2] => [] b;");
    assert_eq!(conns(&r), ["a[0] -> [0]b", "a[1] -> [1]b", "a[2] -> [2]b"]);
    let r = ok("a :: Tee(3); b :: X; a [0, 1] => [3,] b;");
    assert_eq!(conns(&r), ["a[0] -> [3]b", "a[1] -> [4]b"]);
    // With `=>`, a side without ports is expandable.
    let r = ok("a :: Tee(2); b :: X; a [0, 1] => b;");
    assert_eq!(conns(&r), ["a[0] -> [0]b", "a[1] -> [1]b"]);
}

#[test]
fn element_lists_in_connections() {
    let r = ok("a, b :: Idle; c, d :: Discard; a, b => c, d; a -> c, d;");
    assert_eq!(conns(&r), ["a[0] -> [0]c", "b[0] -> [0]d", "a[0] -> [0]d"]);
    let r = ok("x :: Idle; Idle, x -> Discard;");
    assert_eq!(
        conns(&r),
        ["Idle@2[0] -> [0]Discard@3", "x[0] -> [0]Discard@3"]
    );
    let r = ok("s :: Idle; s -> [0] a :: Null, [0] b :: Null => [0, 1] m :: X;");
    assert_eq!(
        conns(&r),
        [
            "s[0] -> [0]a",
            "s[0] -> [0]b",
            "a[0] -> [0]m",
            "b[0] -> [1]m"
        ]
    );
}

#[test]
fn element_groups_pass_connections_through() {
    let r = ok("a :: Tee(2); a => ( input[0] -> x :: Counter -> [0]output; input[1] -> y :: Counter -> [1]output ) => b :: Null2;");
    assert_eq!(names(&r), ["a", "x", "y", "b"]);
    let mut c = conns(&r);
    c.sort();
    assert_eq!(
        c,
        [
            "a[0] -> [0]x",
            "a[1] -> [0]y",
            "x[0] -> [0]b",
            "y[0] -> [1]b"
        ]
    );
}

#[test]
fn groups_count_as_three_elements_in_anonymous_names() {
    let r = ok("Idle -> ( input -> Counter -> output ) -> Discard;");
    assert_eq!(names(&r), ["Idle@1", "Counter@5", "Discard@6"]);
    let mut c = conns(&r);
    c.sort();
    assert_eq!(
        c,
        ["Counter@5[0] -> [0]Discard@6", "Idle@1[0] -> [0]Counter@5"]
    );
}

#[test]
fn implicit_input_and_output_inside_groups_and_compounds() {
    let r = ok("Idle -> ( -> c :: Counter -> ) -> Discard;");
    let mut c = conns(&r);
    c.sort();
    assert_eq!(c, ["Idle@1[0] -> [0]c", "c[0] -> [0]Discard@6"]);
    let r = ok("elementclass A { -> Counter -> } Idle -> A -> Discard;");
    assert_eq!(names(&r), ["Idle@1", "A@2/Counter@1", "Discard@3"]);
    assert_eq!(r.connections.len(), 2);
    assert_eq!(
        error("Idle -> ( input -> Counter -> output -> Discard;").0,
        "unterminated element group"
    );
}

#[test]
fn hostile_nesting_and_port_lists_are_bounded() {
    let deep_groups = format!("Idle -> {} Discard;", "(".repeat(10_000));
    let all = errors(&deep_groups);
    assert!(all[0].0.contains("nested more than"), "{all:?}");
    let deep_anonymous = format!("Idle -> {} -> Discard;", "{".repeat(10_000));
    let all = errors(&deep_anonymous);
    assert!(all[0].0.contains("nested more than"), "{all:?}");
    let ports: Vec<String> = (0..2000).map(|p| p.to_string()).collect();
    let text = format!("a :: X; b :: Y; a [{}] => [] b;", ports.join(","));
    assert_eq!(ok(&text).connections.len(), 2000);
    let many = format!(
        "elementclass A {{ {} }} Idle -> A -> Discard;",
        vec!["input -> output"; 2000].join(" || ")
    );
    assert!(errors(&many)[0].0.contains("overloads"));
}

/// Click's test/tools/lexer-05.clicktest: element groups at file level.
#[test]
fn clicks_top_level_group_test() {
    let expected = ["a[0] -> [0]c", "a[1] -> [0]b", "a[2] -> [0]d"];
    for text in [
        "a, b, c, d :: Idle; a [0,1,2] => c, b, d;",
        "a, b, c, d :: Idle; a [0,1,2] => ( -> c ), ( -> b ), d;",
        "a, d :: Idle; a => (-> c :: Idle), (-> b :: Idle), d;",
    ] {
        let r = ok(text);
        let mut c = conns(&r);
        c.sort();
        assert_eq!(c, expected, "{text}");
    }
    let r = ok("
        analyzer, x1, x2 :: Idle;
        x1 -> analyzer -> x2;
        c :: Idle =>
                 [1] analyzer [1],
                 (-> c2 :: Idle => (->), Paint(1) ->)
        -> post_classification :: Idle;
    ");
    let mut c = conns(&r);
    c.sort();
    let p = &r.elements.iter().find(|e| e.class == "Paint").unwrap().name;
    let mut expected = vec![
        "analyzer[0] -> [0]x2".to_string(),
        "analyzer[1] -> [0]post_classification".to_string(),
        "c[0] -> [1]analyzer".to_string(),
        "c[1] -> [0]c2".to_string(),
        "c2[0] -> [0]post_classification".to_string(),
        format!("c2[1] -> [0]{p}"),
        format!("{p}[0] -> [0]post_classification"),
        "x1[0] -> [0]analyzer".to_string(),
    ];
    expected.sort();
    assert_eq!(c, expected);
}

/// Click's test/tools/lexer-06.clicktest: element groups.
#[test]
fn clicks_element_group_test() {
    let expected = [
        "foo/a[0] -> [0]foo/c",
        "foo/a[1] -> [0]foo/b",
        "foo/a[2] -> [0]foo/d",
    ];
    for text in [
        "elementclass Foo { a, b, c, d :: Idle; a [0,1,2] => c, b, d; } foo::Foo;",
        "elementclass Foo { a, b, c, d :: Idle; a [0,1,2] => ( -> c ), ( -> b ), d; } foo::Foo;",
        "elementclass Foo { a, d :: Idle; a => (-> c :: Idle), (-> b :: Idle), d; } foo::Foo;",
    ] {
        let r = ok(text);
        let mut c = conns(&r);
        c.sort();
        assert_eq!(c, expected, "{text}");
    }
    let r = ok("
        analyzer, x1, x2 :: Idle;
        x1 -> analyzer -> x2;
        c :: Idle =>
                 [1] analyzer [1],
                 foo :: { -> c2 :: Idle => (->), Paint(1) -> }
        -> post_classification :: Idle;
    ");
    let mut c = conns(&r);
    c.sort();
    let paint = r.elements.iter().find(|e| e.class == "Paint").unwrap();
    assert!(paint.name.starts_with("foo/Paint@"), "{}", paint.name);
    let p = &paint.name;
    let mut expected = vec![
        "analyzer[0] -> [0]x2".to_string(),
        "analyzer[1] -> [0]post_classification".to_string(),
        "c[0] -> [1]analyzer".to_string(),
        "c[1] -> [0]foo/c2".to_string(),
        "foo/c2[0] -> [0]post_classification".to_string(),
        format!("foo/c2[1] -> [0]{p}"),
        format!("{p}[0] -> [0]post_classification"),
        "x1[0] -> [0]analyzer".to_string(),
    ];
    expected.sort();
    assert_eq!(c, expected);
}

#[test]
fn connection_tunnels_pass_connections_through() {
    let r = ok("connectiontunnel in -> out, i2 -> o2; Idle -> in; Idle -> [1]in; out[1] -> Discard; out -> Print -> Discard;");
    assert_eq!(
        names(&r),
        ["Idle@5", "Idle@6", "Discard@7", "Print@8", "Discard@9"]
    );
    let mut c = conns(&r);
    c.sort();
    assert_eq!(
        c,
        [
            "Idle@5[0] -> [0]Print@8",
            "Idle@6[0] -> [0]Discard@7",
            "Print@8[0] -> [0]Discard@9"
        ]
    );
    assert_eq!(
        error("a :: Idle; connectiontunnel a -> b;").0,
        "redeclaration of element `a`"
    );
}

#[test]
fn arguments_on_an_element_reference() {
    assert_eq!(
        error("q :: Queue; Idle -> q(5) -> Discard;"),
        (
            "configuration string ignored on element reference".to_string(),
            "(5)".to_string()
        )
    );
}

#[test]
fn connection_mismatches_use_clicks_wording() {
    assert_eq!(
        error("a :: Tee(2); b :: X; a [0, 1] -> [0, 1] b;").0,
        "syntax error: many-to-many connections require `=>`"
    );
    assert_eq!(
        error("a :: Tee(3); b :: X; a [0, 1, 2] => [0, 1] b;").0,
        "connection mismatch: 3 outputs connected to 2 inputs"
    );
    assert_eq!(
        error("a :: Tee(3); b :: X; a [0, 1] => [0, 1, 2,] b;").0,
        "connection mismatch: 2 outputs connected to 3 or more inputs"
    );
    assert_eq!(
        error("a :: Tee(3); b :: X; a [0, 1, 2,] => [0, 1] b;").0,
        "connection mismatch: 3 or more outputs connected to 2 inputs"
    );
    assert_eq!(
        error("a :: Tee(3); b :: X; a [0,] => [0,] b;").0,
        "at most one expandable port allowed per connection"
    );
}

#[test]
fn bad_ports() {
    assert_eq!(
        error("a :: Idle; a[x] -> Discard;"),
        ("expected a port number, found `x`".into(), "x".into())
    );
    assert_eq!(
        error("a :: Idle; a[,] -> Discard;"),
        ("expected a port number, found `,`".into(), ",".into())
    );
    assert_eq!(
        error("a :: Tee; a[99999999999999999999999] -> Discard;").0,
        "port number `99999999999999999999999` is too large"
    );
    assert_eq!(
        error("a :: Tee; a[1 -> Discard;"),
        ("expected `,` or `]`, found `->`".into(), "->".into())
    );
}

#[test]
fn all_digit_names() {
    assert_eq!(
        error("12 :: Idle;"),
        (
            "element name `12` has an all-digit component".into(),
            "12".into()
        )
    );
    assert_eq!(
        error("a/0 :: Idle;").0,
        "element name `a/0` has an all-digit component"
    );
    assert_eq!(
        error("Idle -> 3;"),
        ("expected an element, found number `3`".into(), "3".into())
    );
}

#[test]
fn misplaced_punctuation() {
    assert_eq!(
        error("Idle -> a, ;"),
        (
            "expected an element after `,`, found `;`".into(),
            ",".into()
        )
    );
    assert_eq!(
        error("Idle :: Discard :: X;"),
        ("unexpected `::` in a connection".into(), "::".into())
    );
    assert_eq!(
        error("a :: ;"),
        (
            "expected an element class after `::`, found `;`".into(),
            ";".into()
        )
    );
    assert_eq!(
        error(") Idle -> Discard;"),
        ("syntax error near `)`".into(), ")".into())
    );
    assert_eq!(
        error("elementclass ;"),
        (
            "expected an element class name after `elementclass`, found `;`".into(),
            ";".into()
        )
    );
    assert_eq!(
        error("require Idle;"),
        (
            "expected `(` after `require`, found `Idle`".into(),
            "Idle".into()
        )
    );
    assert_eq!(
        error("connectiontunnel a b;").0,
        "expected `->` in `connectiontunnel`, found `b`"
    );
}

#[test]
fn hash_in_the_middle_of_a_line() {
    let all = errors("Idle -> Discard; # not a comment\n");
    assert_eq!(all[0].0, "syntax error near `#`");
    assert!(all[0].2.as_deref().unwrap().contains("first column"));
}

#[test]
fn several_errors_are_collected() {
    let all = errors("a :: Idle;\na :: Idle;\nIdle -> ;\nb :: Tee; b[x] -> Discard;\nc :: Queue(");
    let messages: Vec<&str> = all.iter().map(|(m, _, _)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            "redeclaration of element `a`",
            "expected an element after `->`, found `;`",
            "expected a port number, found `x`",
            "unterminated argument list",
        ]
    );
}

#[test]
fn non_ascii_text() {
    let (m, s) = error("Idle → Discard;");
    assert_eq!(
        (m.as_str(), s.as_str()),
        ("expected `->`, `=>` or `;`, found `→`", "→")
    );
    let r = ok("Print(\"héllo\") -> Discard; // ünïcode");
    assert_eq!(unquote(&r.elements[0].args[0].text).unwrap(), "héllo");
}

#[test]
fn rendered_errors_underline_the_right_column() {
    let text = "a :: Idle;\n\tIdle -> Queue(1\n";
    let (map, result) = parse_str(text);
    let errors = result.unwrap_err();
    assert_eq!(
        map.render(&errors[0]),
        "error: unterminated argument list\n --> test.click:2:15\n  |\n2 | \tIdle -> Queue(1\n  | \t             ^\n  \
         = help: this `(` has no matching `)`\n"
    );
}

/// The arguments of `Foo(LIST)` as each piece of the list reads alone:
/// its text processed (trimmed, comments removed) and its span.
fn pieces_read_alone(text: &str, list: &str) -> Vec<(String, usize, usize)> {
    // The list starts after `Foo(`: searched for itself, a list such
    // as `x` was found in the element's name.
    let base = text.find("Foo(").unwrap() + "Foo(".len();
    let pieces = args::split_top(list);
    let n = pieces.len();
    let mut out = Vec::new();
    for (k, (a, b)) in pieces.into_iter().enumerate() {
        let p = args::process(&list[a..b], None);
        if k + 1 == n && p.text.is_empty() {
            continue;
        }
        let (s, e) = p.content.map_or((a, a), |(cs, ce)| (a + cs, a + ce));
        out.push((p.text, base + s, base + e));
    }
    out
}

proptest::proptest! {
    /// Arguments of a plain list (shared slices of the element's argument
    /// text) read exactly as each piece processed alone, spans included;
    /// so do those of a list with a comment (copied one by one).
    #[test]
    fn arguments_read_as_their_pieces_processed_alone(
        list in "[a-z0-9 .,\t]{0,30}(/8)?[a-z0-9 .,\t]{0,10}",
        comment in proptest::bool::ANY,
    ) {
        let list = if comment { format!("{list} /* c */ 1") } else { list };
        let text = format!("x :: Foo({list});");
        let r = ok(&text);
        let got: Vec<(String, usize, usize)> = r.elements[0]
            .args
            .iter()
            .map(|a| (a.text.to_string(), a.span.start, a.span.end))
            .collect();
        proptest::prop_assert_eq!(got, pieces_read_alone(&text, &list));
    }
}

#[test]
fn a_list_that_repeats_the_element_name_reads_at_its_own_place() {
    let text = "x :: Foo(x);";
    let r = ok(text);
    let a = &r.elements[0].args[0];
    assert_eq!((&*a.text, a.span.start, a.span.end), ("x", 9, 10));
    assert_eq!(pieces_read_alone(text, "x"), [("x".to_string(), 9, 10)]);
}

#[test]
fn plain_arguments_share_the_element_text() {
    let r = ok("x :: Foo( 1.0.0.0/8 1 ,\n 2.0.0.0/8 2, );");
    let a = &r.elements[0].args;
    assert_eq!(a.len(), 2);
    assert_eq!(a[0].text, "1.0.0.0/8 1");
    assert_eq!(a[1].text, "2.0.0.0/8 2");
    assert!(a[0].text.shares_with(&a[1].text));
    assert_eq!(&*r.elements[0].config, "1.0.0.0/8 1 ,\n 2.0.0.0/8 2,");
    // With a comment, each argument is its own text.
    let r = ok("x :: Foo(1 /* one */, 2);");
    let a = &r.elements[0].args;
    assert_eq!((a[0].text.as_str(), a[1].text.as_str()), ("1", "2"));
    assert!(!a[0].text.shares_with(&a[1].text));
}
