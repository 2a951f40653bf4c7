//! `Message`: gives a message when it is configured, as Click's
//! `elements/standard/messageelement.cc`; the front end prints it (`click`
//! as Click: under `While configuring 'NAME :: Message':`).

use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `Message` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Message",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "prints a message on configuration",
    synopsis: "Message(MESSAGE [, TYPE])",
    description: "Documents a configuration: MESSAGE is printed on standard error when the \
        configuration is checked (once, not once per worker), as is, or after `warning: ` for \
        TYPE WARNING; `click` prints it as Click does, after a line naming the element and \
        its place. TYPE ERROR makes the configuration fail with MESSAGE as its error, so \
        `bricks check` reports it too.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "MESSAGE",
            ty: "string",
            default: None,
            doc: "the text; positional",
        },
        Keyword {
            name: "TYPE",
            ty: "MESSAGE, WARNING or ERROR",
            default: Some("MESSAGE"),
            doc: "how it is reported; positional",
        },
    ],
    counters: &[],
    example: "Message(\"This configuration only generates one packet.\"); \
        InfiniteSource(LIMIT 1) -> Discard;",
    see_also: &["Script"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let message: String = args.read_mp("MESSAGE")?;
    let kind: String = args.read_p("TYPE")?.unwrap_or_else(|| "MESSAGE".into());
    let line = match kind.as_str() {
        "MESSAGE" => message,
        "WARNING" => format!("warning: {message}"),
        "ERROR" => return Err(ArgError::new(message)),
        _ => {
            return Err(ArgError::new(format!(
                "unrecognized message type `{kind}` (MESSAGE, WARNING or ERROR)"
            )))
        }
    };
    Ok(Box::new(Message { line }))
}

/// Gives its message.
#[derive(Debug)]
pub struct Message {
    line: String,
}

impl Element for Message {
    fn configure_message(&self) -> Option<String> {
        Some(self.line.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    #[test]
    fn types() {
        let ports = PortInfo::default();
        assert!(make_element(&CLASS, "\"hello there\"", &ports).is_ok());
        assert!(make_element(&CLASS, "HELLO THERE", &ports).is_ok());
        assert!(make_element(&CLASS, "careful, WARNING", &ports).is_ok());
        let e = make_element(&CLASS, "\"no way\", ERROR", &ports).unwrap_err();
        assert!(e.contains("no way"), "{e}");
        assert!(make_element(&CLASS, "x, SHOUT", &ports).is_err());
        let m = make_element(&CLASS, "careful, WARNING", &ports).unwrap();
        assert_eq!(m.configure_message().as_deref(), Some("warning: careful"));
        assert!(make_element(&CLASS, "", &ports).is_err());
    }
}
