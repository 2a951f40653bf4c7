//! The table of Click's element classes in docs/click-compatibility.md
//! says which of them bricks has; this test keeps it true. After adding
//! an element, regenerate it with
//! `BRICKS_BLESS=1 cargo test -p bricks-elements --test click_table`.

use bricks_runtime::CLICK_CLASSES;

const BEGIN: &str =
    "<!-- click-classes: begin (generated; see crates/elements/tests/click_table.rs) -->";
const END: &str = "<!-- click-classes: end -->";

fn table() -> String {
    let registry = bricks_elements::registry();
    let have = CLICK_CLASSES
        .iter()
        .filter(|c| registry.get(c).is_some())
        .count();
    let mut s = format!(
        "{BEGIN}\n\nbricks has {have} of Click's {} element classes (every `class_name()` \
         in kohler/click's elements/ and include/click/standard/, all packages, including \
         the kernel, ns, grid and wireless ones). `bricks elements CLASS` prints each one's \
         manual; where a class differs from Click's on purpose, the sections above say how.\n\n\
         | Click class | in bricks |\n|---|---|\n",
        CLICK_CLASSES.len()
    );
    for c in CLICK_CLASSES {
        let status = if registry.get(c).is_some() {
            "yes"
        } else {
            "no"
        };
        s.push_str(&format!("| `{c}` | {status} |\n"));
    }
    s.push('\n');
    s.push_str(END);
    s
}

#[test]
fn the_table_of_click_classes_is_current() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/click-compatibility.md"
    );
    let doc = std::fs::read_to_string(path).expect("reading docs/click-compatibility.md");
    let want = table();
    let current = match (doc.find(BEGIN), doc.find(END)) {
        (Some(a), Some(b)) if a < b => &doc[a..b + END.len()],
        _ => "",
    };
    if current == want {
        return;
    }
    if std::env::var_os("BRICKS_BLESS").is_some() {
        let new = if current.is_empty() {
            format!(
                "{}\n\n## Click's element classes in bricks\n\n{want}\n",
                doc.trim_end()
            )
        } else {
            doc.replacen(current, &want, 1)
        };
        std::fs::write(path, new).expect("writing docs/click-compatibility.md");
        return;
    }
    panic!(
        "docs/click-compatibility.md: the table of Click's classes is out of date; \
         regenerate it with BRICKS_BLESS=1 cargo test -p bricks-elements --test click_table"
    );
}
